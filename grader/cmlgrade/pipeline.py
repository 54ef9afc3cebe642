"""Batch orchestration: build the reference once, build every submission in
its own tree over a pool of CPU workers, run each built lab on one of the GPU
workers (one per visible GPU, pinned with CUDA_VISIBLE_DEVICES), then score.
A student's problem never stops the run; a problem of the grader (no cmake,
the reference does not build) raises GraderError.

The stages, a module each: intake (intake.py), builds and object checks
(building.py), the reference's runs (refruns.py), each lab's runs: tests,
kit-only checks (labrun.py), sanitizers, counters, timing (labmeasure.py), scoring
(score.py), reports (report.py); what they share is stagebase.py, the
progress lines progress.py. This module prepares the batch, hands each
stage its work and gathers the results."""
from __future__ import annotations

import os
import queue
import random
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from . import gpuhold
from . import run as R
from .building import BuildStage
from .cache import ResultCache, gpu_names
from .intake import Submission
from .kitslots import SlotPool
from .labmeasure import MeasureStage
from .labrun import LabStage
from .labs import Lab
from .progress import Progress
from .refruns import RefStage
from .refstore import RefStore, tool_stamp
from .reftime import RefTimes
from .results import LabRun, LabScore, StudentResult
from .sandbox import Executor, Sandbox, become_subreaper, detect_sandbox, run_process
from .score import r2, score_lab
from .skeleton import Skeletons, make_skeletons
from .stagebase import CPU_PATH, NO_REFERENCE, PUBLIC_SEED, STUDENT_EDITION, GraderError, Options, _Job, cuda_arch
from .trust import harness_target


class Pipeline(BuildStage, RefStage, LabStage, MeasureStage):
    def __init__(self, opts: Options, labs: list[Lab], runner=run_process):
        self.opts, self.labs, self.runner = opts, labs, runner
        self.trusted = Executor(Sandbox(None, ""), runner)
        self.sandbox: Sandbox | None = None
        self.gpus: list[str | None] = []
        self.gpu_ok = False
        self.cpu_path = False
        self.no_gpu_reason = ""
        self.per_gpu, self.per_gpu_note = 1, ""   # submissions at once on each GPU (Options.per_gpu, auto resolved)
        self.refs: dict[tuple, LabRun] = {}
        self.ref_lock = threading.Lock()
        self.ref_once: dict[tuple, threading.Lock] = {}   # one reference run per lab and GPU model, however many workers
        self.ref_store: RefStore | None = None   # the reference's runs kept in a shared reference build (refstore.py)
        self._tmp = None
        self.skeletons = Skeletons()
        self.notes: list[str] = []   # about the whole run (once, not per item)
        self.on_lab_done = None      # called with each lab run as it is graded (bench: what a cut-short run keeps)
        self.progress = Progress(opts.progress, 0)   # one for the run: its notes and the students' stages
        self.say = self.progress.note

    # ------------------------------------------------------------ setup
    def prepare(self) -> None:
        for tool in ("cmake",):
            if not shutil.which(tool):
                raise GraderError(f"{tool} is not on the PATH: the grader builds every submission with it")
        if self.opts.work:
            self.work = self.opts.work.resolve()
            self.work.mkdir(parents=True, exist_ok=True)
        else:
            self._tmp = tempfile.mkdtemp(prefix="cmlgrade-")
            self.work = Path(self._tmp)
        self.jobs = self.opts.jobs or os.cpu_count() or 2
        self.cpu_path = self.opts.cpu_path
        if self.cpu_path is None:   # auto: no GPU listed here and a kit that has the CPU path
            self.cpu_path = not R.list_gpus() and "KIT_CPU" in (self.opts.kit / "CMakeLists.txt").read_text(
                encoding="utf-8", errors="replace")
        for lab in self.labs:   # no GPU here: the labs run on the CPU path (common/cpu)
            lab.cpu = self.cpu_path
        self.opts.arch = cuda_arch(self.opts.arch, R.list_gpus())
        self._build_reference()
        with_ref = [lab for lab in self.labs if lab.solution_dir]   # a student edition's labs/ is its only copy
        if with_ref:
            self.say("making the pristine skeletons from the reference solutions (labtool skeleton)")
        self.skeletons = make_skeletons(self.trusted, self._labtool(), self.opts.kit.resolve(), with_ref,
                                        self.work / "reference" / "skeletons")
        self.notes += self.skeletons.notes
        no_ref = [lab.name for lab in self.labs if not lab.solution_dir]
        if no_ref:
            self.notes.insert(0, STUDENT_EDITION if len(no_ref) == len(self.labs)
                              else f"no reference solution for {', '.join(no_ref)}: {NO_REFERENCE}")
        self.say("probing for a GPU")
        ref_runner = self.probe_runner
        gpus = R.list_gpus()
        self.gpus = gpus or [None]
        if self.cpu_path:   # the GPU checks (sanitizers, counters, timing) are not measured on the CPU path
            self.gpu_ok, self.no_gpu_reason = False, self.no_gpu_reason or CPU_PATH
        elif ref_runner is not None:
            ok, why = R.probe_gpu(ref_runner, self.gpus[0])
            if not ok and why.startswith(R.GPU_FAILED):
                # a GPU that is there but fails (full of other work, a broken driver) is not "no GPU": grading on
                # the CPU path instead would give other verdicts without a word
                raise GraderError(f"{why}; free the GPU (or choose another with CUDA_VISIBLE_DEVICES) and grade "
                                  f"again")
            self.gpu_ok, self.no_gpu_reason = ok, ("" if ok else why)
        if self.gpu_ok:
            self.per_gpu, self.per_gpu_note = ((self.opts.per_gpu, "") if self.opts.per_gpu > 0
                                               else gpuhold.auto_per_gpu([g for g in self.gpus if g is not None]))
        hide = [self.opts.kit.resolve(), self.work] + [h.resolve() for h in self.opts.hide]
        if not self.ref_build.is_relative_to(self.work):   # a shared reference build holds the solutions' objects
            hide.append(self.ref_build)
        probe = [str(ref_runner), "--probe"] if self.gpu_ok and ref_runner else None
        for lab in self.labs:  # the kit-only checker's harness: the CPU path's where there is no GPU
            lab.harness = harness_target(lab, not self.gpu_ok and self._kit_cpu()) or ""
            if self.cpu_path and self._kit_cuda():
                # nvcc is here: the CUDA kernels too, for their SASS (trust.lab_objects reads the object
                # library's objects). The object library alone: the CUDA harness or runner around it only
                # added the kit's CUDA objects to the pristine build and a device link to every lab's (lab
                # 08's pristine slot on 2 cores: 12 s of its 33 s of compiles were the CUDA harness and cml)
                lab.extra_targets = (lab.kernels_library(),)
        self.sandbox = detect_sandbox(hide, self.opts.sandbox, probe)
        become_subreaper()   # detached leftovers of student processes come back to the grader, which kills them
        if not self.sandbox.active and self.opts.sandbox:
            if self.opts.require_isolation:
                raise GraderError(f"{self.sandbox.note}: the grader does not run student code without isolation "
                                  f"(install bubblewrap; or pass --unsafe-no-sandbox, named in every report)")
            self.sandbox.note = (f"not isolated ({self.sandbox.note.removeprefix('no isolation: ')}): "
                                 f"a student's own check, no secret seed")
        self.student_exe = Executor(self.sandbox, self.runner)
        self.cache = None
        if self.opts.cache is not None:
            self.cache = ResultCache.for_run(self.opts.cache, self.opts.kit.resolve(), [PUBLIC_SEED, self.opts.secret_seed],
                                             [gpu_names(), str(self.gpu_ok), self.no_gpu_reason, self.sandbox.note,
                                              self.opts.arch, self.opts.public_tests])
        self.cached: dict[tuple[str, str], tuple] = {}
        if self.opts.reference_build is not None:
            self.ref_store = RefStore.for_run(self.ref_build, self.opts.kit.resolve(),
                                              [PUBLIC_SEED, self.opts.secret_seed],
                                              [gpu_names("name,driver_version"), tool_stamp("ncu"), str(self.gpu_ok),
                                               str(self.cpu_path), self.no_gpu_reason, self.opts.arch])
        self.ref_times = None if self.opts.retime_reference else RefTimes()   # reftime.py
        # the timed cases' data, changed words and sampled places: public, never the secret seed, new each batch
        self.timing_seed = random.SystemRandom().getrandbits(63)
        self.slots = None
        if not self.opts.fresh_trees:   # the pristine kit, built once per build worker (kitslots.py)
            skel = {lab.name: {f: self.skeletons.get(lab.name, f) or (self.opts.kit / lab.dir / f).read_bytes()
                               for f in lab.files} for lab in self.labs}
            self.slots = SlotPool(max(1, self.jobs // 2), self.work, self.opts.kit.resolve(), skel,
                                  [t for lab in self.labs for t in lab.student_targets()], self.opts.arch, self.jobs,
                                  max((lab.rubric.lab.build_timeout_s for lab in self.labs), default=900), self.say)
        self.progress.idle()   # prepared: nothing of the run's own is running until grade()

    def cleanup(self) -> None:
        self.progress.close()
        if self._tmp and not self.opts.keep_work:
            shutil.rmtree(self._tmp, ignore_errors=True)

    # ------------------------------------------------------------ everything
    def grade(self, subs: list[Submission]) -> tuple[list[StudentResult], list[str]]:
        """Returns the results (sorted by student) and grader errors."""
        self.graded_from = time.monotonic()   # a lab run's "began" and "ended" seconds count from here
        if self.cache is not None:
            self.cached = self.cache.lookup(subs, self.labs, self.say)
        total = sum(1 for s in subs for lab in self.labs if lab.name in s.files) - len(self.cached)
        progress = self.progress
        progress.start(total)
        q: queue.Queue = queue.Queue()
        errors: list[str] = []
        per_gpu = self.per_gpu if self.gpu_ok else 1
        workers = [threading.Thread(target=self._gpu_worker, args=(g, q, progress, errors), daemon=True)
                   for g in self.gpus for _ in range(per_gpu)]
        for w in workers:
            w.start()
        jobs: dict[str, list[_Job]] = {s.student: [] for s in subs}

        def ready(j: _Job) -> None:   # a lab built and checked: to the GPU workers at once (building.py)
            jobs[j.sub.student].append(j)
            if j.run.build_problem.startswith("grader error"):
                errors.append(f"{j.sub.student} {j.lab.name}: {j.run.build_problem[:200]}")
            progress.queued(j.sub.student, j.lab.name, "waiting for a GPU" if self.gpu_ok else "waiting their turn")
            q.put(j)

        build_workers = max(1, self.jobs // 2)
        with ThreadPoolExecutor(max_workers=build_workers) as pool:
            futs = {pool.submit(self._build_submission, s, progress, ready): s for s in subs}
            for fut in as_completed(futs):
                s = futs[fut]
                try:
                    fut.result()
                except Exception as e:   # the labs handed on before it stay graded
                    errors.append(f"{s.student}: grader error while building: {type(e).__name__}: {e}")
        for _ in workers:
            q.put(None)
        for w in workers:
            w.join()
        results = []
        for s in sorted(subs, key=lambda x: x.student):
            results.append(self._score(s, {j.lab.name: j for j in jobs.get(s.student, [])}))
        progress.idle()
        return results, errors

    def _lab_score(self, job: _Job) -> LabScore:
        ref = job.ref or self.refs.get(self._ref_key(job.lab, job.gpu_key)) or self.reference(job.lab, job.gpu_key)
        job.run.machine_note = "" if self.gpu_ok else (self.no_gpu_reason or "no CUDA device")
        return score_lab(job.lab, job.run, ref)

    def _remember(self, job: _Job) -> None:
        """Into the cache as soon as the lab is graded (a task killed later
        keeps it), unless a grader error cut it short."""
        if self.cache is None or job.run.build_problem.startswith("grader error"):
            return
        self.cache.put(job.sub.student, job.lab, job.sub.files[job.lab.name], self._lab_score(job),
                       {k: round(v, 1) for k, v in job.run.seconds.items()})

    def _score(self, sub: Submission, jobs: dict[str, _Job]) -> StudentResult:
        labs: list[LabScore] = []
        timings = {}
        for lab in self.labs:
            job = jobs.get(lab.name)
            machine = "" if self.gpu_ok else (self.no_gpu_reason or "no CUDA device")
            hit = self.cached.get((sub.student, lab.name))
            if hit is not None:   # graded before from the same bytes, kit, rubric and seed
                labs.append(hit[0])
                timings[lab.name] = dict(hit[1], cached=1.0)
                continue
            if job is None:
                # the reference's run even when nobody else submitted the lab: a
                # student's maximum never depends on the others (shards agree)
                ref = next((r for (n, _), r in sorted(self.refs.items(), key=lambda kv: str(kv[0]))
                            if n == lab.name), None) or self.reference(lab, self.gpus[0] if self.gpus else None)
                missing = LabRun(lab.name, submitted=False, machine_note=machine)
                self._sanitizers_not_run(lab, missing, "not submitted")   # the maximum of those who did
                labs.append(score_lab(lab, missing, ref))
                continue
            labs.append(self._lab_score(job))
            timings[lab.name] = {k: round(v, 1) for k, v in job.run.seconds.items()}
        pts = r2(sum(ls.points for ls in labs))
        mx = r2(sum(ls.max_points for ls in labs))
        return StudentResult(sub.student, sub.source, labs, list(sub.problems), list(sub.ignored), pts, mx,
                             self.sandbox.note if self.sandbox else "", "secret" if self.opts.secret_seed is not None
                             else "public", sub.on_roster, sub.missing, timings,
                             "" if self.gpu_ok else (self.no_gpu_reason or "no CUDA device"))

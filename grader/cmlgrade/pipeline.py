"""Batch orchestration: build the reference once, build every submission in
its own tree over a pool of CPU workers, run each built lab on one of the GPU
workers (one per visible GPU, pinned with CUDA_VISIBLE_DEVICES), then score.
A student's problem never stops the run; a problem of the grader (no cmake,
the reference does not build) raises GraderError."""
from __future__ import annotations

import hashlib
import os
import queue
import random
import re
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from . import gpuhold, gpushare
from . import run as R
from .build import build_tree, clock, cpu_path_instead, shared_lock
from .cache import ResultCache, gpu_names
from .kitslots import SlotPool
from .checker import CHECKERS, counters_report
from .reftime import RefTimes, perf_lab
from .buildtree import TreeError, make_student_tree
from .intake import Submission
from .labs import Lab, LabError, kit_description, manifests
from .parsers import TestOutcome
from .results import BinaryRun, LabRun, LabScore, PerfResult, StudentResult
from .sandbox import Executor, Sandbox, become_subreaper, detect_sandbox, run_process
from .score import r2, score_lab
from .skeleton import Skeletons, make_skeletons, not_started
from .static import run_sass_checks, run_static
from .trust import check_lab, harness_target, reference_traces, run_kit_checks, scrub_outcomes, student_seed

NO_GPU_ARCH = "90"   # the CUDA build's architecture where no GPU is listed (--cuda-arch overrides)
HARNESS_REPEATS = 20   # timed launches per harness run (after harness.h's warm-up)

CPU_PATH = ("the CPU path (no GPU here): the tests, the kit-only checks and the CPU path's bounds and race checks "
            "ran on the CPU; compute-sanitizer, Nsight Compute counters and timings need a GPU")
PUBLIC_SEED = 20261122  # the kit's default (common/include/cml/cml_rng.h)
# A kit without solutions/ (tools/release's student edition): what needs the
# reference solution is not measured, and the run says so once.
NO_REFERENCE = "no reference solution in this student edition (the instructor's grading compares with it)"
STUDENT_EDITION = ("self-check of a student edition (no solutions/): the tests that count are those the kit's "
                   "test programs list; what needs the reference solution (timing against it) is not measured "
                   "here, and with labs/ the only copy of the skeletons no file is called untouched; the "
                   "instructor's grading compares with the reference")


class GraderError(Exception):
    pass


@dataclass
class Options:
    kit: Path
    work: Path | None = None
    keep_work: bool = False
    secret_seed: int | None = None
    jobs: int = 0
    sandbox: bool = True            # False: --unsafe-no-sandbox (named in every report)
    require_isolation: bool = True  # refuse to run student code without it (a student's own check may)
    cpu_path: bool | None = None    # grade on the CPU path (common/cpu); None: when no GPU is listed
    arch: str = ""
    hide: list[Path] = field(default_factory=list)   # also hidden from student code (inputs, override, outputs)
    progress: bool = False
    fresh_trees: bool = False   # each submission in its own configured tree (the old way) instead of the prebuilt kit
    cache: Path | None = None   # the content-hash cache of graded labs (cache.py); None: none
    retime_reference: bool = False   # time the reference beside every submission (the old way), not once per batch
    reference_build: Path | None = None   # a reference build folder shared by several runs (built under a lock)
    per_gpu: int = 1   # submissions graded at once on each GPU (their untimed phases share it; gpushare.py)


def cuda_arch(given: str, gpus: list[str]) -> str:
    """The CUDA build's architectures: those given (--cuda-arch); else the
    GPU grading here ("": the kit's CMake finds it); else NO_GPU_ARCH, one
    architecture with every feature the labs' students may use (sm_80's
    __reduce_add_sync ...): never the kit's portable list, whose sm_75 would
    fail honest code ("does not compile"), and never a CUDAARCHS the shell
    happens to hold (sandbox.ENV_KEEP leaves it out)."""
    return given or ("" if gpus else NO_GPU_ARCH)


def parse_seed(text: str) -> int:
    t = text.strip()
    try:
        v = int(t, 16) if t.lower().startswith("0x") else int(t, 10)
    except ValueError as e:
        raise GraderError(f"the secret seed '{text}' is not a number (decimal or 0x hex)") from e
    if not 0 <= v < 2**64:
        raise GraderError("the secret seed must be between 0 and 2^64-1")
    return v


def safe_name(student: str) -> str:
    """A folder name for a student id: distinct ids give distinct names
    ("a b" and "a_b"; ids that differ past 80 characters), and an id that
    needs no change keeps it."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", student)[:80].lstrip(".") or "student"
    if name != student:
        name += "-" + hashlib.sha256(student.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return name


def criterion_list(text: str) -> dict[str, TestOutcome]:
    """suite::test -> PASSED (SKIPPED for a disabled test) from a Criterion
    binary's --list: "suite: N tests" lines, then one line per test after a
    tree glyph ("├── ", "└── ", or "|-- ", "`-- " with --ascii)."""
    out: dict[str, TestOutcome] = {}
    suite = None
    for line in text.splitlines():
        m = re.fullmatch(r"(\S+): \d+ tests?", line.strip())
        if m:
            suite = m.group(1)
            continue
        m = re.fullmatch(r"(?:├── |└── |\|-- |`-- )(\S+)( \(skipped\))?", line.strip())
        if m and suite:
            o = TestOutcome(suite, m.group(1), "SKIPPED" if m.group(2) else "PASSED")
            out[o.key] = o
    return out


def _skipped_as_run(ref: LabRun, run: LabRun) -> None:
    """Without a reference run, a listed test that skipped itself here (no
    usable GPU) is what the reference's would have been: skipped, so it is
    not measured, not failed."""
    for kind, binaries in ref.tests.items():
        for b, br in binaries.items():
            mine = run.tests.get(kind, {}).get(b)
            for key, o in list(br.outcomes.items()):
                got = mine.outcomes.get(key) if mine else None
                if got is not None and got.status == "SKIPPED":
                    br.outcomes[key] = TestOutcome(o.suite, o.name, "SKIPPED", list(got.messages))


class Progress:
    """The progress lines on stderr: one a stage, and where no line came for
    HEARTBEAT_S seconds (a long build, a lab's tests on the CPU path, the
    hidden-seed reference runs) a line saying what is still running and for
    how long, so that a run is never silent for long, on a terminal or not."""

    HEARTBEAT_S = 10.0

    def __init__(self, enabled: bool, total: int):
        self.enabled, self.total, self.done = enabled, total, 0
        self.lock = threading.Lock()
        self.running: dict[str, tuple[str, float]] = {}   # who -> (what, since)
        self.last = time.monotonic()
        self._stop = threading.Event()
        if enabled:
            threading.Thread(target=self._beat, daemon=True).start()

    def _print(self, line: str) -> None:   # under self.lock
        print(line, file=sys.stderr, flush=True)
        self.last = time.monotonic()

    def _beat(self) -> None:
        while not self._stop.wait(1.0):
            with self.lock:
                now = time.monotonic()
                if now - self.last < self.HEARTBEAT_S or not self.running:
                    continue
                what = "; ".join(f"{who}: {w} ({now - t0:.0f} s)" for who, (w, t0) in list(self.running.items())[:4])
                more = f" and {len(self.running) - 4} more" if len(self.running) > 4 else ""
                self._print(f"[{self.done}/{self.total}] still running: {what}{more}")

    def start(self, total: int) -> None:
        with self.lock:
            self.total, self.done = total, 0

    def idle(self) -> None:
        """Nothing runs now (the outputs are written next): no heartbeat."""
        with self.lock:
            self.running.clear()

    def close(self) -> None:
        self._stop.set()

    def note(self, what: str) -> None:
        """A stage of the run itself (the reference build), not a student's."""
        with self.lock:
            self.running["grader"] = (what, time.monotonic())
            if self.enabled:
                self._print(f"[grader] {what}")

    def say(self, student: str, lab: str, what: str, finished: bool = False) -> None:
        with self.lock:
            self.running.pop("grader", None)
            who = f"{student} {lab}"
            if finished:
                self.done += 1
                self.running.pop(who, None)
            else:
                self.running[who] = (what, time.monotonic())
            if self.enabled:
                self._print(f"[{self.done}/{self.total}] {student} {lab}: {what}")


def _shares(lab: Lab) -> bool:
    """The lab's shared steps are compared with the reference's (a
    [technique] min_share): its reference harness is built and traced."""
    return bool(lab.rubric.technique.shared_steps and lab.rubric.technique.min_share)


# What the CPU path's headers say where a file uses what cannot run on the CPU (common/cpu/include)
CPU_CANNOT_RUN = re.compile(r"cml-cpu: (the CPU path cannot run [^\"\n]*)")


def _note_build(run: LabRun, tb) -> None:
    """Which targets built, and the compiler's messages (each once). A CPU
    path target that failed because the CPU path cannot run the file (its
    headers say so) marks the lab cpu_unsupported: it is graded on a GPU."""
    run.build_ok = {t: b.ok for t, b in tb.targets.items()}
    for b in tb.targets.values():
        for e in b.errors:
            if e not in run.build_errors:
                run.build_errors.append(e)
        m = CPU_CANNOT_RUN.search("\n".join(b.errors) + "\n" + b.log_tail) if not b.ok else None
        if m and b.target.endswith("_cpu") and not run.cpu_unsupported:
            run.cpu_unsupported = m.group(1).strip()


class _Phases:
    """Seconds of each stage of a lab's run (tests, sanitizers, counters,
    timing) into run.seconds, for --timings and the benchmark."""

    def __init__(self, run: LabRun):
        self.run, self.t = run, clock()

    def done(self, name: str) -> None:
        now = clock()
        self.run.seconds[name] = self.run.seconds.get(name, 0.0) + now - self.t
        self.t = now


@dataclass
class _Job:
    sub: Submission
    lab: Lab
    run: LabRun
    build_dir: Path
    tree: Path
    gpu_key: str | None = None
    ref: LabRun | None = None   # what the job was scored against (reference() or, without solutions, _listed())


class Pipeline:
    def __init__(self, opts: Options, labs: list[Lab], runner=run_process):
        self.opts, self.labs, self.runner = opts, labs, runner
        self.trusted = Executor(Sandbox(None, ""), runner)
        self.sandbox: Sandbox | None = None
        self.gpus: list[str | None] = []
        self.gpu_ok = False
        self.cpu_path = False
        self.no_gpu_reason = ""
        self.refs: dict[tuple, LabRun] = {}
        self.ref_lock = threading.Lock()
        self.ref_once: dict[tuple, threading.Lock] = {}   # one reference run per lab and GPU, however many workers
        self._tmp = None
        self.skeletons = Skeletons()
        self.notes: list[str] = []   # about the whole run (once, not per item)
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
        hide = [self.opts.kit.resolve(), self.work] + [h.resolve() for h in self.opts.hide]
        if not self.ref_build.is_relative_to(self.work):   # a shared reference build holds the solutions' objects
            hide.append(self.ref_build)
        probe = [str(ref_runner), "--probe"] if self.gpu_ok and ref_runner else None
        for lab in self.labs:  # the kit-only checker's harness: the CPU path's where there is no GPU
            lab.harness = harness_target(lab, not self.gpu_ok and self._kit_cpu()) or ""
            if self.cpu_path and self._kit_cuda():   # nvcc is here: the CUDA kernels too, for their SASS
                lab.extra_targets = (f"{lab.stem}_harness",) if lab.harness else (f"{lab.stem}_run",)
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
                                              self.opts.arch])
        self.cached: dict[tuple[str, str], tuple] = {}
        self.ref_times = None if self.opts.retime_reference else RefTimes()   # reftime.py
        # the timed cases' data, changed words and sampled places: public, never the secret seed, new each batch
        self.timing_seed = random.SystemRandom().getrandbits(63)
        self.slots = None
        if not self.opts.fresh_trees:   # the pristine kit, built once per build worker (kitslots.py)
            skel = {lab.name: {f: self.skeletons.get(lab.name, f) or (self.opts.kit / lab.dir / f).read_bytes()
                               for f in lab.files} for lab in self.labs}
            self.slots = SlotPool(max(1, self.jobs // 2), self.work, self.opts.kit.resolve(), skel,
                                  [t for lab in self.labs for t in lab.student_targets()], self.opts.arch,
                                  max(1, min(4, self.jobs // 2)),
                                  max((lab.rubric.lab.build_timeout_s for lab in self.labs), default=900), self.say)
        self.progress.idle()   # prepared: nothing of the run's own is running until grade()

    def cleanup(self) -> None:
        self.progress.close()
        if self._tmp and not self.opts.keep_work:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def _labtool(self) -> Path | None:
        p = self.ref_build / "tools" / "labtool" / "labtool"
        return p if p.is_file() else None

    def _build_reference(self) -> None:
        shared = self.opts.reference_build.resolve() if self.opts.reference_build else None
        self.ref_build = shared or self.work / "reference" / "build"
        self.probe_runner: Path | None = None
        with_ref = [lab for lab in self.labs if lab.solution_dir]
        if self.labs and not with_ref:
            self._build_probe()
            return
        timeout = max(lab.rubric.lab.build_timeout_s for lab in self.labs) * 2 if self.labs else 900
        if self.opts.cpu_path is None and not self.cpu_path:   # GPUs listed: no CUDA compiler, the CPU path
            with shared_lock(shared):
                self.no_gpu_reason = cpu_path_instead(self.trusted, self.opts.kit.resolve(), self.ref_build,
                                                      self.opts.arch, timeout)
            self.cpu_path = bool(self.no_gpu_reason)
            for lab in self.labs:
                lab.cpu = self.cpu_path
        self.probe_runner = self.ref_build / with_ref[0].ref_targets()[-1] if with_ref else None
        targets = [t for lab in with_ref for t in lab.ref_targets()]
        if not self.cpu_path:   # the reference's harness times the reference where the checker times a step
            targets += [f"{lab.stem}_harness_ref" for lab in with_ref
                        if lab.name in CHECKERS and (self._timed_steps(lab) or lab.counter_checks
                                                     or _shares(lab))]
        else:   # and traces its shared steps, which the student's are compared with (trust._technique)
            targets += [f"{lab.stem}_harness_ref_cpu" for lab in with_ref if lab.name in CHECKERS and _shares(lab)]
        if any(lab.solution_dir for lab in self.labs):
            targets.append("labtool")   # makes the pristine skeletons from the solutions
        self.say(f"building the reference solutions ({len(targets)} targets: {', '.join(targets)}); "
                 f"this takes a minute or two the first time")
        self.say("configuring the kit (cmake)")
        with shared_lock(shared):   # a Slurm array's tasks: the first builds it, the others find it built
            tb = build_tree(self.trusted, self.opts.kit.resolve(), self.ref_build, targets, arch=self.opts.arch,
                            jobs=self.jobs, timeout=timeout, writable=[],
                            on_target=lambda i, t: self.say(f"reference: building {t} ({i}/{len(targets)})"))
        if not tb.configured:
            raise GraderError("the kit does not configure (cmake):\n" + tb.configure_log[-3000:])
        bad = [t for t, b in tb.targets.items() if not b.ok]
        if bad:
            msgs = "\n".join(tb.targets[bad[0]].errors[:20])
            raise GraderError(f"the reference solution does not build ({', '.join(bad)}):\n{msgs}")
        self._check_description()
        self.say(f"reference built in {tb.seconds:.0f} s")

    @staticmethod
    def _timed_steps(lab: Lab) -> list[int]:
        """The [performance] steps the kit-only harness times (checker.py)."""
        chk = CHECKERS.get(lab.name)
        return [s for s in lab.rubric.performance.steps
                if chk is not None and chk.timing_case(s, 1, 0) is not None]

    @staticmethod
    def _counted_by_harness(lab: Lab) -> bool:
        """Counters from the grader's ncu run on the kit-only harness (not
        from the student-linked runner's --counters lines)."""
        return bool(lab.harness) and not lab.cpu and lab.name in CHECKERS and all(c.metric for c in lab.counter_checks)

    def _timed_case(self, lab: Lab, step: int):
        """The harness-timed case of a step, None where the runner times it."""
        if not lab.harness or lab.cpu or not lab.solution_dir or step not in self._timed_steps(lab):
            return None
        # a seed of its own for each step: steps timed in one harness run never get the same data
        seed = int.from_bytes(hashlib.sha256(f"{self.timing_seed}|{step}".encode()).digest()[:8], "little") >> 1
        return CHECKERS[lab.name].timing_case(step, HARNESS_REPEATS, seed)

    def _build_probe(self) -> None:
        """A student edition (no solutions/) has no reference to build: only
        a runner of the kit as it is, to ask whether a GPU is usable here. A
        runner that does not build (the student's own file, in a self-check)
        is no problem of the kit: the next lab's is tried; if none builds,
        the GPU checks read not measured."""
        self.say("student edition (no solutions/): no reference solution to build; "
                 "building a runner of the kit to probe for a GPU")
        configured = False
        for lab in self.labs:
            tb = build_tree(self.trusted, self.opts.kit.resolve(), self.ref_build, [lab.runner], arch=self.opts.arch,
                            jobs=self.jobs, timeout=lab.rubric.lab.build_timeout_s, writable=[], configured=configured)
            if not tb.configured:
                raise GraderError("the kit does not configure (cmake):\n" + tb.configure_log[-3000:])
            configured = True
            if tb.ok(lab.runner):
                self.probe_runner = self.ref_build / lab.runner
                break
        else:
            self.no_gpu_reason = "no runner of the kit builds here to probe for a GPU"
        self._check_description()

    def _check_description(self) -> None:
        """The build's <build>/kit/labs.json, when it writes one, must describe
        the labs as the grader read them from the manifests."""
        if not (self.ref_build / "kit" / "labs.json").is_file():
            return
        try:
            built = {d.get("name"): d for d in kit_description(self.opts.kit.resolve(), self.ref_build)}
        except LabError as e:
            raise GraderError(str(e)) from e
        for d in manifests(self.opts.kit.resolve()):
            if d["name"] not in {lab.name for lab in self.labs}:
                continue
            b = built.get(d["name"])
            diff = sorted(k for k in set(d) | set(b or {}) if (b or {}).get(k) != d.get(k))
            if diff:
                raise GraderError(f"{d['name']}: the build's kit/labs.json and labs/{d['name']}/lab.json differ "
                                  f"({', '.join(diff)}): rebuild the kit")

    # ------------------------------------------------------------ builds (CPU)
    def _build_submission(self, sub: Submission, progress: Progress) -> list[_Job]:
        labs = [lab for lab in self.labs if lab.name in sub.files and (sub.student, lab.name) not in self.cached]
        if not labs:
            return []
        tree = self.work / "students" / safe_name(sub.student)
        files = {lab.name: dict(sub.files[lab.name]) for lab in labs}
        runs = {lab.name: LabRun(lab.name) for lab in labs}
        for lab in labs:
            graded = {}
            for f in lab.files:
                data = files[lab.name].get(f)
                skeleton = self.skeletons.get(lab.name, f)
                if skeleton is None:
                    skeleton = (self.opts.kit / lab.dir / f).read_bytes()
                if data is not None and not lab.solution_dir:
                    pass   # a student edition: its labs/ is the only copy of the skeleton, nothing to compare with
                elif data is None or data == skeleton:
                    runs[lab.name].untouched.append(f)
                else:
                    runs[lab.name].not_started += sorted(not_started(skeleton.decode("utf-8", "replace"),
                                                                     data.decode("utf-8", "replace")))
                data = skeleton if data is None else data
                files[lab.name][f] = data
                graded[f] = data.decode("utf-8", "replace")
            runs[lab.name].static = run_static(lab.rubric.static, graded)
        if self.slots is not None:
            return self._checked(self._build_in_slot(sub, labs, files, runs, tree, progress))
        try:
            src = make_student_tree(self.opts.kit, tree, files)
        except (TreeError, OSError) as e:
            for r in runs.values():
                r.build_problem = f"grader error: cannot make the build tree ({e})"
            return [_Job(sub, lab, runs[lab.name], tree / "build", tree) for lab in labs]
        build_dir = tree / "build"
        configured = False
        jobs_each = max(1, min(4, self.jobs // 2))
        for lab in labs:
            progress.say(sub.student, lab.name, "building")
            t0 = clock()
            tb = build_tree(self.student_exe, src, build_dir, lab.student_targets(), arch=self.opts.arch,
                            jobs=jobs_each, timeout=lab.rubric.lab.build_timeout_s, writable=[tree],
                            configured=configured)
            run = runs[lab.name]
            run.seconds["build"] = clock() - t0
            if not tb.configured:
                run.build_problem = "grader error: the build tree does not configure: " + tb.configure_log[-500:]
                continue
            configured = True
            _note_build(run, tb)
        return self._checked([_Job(sub, lab, runs[lab.name], build_dir, tree) for lab in labs])

    def _kit_cuda(self) -> bool:
        cache = self.ref_build / "CMakeCache.txt"
        text = cache.read_text(encoding="utf-8", errors="replace") if cache.is_file() else ""
        # check_language(CUDA) leaves CMAKE_CUDA_COMPILER=NOTFOUND in the cache where no nvcc is found
        m = re.search(r"^CMAKE_CUDA_COMPILER:\w+=(\S+)", text, re.M)
        return m is not None and not m.group(1).endswith("NOTFOUND")

    def _kit_cpu(self) -> bool:
        cache = self.ref_build / "CMakeCache.txt"
        return cache.is_file() and "KIT_CPU:BOOL=ON" in cache.read_text(encoding="utf-8", errors="replace")

    def _checked(self, jobs: list[_Job]) -> list[_Job]:
        """The object checks (docs/grading.md §8) before any student code
        runs: a refused object, or one the grader cannot find, is not run."""
        for j in jobs:
            if not any(j.run.build_ok.values()):
                continue
            rep = j.run.objects = check_lab(j.lab, j.build_dir, self.opts.kit.resolve())
            j.run.static += run_sass_checks(j.lab.rubric.static, rep.sass, rep.sass_note)
            if rep.refused:
                j.run.refused = list(rep.refused)
            elif not rep.checked:
                j.run.refused = [f"the grader could not check the compiled code ({rep.note})"]
        return jobs

    def _build_in_slot(self, sub: Submission, labs: list[Lab], files, runs, tree: Path,
                       progress: Progress) -> list[_Job]:
        """The same targets built in a slot of the prebuilt kit; the binaries
        land in tree/build as a fresh tree's would."""
        slot = self.slots.acquire()
        try:
            if not self.slots.prepare(self.student_exe, slot):
                for r in runs.values():
                    r.build_problem = "grader error: " + slot.problem
                return [_Job(sub, lab, runs[lab.name], tree / "build", tree) for lab in labs]
            for lab in labs:
                progress.say(sub.student, lab.name, "building")
                t0 = clock()
                tb = self.slots.build_lab(self.student_exe, slot, lab.name, files[lab.name], lab.student_targets(),
                                          tree, lab.rubric.lab.build_timeout_s)
                runs[lab.name].seconds["build"] = clock() - t0
                _note_build(runs[lab.name], tb)
        finally:
            self.slots.release(slot)
        return [_Job(sub, lab, runs[lab.name], tree / "build", tree) for lab in labs]


    # ------------------------------------------------------------ reference runs (per GPU, cached)
    def _seeds(self) -> list[tuple[str, int | None]]:
        seeds = [("public", None)]
        if self.opts.secret_seed is not None:
            seeds.append(("hidden", self.opts.secret_seed))
        return seeds

    def reference(self, lab: Lab, gpu: str | None) -> LabRun:
        if not lab.solution_dir:   # a student edition: nothing to run (_listed stands in)
            return LabRun(lab.name, gpu=gpu or "")
        key = (lab.name, gpu)
        with self.ref_lock:
            if key in self.refs:
                return self.refs[key]
            once = self.ref_once.setdefault(key, threading.Lock())
        with once:   # workers sharing a GPU (--per-gpu): the first runs the reference there, the others wait
            with self.ref_lock:
                if key in self.refs:
                    return self.refs[key]
            return self._run_reference(lab, gpu, key)

    def _run_reference(self, lab: Lab, gpu: str | None, key: tuple) -> LabRun:
        ref = LabRun(lab.name, gpu=gpu or "")
        env = self._gpu_env(gpu)
        out = self.work / "reference" / "results" / f"{lab.name}-gpu{gpu}"
        for kind, seed in self._seeds():
            ref.tests[kind] = {}
            self.say(f"reference: {lab.name}'s tests on the {kind} data{'' if gpu is None else ' (GPU ' + gpu + ')'}")
            for b in lab.test_binaries():
                br = R.run_tests(self.trusted, self.ref_build / lab.ref_name(b), out, kind,
                                 seed if seed is not None else None, lab.rubric.lab.time_limit_s, env, [])
                ref.tests[kind][b] = br
        if lab.harness and (self.gpu_ok or lab.cpu) and _shares(lab):   # what a student's shared steps must reach
            cpu = lab.harness.endswith("_cpu")
            harness = self.ref_build / (f"{lab.stem}_harness_ref" + ("_cpu" if cpu else ""))
            ref.traces = reference_traces(self.trusted, lab, harness, PUBLIC_SEED, out,
                                          lab.rubric.tests.step_time_limit_s, env, cpu)
        if self.gpu_ok and lab.counter_checks and self._counted_by_harness(lab):
            ref.counters = counters_report(self.trusted, self.ref_build / f"{lab.stem}_harness_ref", lab,
                                           [c.step for c in lab.counter_checks], PUBLIC_SEED, out,
                                           lab.rubric.counters.timeout_s, env, [], "reference")
        elif self.gpu_ok and lab.counter_checks:
            ref.counters = R.run_counters(self.trusted, self.ref_build / lab.ref_targets()[-1],
                                          [c.step for c in lab.counter_checks],
                                          lab.rubric.counters.timeout_s, out, env, [])
        with self.ref_lock:
            self.refs[key] = ref
        return ref

    def _gpu_env(self, gpu: str | None) -> dict[str, str]:
        """What a process run on `gpu` gets: the GPU, and where several
        workers share it (--per-gpu), the share of its memory the kit's test
        binaries size their parallel tests by (criterion_main.c: the GPU's
        memory over CML_GPU_SLOTS, 4 GiB a test)."""
        if gpu is None:
            return {}
        env = {"CUDA_VISIBLE_DEVICES": gpu}
        if self.gpu_ok and self.opts.per_gpu > 1:
            env["CML_GPU_SLOTS"] = str(gpuhold.DEFAULT_SLOTS * self.opts.per_gpu)
        return env

    def _listed(self, job: _Job, out: Path) -> LabRun:
        """What stands in for the reference's results where the kit has no
        solutions/ (a student edition): the tests the submission's test
        programs list (Criterion --list: the kit's tests, made from the step
        table), each to pass. A step none of whose tests is listed because
        its test program did not build (or list) gets one placeholder test
        there, so it reads failed, not unmeasured."""
        lab, ref = job.lab, LabRun(job.lab.name, gpu=job.run.gpu)
        listed: dict[str, BinaryRun] = {}
        for b in lab.test_binaries():
            listed[b] = BinaryRun(b, job.run.build_ok.get(b, False))
            if listed[b].built:
                r = self.student_exe.run([str(job.build_dir / b), "--list"], cwd=out, timeout=60, writable=[out],
                                         readable=[job.tree])
                listed[b].outcomes = criterion_list(r.stdout)
                listed[b].problem = "" if listed[b].outcomes else f"--list listed no tests (exit {r.rc})"
        unbuilt = [br for br in listed.values() if not br.outcomes]
        if unbuilt:
            have = {lab.step_of_suite(o.suite) for br in listed.values() for o in br.outcomes.values()}
            for s in lab.steps:
                if s.num not in have:
                    o = TestOutcome(lab.suite.replace("{num}", str(s.num)), "(its tests)", "PASSED")
                    unbuilt[0].outcomes[o.key] = o
        for kind, _seed in self._seeds():
            ref.tests[kind] = {b: BinaryRun(br.binary, br.built, dict(br.outcomes), br.problem)
                               for b, br in listed.items()}
        return ref

    # ------------------------------------------------------------ GPU stage
    def _run_lab(self, job: _Job, gpu: str | None, progress: Progress) -> None:
        lab, run = job.lab, job.run
        if run.refused:  # the object checks refused it: nothing of it runs
            self._sanitizers_not_run(lab, run, "refused by the object checks")
            progress.say(job.sub.student, lab.name, "refused by the object checks", finished=True)
            return
        t0 = clock()
        run.gpu = gpu or ""
        job.gpu_key = gpu
        deadline = R.Deadline(lab.rubric.lab.time_limit_s)
        env = self._gpu_env(gpu)
        out = self.work / "results" / safe_name(job.sub.student) / lab.name
        out.mkdir(parents=True, exist_ok=True)
        ref = job.ref = self.reference(lab, gpu) if lab.solution_dir else self._listed(job, out)
        readable = [job.tree]
        bdir = job.build_dir
        where = (f" on GPU {gpu}" if gpu is not None and self.gpu_ok
                 else " on the CPU path" if self.cpu_path else " (no usable GPU)")
        progress.say(job.sub.student, lab.name, "testing" + where)
        phase = _Phases(run)
        harness = lab.harness
        for kind, seed in self._seeds():
            run.tests[kind] = {}
            if kind == "hidden" and harness:
                continue  # the kit-only checker's verdicts are the hidden tests (run_kit_checks)
            # never the secret itself: a one-way stand-in for this student, lab and submission
            seed = student_seed(self.opts.secret_seed, seed, job.sub.student, lab.name, job.sub.files.get(lab.name, {}))
            for b in lab.test_binaries():
                if not run.build_ok.get(b, False):
                    run.tests[kind][b] = R.BinaryRun(b, False, problem="not built")
                    continue
                if deadline.expired():
                    run.tests[kind][b] = R.BinaryRun(b, True, problem="timed out: the lab's time limit ran out")
                    run.timed_out.append(f"{b} ({kind} data)")
                    continue
                rb = ref.tests.get(kind, {}).get(b)
                if rb and rb.outcomes:
                    # one step at a time: a step that hangs costs that step only
                    br, late = R.run_tests_by_step(self.student_exe, bdir / b, out, kind, seed, rb,
                                                   lab.rubric.tests.step_time_limit_s, deadline, env, readable)
                    run.timed_out += [f"{b} {suite} ({kind} data, step limit "
                                      f"{lab.rubric.tests.step_time_limit_s:.0f} s)" for suite in late]
                else:
                    br = R.run_tests(self.student_exe, bdir / b, out, kind, seed,
                                     deadline.limit(lab.rubric.lab.time_limit_s), env, readable)
                    if "timed out" in br.problem:
                        run.timed_out.append(f"{b} ({kind} data)")
                    R.check_against(br, set(rb.outcomes) if rb else set())
                if kind == "hidden":   # no seed in what a student reads, the stand-in included
                    scrub_outcomes(br, [self.opts.secret_seed, seed])
                run.tests[kind][b] = br
        if harness and (self.gpu_ok or lab.cpu):   # only where there is a device to run it on
            progress.say(job.sub.student, lab.name, "kit-only checks")
            run_kit_checks(self.student_exe, lab, run, ref, bdir / harness, self._seeds(), PUBLIC_SEED, out,
                           lab.rubric.tests.step_time_limit_s, deadline, env, readable,
                           harness.endswith("_cpu"))
        phase.done("tests")
        if not lab.solution_dir:
            _skipped_as_run(ref, run)
        runner = bdir / lab.runner
        if not run.build_ok.get(lab.runner, False):
            run.gpu_note = "the runner did not build"
        elif not self.gpu_ok:
            run.gpu_note = self.no_gpu_reason or "no CUDA device"
            if lab.cpu:   # the CPU path's bounds reports and race check stand in for memcheck and racecheck
                steps = R.passing_steps(run.tests.get("public", {}), lab.step_of_suite)
                for tool in [t for t in lab.rubric.sanitizers.points if t in R.CPU_TOOLS]:
                    if not steps:
                        run.sanitizers[tool] = R.SanitizerReport("not_run", "no step passes its tests", 0, None)
                        continue
                    if deadline.expired():
                        run.timed_out.append(f"CPU path check for {tool}")
                        continue
                    progress.say(job.sub.student, lab.name, f"CPU path check for {tool}")
                    rep, cfg = R.run_cpu_check(self.student_exe, tool, runner, lab.sanitizer_args(), deadline,
                                               lab.rubric.sanitizers.timeout_s, out, env, readable,
                                               ",".join(map(str, steps)))
                    run.sanitizers[tool], run.sanitizer_configs[tool] = rep, cfg
        else:
            progress.say(job.sub.student, lab.name, "sanitizers")
            # only the steps that pass their tests: a wrong or hanging step
            # has already lost its points, and would stall the tools
            steps = R.passing_steps(run.tests.get("public", {}), lab.step_of_suite)

            def sanitize(tool: str):
                if deadline.expired():
                    return None
                return R.run_sanitizer(self.student_exe, tool, runner, lab.sanitizer_args(), deadline,
                                       lab.rubric.sanitizers.timeout_s, out, env, readable, ",".join(map(str, steps)))
            tools = list(lab.rubric.sanitizers.points)
            # the tools side by side, each over the passing steps (a tool's configs one after another)
            reports = R.side_by_side([partial(sanitize, t) for t in tools], R.GPU_SIDE_BY_SIDE) if steps else []
            for tool, got in zip(tools, reports or [None] * len(tools)):
                if not steps:
                    run.sanitizers[tool] = R.SanitizerReport("not_run", "no step passes its tests", 0, None)
                elif got is None:
                    run.timed_out.append(f"compute-sanitizer {tool}")
                else:
                    run.sanitizers[tool], run.sanitizer_configs[tool] = got
            # diagnosis, no points: where the mistake catalog names a tool for
            # a step whose tests fail (a race that garbles the answer), run it
            # on that step so the feedback can say why
            failing = R.failing_steps(run.tests.get("public", {}), lab.step_of_suite)
            for tool in lab.rubric.sanitizers.points:
                diag = sorted({m.step for m in lab.mistakes if m.caught_by == tool and m.step in failing})
                if not diag or deadline.expired():
                    continue
                rep, _ = R.run_sanitizer(self.student_exe, tool, runner, list(lab.sanitize[:1]),
                                         deadline, lab.rubric.sanitizers.timeout_s, out, env, readable,
                                         ",".join(map(str, diag)))
                run.diagnoses[tool] = (diag, rep)
            phase.done("sanitizers")
            counter_steps = [c.step for c in lab.counter_checks if c.step in steps]
            if counter_steps:
                if deadline.expired():
                    run.timed_out.append("counters")
                else:
                    progress.say(job.sub.student, lab.name, "counters")
                    if self._counted_by_harness(lab):   # the grader's own ncu run on the kit-only harness
                        run.counters = counters_report(self.student_exe, bdir / lab.harness, lab, counter_steps,
                                                       PUBLIC_SEED, out, deadline.limit(lab.rubric.counters.timeout_s),
                                                       env, readable, "student")
                    else:
                        run.counters = R.run_counters(self.student_exe, runner, counter_steps,
                                                      deadline.limit(lab.rubric.counters.timeout_s), out, env,
                                                      readable)
            phase.done("counters")
            pr = lab.rubric.performance
            with ExitStack() as hold:
                if pr.steps:
                    progress.say(job.sub.student, lab.name, "timing against the reference")
                if lab.solution_dir and [s for s in pr.steps if s in steps] and not deadline.expired():
                    # nothing else runs on this GPU while it is timed: not the grader's other (gpushare.py)
                    # workers, and not the kit's test binaries (gpuhold.py: those running there end first, new ones wait
                    # or go to another GPU)
                    hold.enter_context(gpushare.share_of(gpu).alone())
                    unheld = hold.enter_context(gpuhold.held_alone(gpuhold.gpu_uuid(gpu) if gpu else None,
                                                                   deadline))
                    if unheld:
                        progress.say(job.sub.student, lab.name, f"timing beside other work: {unheld}")
                self._time_steps(job, gpu, steps, deadline, out, env, readable)
            phase.done("timing")
        run.seconds["gpu"] = clock() - t0
        progress.say(job.sub.student, lab.name, "done", finished=True)

    def _sanitizers_not_run(self, lab: Lab, run: LabRun, why: str) -> None:
        """The sanitizer checks this machine would have run on the lab (every
        tool on a GPU, the CPU path's own on the CPU path), failed, not "not
        measured": a refused or missing lab has everyone's maximum."""
        measurable = (list(lab.rubric.sanitizers.points) if self.gpu_ok else
                      [t for t in lab.rubric.sanitizers.points if t in R.CPU_TOOLS] if lab.cpu else [])
        for tool in measurable:
            run.sanitizers[tool] = R.SanitizerReport("not_run", why, 0, None)

    def _time_steps(self, job: _Job, gpu: str | None, steps: list[int], deadline, out: Path, env: dict[str, str],
                    readable: list[Path]) -> None:
        """The performance lines: each passing timed step against the reference."""
        lab, run, bdir = job.lab, job.run, job.build_dir
        runner = bdir / lab.runner
        pr = lab.rubric.performance
        by_harness = {}
        for s in pr.steps:
            if s not in steps:
                continue  # a wrong or hanging step is not timed
            if not lab.solution_dir:   # nothing to time it against
                run.perf[s] = PerfResult(s, None, None, True, note=NO_REFERENCE)
                continue
            case = self._timed_case(lab, s)
            if case is not None:   # timed by the kit-only harnesses, all such steps at once (below)
                by_harness[s] = case
                continue
            if deadline.expired():
                run.timed_out.append(f"performance step {s}")
                continue
            perf = R.run_perf if self.ref_times is None else partial(self.ref_times.perf, key=(gpu, lab.name))
            run.perf[s] = perf(self.student_exe, self.trusted, runner, self.ref_build / lab.ref_targets()[-1],
                               s, pr.runner_args, pr.repeats, deadline, pr.timeout_s, out, env, readable)
        if by_harness and deadline.expired():
            run.timed_out += [f"performance step {s}" for s in sorted(by_harness)]
        elif by_harness:   # student and reference interleaved, every step in one harness run a side and round
            run.perf.update(perf_lab(self.student_exe, self.trusted, bdir / lab.harness,
                                     self.ref_build / f"{lab.stem}_harness_ref", lab.name, by_harness, deadline,
                                     pr.timeout_s, out, env, readable))

    def _gpu_worker(self, gpu: str | None, q: queue.Queue, progress: Progress, errors: list) -> None:
        while True:
            job = q.get()
            if job is None:
                return
            try:
                self._run_lab(job, gpu, progress)
                self._remember(job)
            except Exception as e:  # a grader bug must not lose the rest of the class
                job.run.build_problem = f"grader error while running: {type(e).__name__}: {e}"
                errors.append(f"{job.sub.student} {job.lab.name}: {type(e).__name__}: {e}")
                progress.say(job.sub.student, job.lab.name, "grader error", finished=True)

    # ------------------------------------------------------------ everything
    def grade(self, subs: list[Submission]) -> tuple[list[StudentResult], list[str]]:
        """Returns the results (sorted by student) and grader errors."""
        if self.cache is not None:
            self.cached = self.cache.lookup(subs, self.labs, self.say)
        total = sum(1 for s in subs for lab in self.labs if lab.name in s.files) - len(self.cached)
        progress = self.progress
        progress.start(total)
        q: queue.Queue = queue.Queue()
        errors: list[str] = []
        per_gpu = max(1, self.opts.per_gpu) if self.gpu_ok else 1
        workers = [threading.Thread(target=self._gpu_worker, args=(g, q, progress, errors), daemon=True)
                   for g in self.gpus for _ in range(per_gpu)]
        for w in workers:
            w.start()
        jobs: dict[str, list[_Job]] = {}
        build_workers = max(1, self.jobs // 2)
        with ThreadPoolExecutor(max_workers=build_workers) as pool:
            futs = {pool.submit(self._build_submission, s, progress): s for s in subs}
            for fut in as_completed(futs):
                s = futs[fut]
                try:
                    js = fut.result()
                except Exception as e:
                    errors.append(f"{s.student}: grader error while building: {type(e).__name__}: {e}")
                    js = []
                jobs[s.student] = js
                for j in js:
                    if j.run.build_problem.startswith("grader error"):
                        errors.append(f"{s.student} {j.lab.name}: {j.run.build_problem[:200]}")
                    q.put(j)
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
        ref = job.ref or self.refs.get((job.lab.name, job.gpu_key)) or self.reference(job.lab, job.gpu_key)
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

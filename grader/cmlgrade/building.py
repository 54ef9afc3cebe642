"""The build stage of a batch (pipeline.Pipeline's part): the reference
once, the GPU probe, and every submission's labs in a kit slot (or a
tree of its own), with the object checks on what was compiled."""
from __future__ import annotations

import re
from pathlib import Path

from .build import build_tree, clock, cpu_path_instead, shared_lock
from .buildtree import GRADING_EDITION, TreeError, make_student_tree
from .checker import CHECKERS, bind_build
from .intake import Submission
from .refruns import _shares
from .labs import Lab, LabError, kit_description, manifests
from .progress import Progress
from .results import LabRun
from .skeleton import not_started
from .specs import SpecChecker
from .stagebase import CPU_CANNOT_RUN, GraderError, _Job, safe_name
from .static import run_sass_checks, run_static
from .trust import check_lab


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


class BuildStage:
    """Pipeline's builds (a mixin: the state is Pipeline's)."""

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
        self.say("configuring the kit (cmake)")
        self._build_verifiers(shared, timeout)
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
        with shared_lock(shared):   # a Slurm array's tasks: the first builds it, the others find it built
            tb = build_tree(self.trusted, self.opts.kit.resolve(), self.ref_build, targets, arch=self.opts.arch,
                            jobs=self.jobs, timeout=timeout, writable=[], configured=True,
                            on_target=lambda i, t: self.say(f"reference: building {t} ({i}/{len(targets)})"))
        bad = [t for t, b in tb.targets.items() if not b.ok]
        if bad:
            msgs = "\n".join(tb.targets[bad[0]].errors[:20])
            raise GraderError(f"the reference solution does not build ({', '.join(bad)}):\n{msgs}")
        self._check_description()
        self.say(f"reference built in {tb.seconds:.0f} s")

    def _build_verifiers(self, shared: Path | None, timeout: float) -> None:
        """Configures the grader's build of its kit and builds the labs'
        verifiers (specs.py: their cases and verdicts; the kit's code only),
        which the rest asks what a lab times and checks."""
        targets = [f"{lab.stem}_verify" for lab in self.labs if isinstance(CHECKERS.get(lab.name), SpecChecker)]
        with shared_lock(shared):
            tb = build_tree(self.trusted, self.opts.kit.resolve(), self.ref_build, targets, arch=self.opts.arch,
                            jobs=self.jobs, timeout=timeout, writable=[])
        if not tb.configured:
            raise GraderError("the kit does not configure (cmake):\n" + tb.configure_log[-3000:])
        bad = [t for t, b in tb.targets.items() if not b.ok]
        if bad:
            raise GraderError(f"the kit's verifier does not build ({', '.join(bad)}):\n"
                              + "\n".join(tb.targets[bad[0]].errors[:20]))
        bind_build(self.ref_build)

    def _build_probe(self) -> None:
        """A student edition (no solutions/) has no reference to build: only
        a runner of the kit as it is, to ask whether a GPU is usable here. A
        runner that does not build (the student's own file, in a self-check)
        is no problem of the kit: the next lab's is tried; if none builds,
        the GPU checks read not measured."""
        self.say("student edition (no solutions/): no reference solution to build; "
                 "building a runner of the kit to probe for a GPU")
        self._build_verifiers(None, max(lab.rubric.lab.build_timeout_s for lab in self.labs))
        configured = True
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

    def _build_submission(self, sub: Submission, progress: Progress, ready=None) -> list[_Job]:
        """Builds and checks the submission's labs. `ready(job)`, where given,
        is called with each lab as soon as it is built and checked, so that
        its runs can start while the next lab builds (one submission's nine
        labs: the first runs after one build, not nine); the labs are
        returned too."""
        labs = [lab for lab in self.labs if lab.name in sub.files and (sub.student, lab.name) not in self.cached]
        if not labs:
            return []
        ready = ready or (lambda job: None)
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
            return self._build_in_slot(sub, labs, files, runs, tree, progress, ready)
        try:
            src = make_student_tree(self.opts.kit, tree, files)
        except (TreeError, OSError) as e:
            for r in runs.values():
                r.build_problem = f"grader error: cannot make the build tree ({e})"
            return _handed(ready, [_Job(sub, lab, runs[lab.name], tree / "build", tree) for lab in labs])
        build_dir = tree / "build"
        configured = False
        jobs_each = max(1, min(4, self.jobs // 2))
        for lab in labs:
            progress.say(sub.student, lab.name, "building")
            t0 = clock()
            tb = build_tree(self.student_exe, src, build_dir, lab.student_targets(), arch=self.opts.arch,
                            jobs=jobs_each, timeout=lab.rubric.lab.build_timeout_s, writable=[tree],
                            configured=configured, edition=GRADING_EDITION)
            run = runs[lab.name]
            run.seconds["build"] = clock() - t0
            if not tb.configured:
                run.build_problem = "grader error: the build tree does not configure: " + tb.configure_log[-500:]
                continue
            configured = True
            _note_build(run, tb)
        return _handed(ready, self._checked([_Job(sub, lab, runs[lab.name], build_dir, tree) for lab in labs]))

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
            j.run.static += run_sass_checks(j.lab.rubric.static, rep.sass, rep.sass_note,
                                            resources=rep.resources)
            if rep.refused:
                j.run.refused = list(rep.refused)
            elif not rep.checked:
                j.run.refused = [f"the grader could not check the compiled code ({rep.note})"]
        return jobs

    def _build_in_slot(self, sub: Submission, labs: list[Lab], files, runs, tree: Path,
                       progress: Progress, ready) -> list[_Job]:
        """The same targets built in a slot of the prebuilt kit; the binaries
        land in tree/build as a fresh tree's would. Each lab goes to
        `ready` once built and checked: its runs read only its own binaries
        and objects in tree/build (never the slot), which the next lab's
        build does not touch."""
        slot = self.slots.acquire(self.student_exe)   # built: by this worker if no other slot was
        jobs = []
        try:
            if not slot.ready:
                for r in runs.values():
                    r.build_problem = "grader error: " + slot.problem
                return _handed(ready, [_Job(sub, lab, runs[lab.name], tree / "build", tree) for lab in labs])
            for lab in labs:
                progress.say(sub.student, lab.name, "building")
                t0 = clock()
                tb = self.slots.build_lab(self.student_exe, slot, lab.name, files[lab.name], lab.student_targets(),
                                          tree, lab.rubric.lab.build_timeout_s, lab.extra_targets)
                runs[lab.name].seconds["build"] = clock() - t0
                _note_build(runs[lab.name], tb)
                job = self._checked([_Job(sub, lab, runs[lab.name], tree / "build", tree)])[0]
                jobs.append(job)
                ready(job)
        finally:
            self.slots.release(slot)
        return jobs


def _handed(ready, jobs: list[_Job]) -> list[_Job]:
    """Each job to `ready`, in order; the jobs."""
    for j in jobs:
        ready(j)
    return jobs

"""The lab stage of a batch (pipeline.Pipeline's part): each built lab run
on its GPU worker (or the CPU path): the tests and the kit-only checks,
the sanitizers or the CPU path's checks, the counters and the timing
against the reference.

This module runs a lab's tests and kit-only checks, and each lab's stages
in order on its GPU worker (LabStage._run_lab); the sanitizers, the CPU
path's checks, the counters and the timing are labmeasure.py's
(MeasureStage, the other mixin Pipeline inherits)."""
from __future__ import annotations

import queue
import time
from dataclasses import dataclass
from pathlib import Path

from . import gpushare
from . import run as R
from .build import clock
from .labs import Lab
from .parsers import TestOutcome
from .progress import Progress
from .results import LabRun
from .stagebase import PUBLIC_SEED, _Job, safe_name
from .trust import KIT_CHECK_BINARY, run_kit_checks, scrub_outcomes, student_seed


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
class _At:
    """One lab's run on one GPU (None: the CPU path or no device): what
    each part of LabStage._run_lab needs."""
    job: _Job
    gpu: str | None
    deadline: R.Deadline
    env: dict[str, str]
    out: Path
    readable: list[Path]
    progress: Progress

    @property
    def bdir(self) -> Path:
        return self.job.build_dir

    def say(self, what: str) -> None:
        self.progress.say(self.job.sub.student, self.job.lab.name, what)


class LabStage:
    """Pipeline's lab runs (a mixin: the state is Pipeline's)."""

    def _run_lab(self, job: _Job, gpu: str | None, progress: Progress) -> None:
        """A built lab's runs on `gpu` (None: the CPU path or no device), in
        order: tests and kit-only checks; then on a GPU the sanitizers, the
        counters and the timing (on the CPU path its bounds and race checks)."""
        lab, run = job.lab, job.run
        if run.refused:  # the object checks refused it: nothing of it runs
            self._sanitizers_not_run(lab, run, "refused by the object checks")
            progress.say(job.sub.student, lab.name, "refused by the object checks", finished=True)
            return
        t0, began = clock(), time.monotonic()
        # no line: the reference's first run on this GPU (a [grader] line) or the tests' line follows
        progress.say(job.sub.student, lab.name, f"started on GPU {gpu}" if gpu is not None and self.gpu_ok
                     else "started on the CPU path" if self.cpu_path else "started", line=False)
        run.gpu = gpu or ""
        job.gpu_key = gpu
        at = _At(job, gpu, R.Deadline(lab.rubric.lab.time_limit_s), self._gpu_env(gpu),
                 self.work / "results" / safe_name(job.sub.student) / lab.name, [job.tree], progress)
        at.out.mkdir(parents=True, exist_ok=True)
        job.ref = self.reference(lab, gpu) if lab.solution_dir else self._listed(job, at.out)
        phase = _Phases(run)
        gpushare.take_waited()   # from here on, this lab's waits for the GPU alone
        self._tests(at)
        phase.done("tests")
        if not lab.solution_dir:
            _skipped_as_run(job.ref, run)
        if not run.build_ok.get(lab.runner, False):
            run.gpu_note = "the runner did not build"
        elif not self.gpu_ok:
            run.gpu_note = self.no_gpu_reason or "no CUDA device"
            if lab.cpu:   # the CPU path's bounds reports and race check stand in for memcheck and racecheck
                self._cpu_checks(at)
        else:
            at.say("sanitizers")
            # only the steps that pass their tests: a wrong or hanging step
            # has already lost its points, and would stall the tools
            steps = R.passing_steps(run.tests.get("public", {}), lab.step_of_test)
            self._sanitizers(at, steps)
            phase.done("sanitizers")
            self._counters(at, steps)
            phase.done("counters")
            self._timing(at, steps)
            phase.done("timing")
        run.seconds["gpu"] = clock() - t0
        # when, in wall seconds after grading began, this lab's run began and ended (the benchmark's steady state)
        since = getattr(self, "graded_from", began)
        run.seconds["began"], run.seconds["ended"] = began - since, time.monotonic() - since
        run.seconds["waiting alone"] = gpushare.take_waited()   # of the phases' seconds, waiting for the GPU alone
        progress.say(job.sub.student, lab.name, "done", finished=True)

    def _tests(self, at: _At) -> None:
        """The lab's test programs on the public data (and on the secret
        data where the lab has no kit-only checker), and the kit-only checks.
        With public_tests "failing" (Options) the kit-only checks run first
        and Criterion runs the public tests of the steps they do not find
        right only: a step they find right has its tests take that verdict,
        as the hidden tests do (_tests_known)."""
        lab, run = at.job.lab, at.job.run
        where = (f" on GPU {at.gpu}" if at.gpu is not None and self.gpu_ok
                 else " on the CPU path" if self.cpu_path else " (no usable GPU)")
        at.say("testing" + where)
        harness = lab.harness
        checked = bool(harness) and (self.gpu_ok or lab.cpu)   # only where there is a device to run it on
        first = checked and self.opts.public_tests == "failing"
        if first:
            self._kit_checks(at)
        for kind, seed in self._seeds():
            if kind == "hidden" and harness:
                run.tests.setdefault(kind, {})
                continue  # the kit-only checker's verdicts are the hidden tests (run_kit_checks)
            # never the secret itself: a one-way stand-in for this student, lab and submission
            seed = student_seed(self.opts.secret_seed, seed, at.job.sub.student, lab.name,
                                at.job.sub.files.get(lab.name, {}))
            mine = run.tests.setdefault(kind, {})
            kit_line = mine.pop(KIT_CHECK_BINARY, None)
            for b in lab.test_binaries():
                mine[b] = self._test_binary(at, b, kind, seed, first)
            if kit_line is not None:   # the checker's line after the test programs', where it always was
                mine[KIT_CHECK_BINARY] = kit_line
        if checked and not first:
            self._kit_checks(at)

    def _kit_checks(self, at: _At) -> None:
        lab, run = at.job.lab, at.job.run
        at.say("kit-only checks")
        run_kit_checks(self.student_exe, lab, run, at.job.ref, at.bdir / lab.harness, self._seeds(), PUBLIC_SEED,
                       at.out, lab.rubric.tests.step_time_limit_s, at.deadline, at.env, at.readable,
                       lab.harness.endswith("_cpu"), self.per_gpu if self.gpu_ok else 1)

    def _test_binary(self, at: _At, b: str, kind: str, seed: int | None, known: bool) -> R.BinaryRun:
        """One test program's outcomes on one data set; with `known`, the
        tests of steps the kit-only checker found right are not run
        (_tests_known)."""
        lab, run, ref, deadline = at.job.lab, at.job.run, at.job.ref, at.deadline
        if not run.build_ok.get(b, False):
            return R.BinaryRun(b, False, problem="not built")
        if deadline.expired():
            run.timed_out.append(f"{b} ({kind} data)")
            return R.BinaryRun(b, True, problem="timed out: the lab's time limit ran out")
        rb = ref.tests.get(kind, {}).get(b)
        full = rb.outcomes if rb else {}   # every test the reference's run listed
        taken: dict = {}
        if known and kind == "public" and rb and rb.outcomes:
            rb, taken = self._tests_known(lab, run, rb)
            if not rb.outcomes:   # every test's step right: nothing of this program runs
                return R.BinaryRun(b, True, outcomes=taken)
        if rb and rb.outcomes:
            # one step at a time: a step that hangs costs that step only
            br, late = R.run_tests_by_step(self.student_exe, at.bdir / b, at.out, kind, seed, rb,
                                           lab.rubric.tests.step_time_limit_s, deadline, at.env, at.readable,
                                           whole_ok=not taken)
            run.timed_out += [f"{b} {suite} ({kind} data, step limit "
                              f"{lab.rubric.tests.step_time_limit_s:.0f} s)" for suite in late]
        else:
            br = R.run_tests(self.student_exe, at.bdir / b, at.out, kind, seed,
                             deadline.limit(lab.rubric.lab.time_limit_s), at.env, at.readable)
            if "timed out" in br.problem:
                run.timed_out.append(f"{b} ({kind} data)")
            R.check_against(br, set(rb.outcomes) if rb else set())
        if taken:   # in the order a run of every test lists them (run_tests_by_step: by suite, then the reference's)
            got = dict(br.outcomes)
            br.outcomes = {k: got.get(k) or taken[k] for suite in sorted({o.suite for o in full.values()})
                           for k, o in full.items() if o.suite == suite and (k in got or k in taken)}
            br.outcomes.update({k: o for k, o in got.items() if k not in br.outcomes})
        if kind == "hidden":   # no seed in what a student reads, the stand-in included
            scrub_outcomes(br, [self.opts.secret_seed, seed])
        return br

    @staticmethod
    def _tests_known(lab: Lab, run: LabRun, rb: R.BinaryRun) -> tuple[R.BinaryRun, dict]:
        """The reference's test list split: the tests still to run (a step
        the kit-only checker did not find right, or a test of no step, or one
        the reference itself does not pass) and the rest, each PASSED, the
        checker's verdict on its step."""
        public = run.checks.get("public", {})
        rest, taken = R.BinaryRun(rb.binary, rb.built), {}
        for key, o in rb.outcomes.items():
            # the checker stands in for its step's suite only: a test of another suite that counts for a step
            # (Lab.step_of_test: lab 04's past_2_pow_31::step7_...) has cases the checker lacks, and runs
            v = public.get(lab.step_of_suite(o.suite) or 0)
            if o.status == "PASSED" and v is not None and v.ok is True:
                taken[key] = TestOutcome(o.suite, o.name, "PASSED", [])
            else:
                rest.outcomes[key] = o
        return rest, taken

    def _gpu_worker(self, gpu: str | None, q: queue.Queue, progress: Progress, errors: list) -> None:
        while True:
            job = q.get()
            if job is None:
                return
            try:
                self._run_lab(job, gpu, progress)
                self._remember(job)
                if self.on_lab_done is not None:
                    self.on_lab_done(job)
            except Exception as e:  # a grader bug must not lose the rest of the class
                job.run.build_problem = f"grader error while running: {type(e).__name__}: {e}"
                errors.append(f"{job.sub.student} {job.lab.name}: {type(e).__name__}: {e}")
                progress.say(job.sub.student, job.lab.name, "grader error", finished=True)

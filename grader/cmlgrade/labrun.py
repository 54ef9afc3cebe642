"""The lab stage of a batch (pipeline.Pipeline's part): each built lab run
on its GPU worker (or the CPU path): the tests and the kit-only checks,
the sanitizers or the CPU path's checks, the counters and the timing
against the reference."""
from __future__ import annotations

import hashlib
import queue
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from . import gpuhold, gpushare
from . import run as R
from .build import clock
from .checker import CHECKERS, counters_report
from .labs import Lab
from .parsers import TestOutcome
from .progress import Progress
from .reftime import perf_lab
from .results import LabRun, PerfResult
from .stagebase import HARNESS_REPEATS, NO_REFERENCE, PUBLIC_SEED, _Job, safe_name
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


    def _run_lab(self, job: _Job, gpu: str | None, progress: Progress) -> None:
        """A built lab's runs on `gpu` (None: the CPU path or no device), in
        order: tests and kit-only checks; then on a GPU the sanitizers, the
        counters and the timing (on the CPU path its bounds and race checks)."""
        lab, run = job.lab, job.run
        if run.refused:  # the object checks refused it: nothing of it runs
            self._sanitizers_not_run(lab, run, "refused by the object checks")
            progress.say(job.sub.student, lab.name, "refused by the object checks", finished=True)
            return
        t0 = clock()
        run.gpu = gpu or ""
        job.gpu_key = gpu
        at = _At(job, gpu, R.Deadline(lab.rubric.lab.time_limit_s), self._gpu_env(gpu),
                 self.work / "results" / safe_name(job.sub.student) / lab.name, [job.tree], progress)
        at.out.mkdir(parents=True, exist_ok=True)
        job.ref = self.reference(lab, gpu) if lab.solution_dir else self._listed(job, at.out)
        phase = _Phases(run)
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
            steps = R.passing_steps(run.tests.get("public", {}), lab.step_of_suite)
            self._sanitizers(at, steps)
            phase.done("sanitizers")
            self._counters(at, steps)
            phase.done("counters")
            self._timing(at, steps)
            phase.done("timing")
        run.seconds["gpu"] = clock() - t0
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
                       lab.harness.endswith("_cpu"))

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
            v = public.get(lab.step_of_suite(o.suite) or 0)
            if o.status == "PASSED" and v is not None and v.ok is True:
                taken[key] = TestOutcome(o.suite, o.name, "PASSED", [])
            else:
                rest.outcomes[key] = o
        return rest, taken

    def _cpu_checks(self, at: _At) -> None:
        """The CPU path's bounds and race checks (memcheck's and racecheck's
        stand-ins) over the steps that pass their tests."""
        lab, run = at.job.lab, at.job.run
        steps = R.passing_steps(run.tests.get("public", {}), lab.step_of_suite)
        for tool in [t for t in lab.rubric.sanitizers.points if t in R.CPU_TOOLS]:
            if not steps:
                run.sanitizers[tool] = R.SanitizerReport("not_run", "no step passes its tests", 0, None)
                continue
            if at.deadline.expired():
                run.timed_out.append(f"CPU path check for {tool}")
                continue
            at.say(f"CPU path check for {tool}")
            rep, cfg = R.run_cpu_check(self.student_exe, tool, at.bdir / lab.runner, lab.sanitizer_args(),
                                       at.deadline, lab.rubric.sanitizers.timeout_s, at.out, at.env, at.readable,
                                       ",".join(map(str, steps)))
            run.sanitizers[tool], run.sanitizer_configs[tool] = rep, cfg

    def _sanitizers(self, at: _At, steps: list[int]) -> None:
        """compute-sanitizer's tools over the passing steps, and the tools
        the mistake catalogue names for failing steps (a diagnosis, no points)."""
        lab, run, deadline = at.job.lab, at.job.run, at.deadline
        runner = at.bdir / lab.runner

        def sanitize(tool: str):
            if deadline.expired():
                return None
            return R.run_sanitizer(self.student_exe, tool, runner, lab.sanitizer_args(), deadline,
                                   lab.rubric.sanitizers.timeout_s, at.out, at.env, at.readable,
                                   ",".join(map(str, steps)))
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
                                     deadline, lab.rubric.sanitizers.timeout_s, at.out, at.env, at.readable,
                                     ",".join(map(str, diag)))
            run.diagnoses[tool] = (diag, rep)

    def _counters(self, at: _At, steps: list[int]) -> None:
        """Nsight Compute's counters of the passing steps the lab counts."""
        lab, run, deadline = at.job.lab, at.job.run, at.deadline
        counter_steps = [c.step for c in lab.counter_checks if c.step in steps]
        if not counter_steps:
            return
        if deadline.expired():
            run.timed_out.append("counters")
            return
        at.say("counters")
        if self._counted_by_harness(lab):   # the grader's own ncu run on the kit-only harness
            run.counters = counters_report(self.student_exe, at.bdir / lab.harness, lab, counter_steps,
                                           PUBLIC_SEED, at.out, deadline.limit(lab.rubric.counters.timeout_s),
                                           at.env, at.readable, "student")
        else:
            run.counters = R.run_counters(self.student_exe, at.bdir / lab.runner, counter_steps,
                                          deadline.limit(lab.rubric.counters.timeout_s), at.out, at.env,
                                          at.readable)

    def _timing(self, at: _At, steps: list[int]) -> None:
        """The passing timed steps against the reference, the GPU held alone."""
        lab, gpu, deadline = at.job.lab, at.gpu, at.deadline
        pr = lab.rubric.performance
        with ExitStack() as hold:
            if pr.steps:
                at.say("timing against the reference")
            if lab.solution_dir and [s for s in pr.steps if s in steps] and not deadline.expired():
                # nothing else runs on this GPU while it is timed: not the grader's other (gpushare.py)
                # workers, and not the kit's test binaries (gpuhold.py: those running there end first, new ones wait
                # or go to another GPU)
                hold.enter_context(gpushare.share_of(gpu).alone())
                unheld = hold.enter_context(gpuhold.held_alone(gpuhold.gpu_uuid(gpu) if gpu else None, deadline))
                if unheld:
                    at.say(f"timing beside other work: {unheld}")
            self._time_steps(at.job, gpu, steps, deadline, at.out, at.env, at.readable)

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

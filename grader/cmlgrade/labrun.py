"""The lab stage of a batch (pipeline.Pipeline's part): each built lab run
on its GPU worker (or the CPU path): the tests and the kit-only checks,
the sanitizers or the CPU path's checks, the counters and the timing
against the reference; and the reference's own runs, once per GPU."""
from __future__ import annotations

import hashlib
import queue
import re
import threading
from contextlib import ExitStack
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
from .results import BinaryRun, LabRun, PerfResult
from .stagebase import HARNESS_REPEATS, NO_REFERENCE, PUBLIC_SEED, _Job, safe_name
from .trust import reference_traces, run_kit_checks, scrub_outcomes, student_seed


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


def _shares(lab: Lab) -> bool:
    """The lab's shared steps are compared with the reference's (a
    [technique] min_share): its reference harness is built and traced."""
    return bool(lab.rubric.technique.shared_steps and lab.rubric.technique.min_share)


class _Phases:
    """Seconds of each stage of a lab's run (tests, sanitizers, counters,
    timing) into run.seconds, for --timings and the benchmark."""

    def __init__(self, run: LabRun):
        self.run, self.t = run, clock()

    def done(self, name: str) -> None:
        now = clock()
        self.run.seconds[name] = self.run.seconds.get(name, 0.0) + now - self.t
        self.t = now


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

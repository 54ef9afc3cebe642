"""The measures of a lab's run (pipeline.Pipeline's part, beside
labrun.LabStage, whose _run_lab calls them in order): on a GPU
compute-sanitizer's tools over the steps that pass their tests (and the
tools the mistake catalogue names for failing ones), Nsight Compute's
counters and the timing against the reference, the GPU held alone; on the
CPU path its bounds and race checks in the sanitizers' place."""
from __future__ import annotations

import hashlib
from contextlib import ExitStack
from functools import partial
from pathlib import Path

from . import gpuhold, gpushare
from . import run as R
from .checker import CHECKERS, counters_report
from .checkprofile import counted_by_harness
from .labrun import _At
from .labs import Lab
from .reftime import TRIES, LabTiming, best_of_tries, try_again
from .results import LabRun, PerfResult
from .stagebase import HARNESS_REPEATS, NO_REFERENCE, PUBLIC_SEED, _Job


class MeasureStage:
    """Pipeline's measures of a lab's run (a mixin: the state is Pipeline's)."""

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
        return counted_by_harness(lab)

    def _timed_case(self, lab: Lab, step: int):
        """The harness-timed case of a step, None where the runner times it."""
        if not lab.harness or lab.cpu or not lab.solution_dir or step not in self._timed_steps(lab):
            return None
        # a seed of its own for each step: steps timed in one harness run never get the same data
        seed = int.from_bytes(hashlib.sha256(f"{self.timing_seed}|{step}".encode()).digest()[:8], "little") >> 1
        return CHECKERS[lab.name].timing_case(step, HARNESS_REPEATS, seed)

    def _cpu_checks(self, at: _At) -> None:
        """The CPU path's bounds and race checks (memcheck's and racecheck's
        stand-ins) over the steps that pass their tests."""
        lab, run = at.job.lab, at.job.run
        steps = R.passing_steps(run.tests.get("public", {}), lab.step_of_test)
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
        failing = R.failing_steps(run.tests.get("public", {}), lab.step_of_test)
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
        pre = run.counters   # the kit-only checks' Nsight Compute run counted the steps whose outputs are right
        if pre is not None and not pre.available:
            return   # it could count none, for one reason: another run would not do better
        rest = [s for s in counter_steps if pre is None or (s not in pre.conflicts and s not in pre.missing)]
        if not rest:
            return
        at.say("counters")
        if self._counted_by_harness(lab):   # the grader's own ncu run on the kit-only harness
            rep = counters_report(self.student_exe, at.bdir / lab.harness, lab, rest,
                                  PUBLIC_SEED, at.out, deadline.limit(lab.rubric.counters.timeout_s),
                                  at.env, at.readable, "student")
            if pre is not None:   # the profile's values kept, beside what this run found of the rest
                if rep.available:
                    pre.conflicts.update(rep.conflicts)
                    pre.missing.update(rep.missing)
                else:
                    pre.missing.update({s: rep.reason for s in rest})
                rep = pre
            run.counters = rep
        else:
            run.counters = R.run_counters(self.student_exe, at.bdir / lab.runner, counter_steps,
                                          deadline.limit(lab.rubric.counters.timeout_s), at.out, at.env,
                                          at.readable)

    def _timing(self, at: _At, steps: list[int]) -> None:
        """The passing timed steps against the reference, the GPU held alone
        (the reference's harness runs started before it is: LabTiming)."""
        lab, gpu, deadline = at.job.lab, at.gpu, at.deadline
        pr = lab.rubric.performance
        timing = None
        by_harness = self._harness_timed(lab, steps)
        if by_harness and not deadline.expired():
            timing = LabTiming(self.student_exe, self.trusted, at.job.build_dir / lab.harness,
                               self.ref_build / f"{lab.stem}_harness_ref", lab.name, by_harness, deadline,
                               pr.timeout_s, at.out, at.env, at.readable)
        with ExitStack() as hold:
            if timing is not None:
                hold.callback(timing.close)   # after the GPU is let go (last in, first out): ends what did not run
                timing.start()   # their CUDA contexts made while other work may still run on the GPU
                if timing.gate_problem:
                    at.say(timing.gate_problem)
            if pr.steps:
                at.say("timing against the reference")
            if lab.solution_dir and [s for s in pr.steps if s in steps] and not deadline.expired():
                # nothing else runs on this GPU while it is timed: not the kit's test binaries and runners
                # (gpuhold.py: those running there end first, new ones wait or go to another GPU), and not the
                # grader's other (gpushare.py) workers. In that order, as around an Nsight Compute run
                # (gpuhold.profiling_on): a worker that holds the GPU alone never waits for the kit's files
                unheld = hold.enter_context(gpuhold.held_alone(gpuhold.gpu_uuid(gpu) if gpu else None, deadline))
                hold.enter_context(gpushare.share_of(gpu).alone())
                if unheld:
                    at.say(f"timing beside other work: {unheld}")
            self._time_steps(at.job, gpu, steps, deadline, at.out, at.env, at.readable, by_harness, timing)

    def _sanitizers_not_run(self, lab: Lab, run: LabRun, why: str) -> None:
        """The sanitizer checks this machine would have run on the lab (every
        tool on a GPU, the CPU path's own on the CPU path), failed, not "not
        measured": a refused or missing lab has everyone's maximum."""
        measurable = (list(lab.rubric.sanitizers.points) if self.gpu_ok else
                      [t for t in lab.rubric.sanitizers.points if t in R.CPU_TOOLS] if lab.cpu else [])
        for tool in measurable:
            run.sanitizers[tool] = R.SanitizerReport("not_run", why, 0, None)

    def _harness_timed(self, lab: Lab, steps: list[int]) -> dict[int, object]:
        """The passing [performance] steps the kit-only harnesses time, each
        with its case (where the lab has a reference to time it against)."""
        if not lab.solution_dir:
            return {}
        cases = {s: self._timed_case(lab, s) for s in lab.rubric.performance.steps if s in steps}
        return {s: c for s, c in cases.items() if c is not None}

    def _time_steps(self, job: _Job, gpu: str | None, steps: list[int], deadline, out: Path, env: dict[str, str],
                    readable: list[Path], by_harness: dict[int, object], timing: LabTiming | None) -> None:
        """The performance lines: each passing timed step against the
        reference (those in `by_harness` by `timing`: _timing made both;
        None when the lab's time had run out)."""
        lab, run, bdir = job.lab, job.run, job.build_dir
        runner = bdir / lab.runner
        pr = lab.rubric.performance
        for s in pr.steps:
            if s not in steps:
                continue  # a wrong or hanging step is not timed
            if not lab.solution_dir:   # nothing to time it against
                run.perf[s] = PerfResult(s, None, None, True, note=NO_REFERENCE)
                continue
            if s in by_harness:   # timed by the kit-only harnesses, all such steps at once (below)
                continue
            if deadline.expired():
                run.timed_out.append(f"performance step {s}")
                continue
            perf = R.run_perf if self.ref_times is None else partial(self.ref_times.perf, key=(gpu, lab.name))
            run.perf[s] = perf(self.student_exe, self.trusted, runner, self.ref_build / lab.ref_targets()[-1],
                               s, pr.runner_args, pr.repeats, deadline, pr.timeout_s, out, env, readable)
        if by_harness and (timing is None or deadline.expired()):
            run.timed_out += [f"performance step {s}" for s in sorted(by_harness)]
        elif by_harness:   # reference, student, reference: every step in one harness run each (_timing made it)
            run.perf.update(self._tries(job, timing.run(), by_harness, deadline, out, env, readable))

    def _tries(self, job: _Job, first: dict[int, PerfResult], by_harness: dict[int, object], deadline,
               out: Path, env: dict[str, str], readable: list[Path]) -> dict[int, PerfResult]:
        """Each step that lost timing credit in `first` timed again, R S R
        with fresh processes, the GPU still held alone, until a try earns
        full credit, two tries agree or reftime.TRIES were made, while the
        lab's time left holds two of the step's own time limits; the best
        try counts (reftime.best_of_tries). A later try that timed out
        counts for nothing (a hang is the first try's to show: a try cut
        short by the lab's time is no verdict).
        Another process on the GPU that the grader cannot hold off slowed
        the reference's lab 03 by a fifth in one try of a self-check beside
        the kit's GPU tests (2 x H200, 2026-11-30): a try of its own."""
        lab = job.lab
        pr = lab.rubric.performance
        tries = {s: [r] for s, r in first.items()}
        done: set[int] = set()   # steps whose later try timed out: no more tries
        for k in range(2, TRIES + 1):   # each round adds at most one try a step
            again = {s: c for s, c in by_harness.items()
                     if s in tries and s not in done and try_again(tries[s], pr.full_credit_ratio)}
            if not again or deadline.left() < pr.timeout_s * 2:   # a try the lab's time would cut short: none
                break
            timing = LabTiming(self.student_exe, self.trusted, job.build_dir / lab.harness,
                               self.ref_build / f"{lab.stem}_harness_ref", lab.name, again, deadline, pr.timeout_s,
                               out / f"try-{k}", env, readable)
            try:
                got = timing.run()
            finally:
                timing.close()
            for s in again:   # a later try that timed out counts for nothing: the tries before it stand
                if s in got and not got[s].correct and got[s].note.startswith("timed out"):
                    done.add(s)
                elif s in got:
                    tries[s].append(got[s])
        return {s: best_of_tries(rs) for s, rs in tries.items()}

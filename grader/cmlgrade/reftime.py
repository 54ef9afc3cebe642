"""The reference's timings, measured once per GPU per batch.

Before issue 16 every submission's timing alternated student and reference
runs (S R R S ...), `repeats` of each: half of the timing phase re-measured
the same reference on the same GPU for every student. Here the reference
runner is timed `repeats` times the first time a (GPU, lab, step, args) is
needed; each later submission costs its own `repeats` runs plus ONE
reference run, the drift check: when that run falls outside the measured
spread (fastest to slowest, widened by `tolerance`), the GPU's speed has
moved (clocks, thermals, a neighbour's job) and the reference is timed
again, `repeats` times, and the new median is the one compared with from
then on. Student and reference are still measured on the same GPU."""
from __future__ import annotations

import shlex
import statistics
import threading
from dataclasses import dataclass, field
from pathlib import Path

from .results import PerfResult
from .run import Deadline, _one_timing
from .sandbox import Executor

TOLERANCE = 0.10


@dataclass
class _Entry:
    samples: list[float]
    retimed: int = 0            # how many times the drift check re-timed it

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


@dataclass
class RefTimes:
    tolerance: float = TOLERANCE
    table: dict[tuple, _Entry] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def drifted(self, e: _Entry, probe: float) -> bool:
        lo, hi = min(e.samples) * (1 - self.tolerance), max(e.samples) * (1 + self.tolerance)
        return not lo <= probe <= hi

    def reference(self, exe: Executor, ref_runner: Path, step: int, args: list[str], repeats: int,
                  deadline: Deadline, own_timeout: float, cwd: Path, gpu_env: dict[str, str],
                  key: tuple) -> tuple[_Entry | None, str]:
        """The reference's samples for `key` (gpu, lab, step, args): timed
        now if new, else checked with one run and re-timed if it drifted."""
        def time_it(n: int) -> tuple[list[float], str]:
            got = []
            for _ in range(n):
                if deadline.expired():
                    return got, "the lab's time limit ran out"
                ms, _ok, note = _one_timing(exe, ref_runner, step, args, deadline.limit(own_timeout), cwd, gpu_env, [])
                if ms is None:
                    return got, f"the reference could not be timed: {note}"
                got.append(ms)
            return got, ""

        with self.lock:
            e = self.table.get(key)
            if e is not None:
                probe, note = time_it(1)
                if note:
                    return None, note
                if not self.drifted(e, probe[0]):
                    return e, ""
            samples, note = time_it(max(1, repeats))
            if note:
                return None, note
            retimed = (e.retimed + 1) if e is not None else 0
            e = self.table[key] = _Entry(samples, retimed)
            return e, ""

    def perf(self, exe_student: Executor, exe_ref: Executor, runner: Path, ref_runner: Path, step: int, args: str,
             repeats: int, deadline: Deadline, own_timeout: float, cwd: Path, gpu_env: dict[str, str],
             readable: list[Path], key: tuple) -> PerfResult:
        """As run.run_perf, with the reference from this batch's table."""
        a = shlex.split(args)
        res = PerfResult(step, None, None, True)
        for _ in range(repeats):
            if deadline.expired():
                res.note = "the lab's time limit ran out"
                break
            ms, ok, note = _one_timing(exe_student, runner, step, a, deadline.limit(own_timeout), cwd, gpu_env,
                                       readable)
            if not ok:
                res.correct, res.note = False, note or "wrong answer"
                return res
            res.samples_student.append(ms)
        if not res.samples_student:
            return res
        e, note = self.reference(exe_ref, ref_runner, step, a, repeats, deadline, own_timeout, cwd, gpu_env,
                                 key + (step, args))
        if e is None:
            res.note = note
            return res
        res.samples_ref = list(e.samples)
        res.student_ms = statistics.median(res.samples_student)
        res.ref_ms = e.median
        return res


@dataclass
class HarnessTimes:
    """Timing by the kit-only harnesses (checker.run_timed): the student's
    launch timed by kit code, every repeat re-poisoned, fed a changed input
    word and sampled. The reference's harness is timed once per (GPU, lab,
    step) in a batch; each later submission costs one short reference run,
    the drift check (as RefTimes)."""
    tolerance: float = TOLERANCE
    table: dict[tuple, object] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def perf(self, exe_student: Executor, exe_ref: Executor, harness: Path, ref_harness: Path, lab_name: str,
             step: int, case, deadline: Deadline, own_timeout: float, cwd: Path, gpu_env: dict[str, str],
             readable: list[Path], key: tuple) -> PerfResult:
        from dataclasses import replace
        from .checker import run_timed, same_answers
        res = PerfResult(step, None, None, True)
        work = cwd / f"timed-step{step}"
        mine = run_timed(exe_student, harness, case, step, work, deadline.limit(own_timeout), gpu_env, readable)
        if mine.note:
            res.correct, res.note = False, mine.note
            return res
        with self.lock:
            ref = self.table.get(key)
            if ref is not None and not deadline.expired():
                probe = run_timed(exe_ref, ref_harness, replace(case, repeats=3), step, work,
                                  deadline.limit(own_timeout), gpu_env, [])
                lo, hi = min(ref.times) * (1 - self.tolerance), max(ref.times) * (1 + self.tolerance)
                if probe.note or not lo <= statistics.median(probe.times) <= hi:
                    ref = None   # the GPU's speed moved (or the probe failed): time the reference again
            if ref is None:
                if deadline.expired():
                    res.note = "the lab's time limit ran out"
                    return res
                ref = run_timed(exe_ref, ref_harness, case, step, work, deadline.limit(own_timeout), gpu_env, [])
                if ref.note:
                    res.note = f"the reference could not be timed: {ref.note}"
                    return res
                self.table[key] = ref
        wrong = same_answers(lab_name, case, step, mine, ref)
        if wrong:
            res.correct, res.note = False, wrong
            return res
        res.samples_student, res.samples_ref = list(mine.times), list(ref.times)
        res.student_ms, res.ref_ms = statistics.median(mine.times), statistics.median(ref.times)
        return res

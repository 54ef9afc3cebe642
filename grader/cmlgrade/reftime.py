"""The reference's timings.

The labs' timed steps are timed by the kit-only harnesses (perf_lab, at
the end): the reference and the student interleaved, every step in one
harness run a side and round, the device's copy bandwidth measured in the
same run as a ceiling. A step timed by its runner instead (a kit whose lab
has no harness timing) has its reference measured once per GPU per batch
(RefTimes), as follows.

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


ROUNDS = 2            # reference, student, reference, student: each its share of the repeats
COPY_REPEATS = 10     # timed device-to-device copies in each of the reference's runs
CEILING = 1.25        # a time implying more than this times the copy bandwidth is impossible


def perf_lab(exe_student: Executor, exe_ref: Executor, harness: Path, ref_harness: Path, lab_name: str,
             cases: dict[int, object], deadline: Deadline, own_timeout: float, cwd: Path, gpu_env: dict[str, str],
             readable: list[Path]) -> dict[int, PerfResult]:
    """Every harness-timed step of a lab for one submission, the reference
    and the student interleaved on the same GPU (the caller holds it alone:
    gpushare.py, gpuhold.py): ROUNDS rounds of a reference run then a student run, each
    one harness process timing every step's case (its own seed a step) for
    its share of the repeats. So a change of the GPU's speed during the
    timing falls on both alike. Each reference run also times the device's
    copy of the largest case's input (the kit's code: checkbase.COPY_STEP),
    and where the lab's checker counts a step's floating-point work
    (checker.flops: lab 03), its library on the first timed step's case
    (checkbase.LIBRARY_STEP: cuBLAS SGEMM). A student time that implies
    moving the step's bytes (checker.traffic) faster than CEILING x that
    bandwidth, or doing its work faster than CEILING x the library's rate,
    is flagged impossible and earns nothing, unless the reference's own
    time is (then the ceiling is not trusted, and said so)."""
    from dataclasses import replace
    from .checkbase import COPY_STEP, LIBRARY_STEP, copy_case, copy_gbs
    from .checker import CHECKERS, Timed, run_timed_cases, same_answers
    chk = CHECKERS[lab_name]
    steps = sorted(cases)
    per = {s: replace(cases[s], repeats=max(3, cases[s].repeats // ROUNDS)) for s in steps}
    copy = copy_case(max(c.count for c in per.values()), COPY_REPEATS, per[steps[0]].seed)
    library = replace(per[steps[0]], repeats=COPY_REPEATS) if chk.flops(per[steps[0]], steps[0]) else None
    ceilings = [(COPY_STEP, copy)] + ([(LIBRARY_STEP, library)] if library else [])
    mine = {s: Timed() for s in steps}
    ref = {s: Timed() for s in steps}
    copies: list[float] = []
    calls: list[float] = []   # the library's times
    ref_note = ""
    work = cwd / "timed"
    for _ in range(ROUNDS):
        for side in ("reference", "student"):
            if deadline.expired():
                ref_note = ref_note or "the lab's time limit ran out"
                break
            if side == "reference":
                got = run_timed_cases(exe_ref, ref_harness, ceilings + [(s, per[s]) for s in steps],
                                      work, deadline.limit(own_timeout), gpu_env, [])
                if not got[0].note:
                    copies += got[0].times
                if library and not got[1].note:
                    calls += got[1].times
                into = ref
                got = got[len(ceilings):]
            else:
                got = run_timed_cases(exe_student, harness, [(s, per[s]) for s in steps], work,
                                      deadline.limit(own_timeout), gpu_env, readable)
                into = mine
            for s, t in zip(steps, got):
                acc = into[s]
                if acc.note:
                    continue   # the first failure is the step's
                if t.note:
                    acc.note = t.note
                else:
                    acc.times += t.times
                    acc.samples += t.samples
    out: dict[int, PerfResult] = {}
    gbs = copy_gbs(copy, statistics.median(copies)) if copies else None
    rate = chk.flops(library, steps[0]) / (statistics.median(calls) * 1e-3) if library and calls else None  # FLOP/s
    for s in steps:
        res = out[s] = PerfResult(s, None, None, True)
        if mine[s].note:
            res.correct, res.note = False, mine[s].note
            continue
        if ref[s].note or ref_note or not ref[s].times or len(mine[s].times) != len(ref[s].times):
            res.note = (f"the reference could not be timed: {ref[s].note or ref_note or 'no timing'}")
            continue
        wrong = same_answers(lab_name, per[s], s, mine[s], ref[s])
        if wrong:
            res.correct, res.note = False, wrong
            continue
        res.samples_student, res.samples_ref = list(mine[s].times), list(ref[s].times)
        res.student_ms, res.ref_ms = statistics.median(mine[s].times), statistics.median(ref[s].times)
        if gbs is None:
            res.ceiling = "the device's copy bandwidth could not be measured"
            continue
        least_ms = chk.traffic(per[s], s) / (gbs * 1e6)   # the step's bytes at the copy bandwidth
        res.ceiling = (f"the least time: {chk.traffic(per[s], s) / 2 ** 20:.0f} MiB moved at the device's copy "
                       f"bandwidth ({gbs:.0f} GB/s, measured in the same run) takes {least_ms:.4f} ms")
        work = chk.flops(per[s], s)
        if work and rate:   # the step's work at the library's rate, when that is the larger bound
            work_ms = work / rate * 1e3
            res.ceiling += (f"; {work / 1e9:.1f} GFLOP at the library's rate ({rate / 1e12:.1f} TFLOP/s, cuBLAS "
                            f"measured in the same run) takes {work_ms:.4f} ms")
            if work_ms > least_ms:
                least_ms, res.bound = work_ms, "do the step's work"
        elif work:
            res.ceiling += "; the library's rate could not be measured"
        res.floor_ms = least_ms / CEILING
        if res.ref_ms < res.floor_ms:
            res.ceiling += (f"; the reference's own time ({res.ref_ms:.4f} ms) is below it, so no time is judged "
                            "against it")
            res.floor_ms = None
        elif res.student_ms < res.floor_ms:
            res.impossible = True
    return out

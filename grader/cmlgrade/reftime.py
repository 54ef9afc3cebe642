"""The reference's timings.

The labs' timed steps are timed by the kit-only harnesses (LabTiming, at
the end): the reference, the student and the reference again, every step
in one harness run each, the device's copy bandwidth measured in the
reference's runs as a ceiling. A step timed by its runner instead (a kit whose lab
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

import hashlib
import shlex
import statistics
import threading
from dataclasses import dataclass, field
from pathlib import Path

from .results import PerfResult
from .run import Deadline, _one_timing
from .sandbox import Executor
from .scorechecks import perf_credit

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


ROUNDS = 2            # the reference's runs, one before and one after the student's: each its share of the repeats
TRIES = 3             # a step that loses timing credit is timed again, at most this many times in all (best_of_tries)
AGREE = 0.05          # two tries whose ratios differ by no more than this are the step's own speed: no more tries
COPY_REPEATS = 10     # timed device-to-device copies in each of the reference's runs
CEILING = 1.25        # a time implying more than this times the copy bandwidth is impossible


def _round_seed(seed: int, k: int) -> int:
    """Round k's seed of a timed case: round 0 keeps the step's own, the
    others their own data (a launcher that keeps an earlier round's answers
    has nothing to reuse)."""
    return seed if k == 0 else int.from_bytes(hashlib.sha256(f"{seed}|round {k}".encode()).digest()[:8], "little") >> 1


class LabTiming:
    """Every harness-timed step of a lab for one submission: ROUNDS
    reference runs and one student run between them (R S R), each run one
    harness process timing every step's case, on the same GPU, which the
    caller holds alone while run() runs (gpushare.py, gpuhold.py). Round k
    has its own data (its own seed a step): the student's run times round
    0's cases, then round 1's, and the reference's k-th run round k's. A
    change of the GPU's speed during the timing falls on both alike.

    start(), called before the GPU is held, starts the reference's runs,
    which make their CUDA contexts and wait at their gates
    (checktime.GatedRun); run() lets them go in turn. A student's run is
    never started early: its code would run beside the reference's timing.
    close() ends whatever was started and not run.

    Each reference run also times the device's copy of the largest case's
    input (the kit's code: checkbase.COPY_STEP), and where the lab's checker
    counts a step's floating-point work (checker.flops: lab 03), its library
    on the first timed step's case (checkbase.LIBRARY_STEP: cuBLAS SGEMM).
    A student time that implies moving the step's bytes (checker.traffic)
    faster than CEILING x that bandwidth, or doing its work faster than
    CEILING x the library's rate, is flagged impossible and earns nothing,
    unless the reference's own time is (then the ceiling is not trusted,
    and said so)."""

    def __init__(self, exe_student: Executor, exe_ref: Executor, harness: Path, ref_harness: Path, lab_name: str,
                 cases: dict[int, object], deadline: Deadline, own_timeout: float, cwd: Path,
                 gpu_env: dict[str, str], readable: list[Path]):
        from dataclasses import replace
        from .checkbase import copy_case
        from .checker import CHECKERS
        self.exe_student, self.exe_ref, self.harness, self.ref_harness = exe_student, exe_ref, harness, ref_harness
        self.lab_name, self.deadline, self.own_timeout = lab_name, deadline, own_timeout
        self.env, self.readable, self.work = gpu_env, readable, cwd / "timed"
        self.chk = chk = CHECKERS[lab_name]
        self.steps = steps = sorted(cases)
        per = {s: replace(cases[s], repeats=max(3, cases[s].repeats // ROUNDS)) for s in steps}
        self.rounds = [{s: replace(c, seed=_round_seed(c.seed, k)) for s, c in per.items()} for k in range(ROUNDS)]
        self.copy = copy_case(max(c.count for c in per.values()), COPY_REPEATS, per[steps[0]].seed)
        self.library = (replace(per[steps[0]], repeats=COPY_REPEATS) if chk.flops(per[steps[0]], steps[0])
                        else None)   # round 0's: the FLOP count of the rate
        self.refs: list = []          # the reference's runs at their gates (start)
        self.started = False
        self.gate_problem = ""

    def _reference_cases(self, k: int) -> list[tuple[int, object]]:
        """The k-th reference run's cases: the ceilings (the library on this
        round's data), then every step's case of round k."""
        from dataclasses import replace
        from .checkbase import COPY_STEP, LIBRARY_STEP
        cases = self.rounds[k]
        library = [(LIBRARY_STEP, replace(cases[self.steps[0]], repeats=COPY_REPEATS))] if self.library else []
        return [(COPY_STEP, self.copy)] + library + [(s, cases[s]) for s in self.steps]

    def start(self) -> None:
        """Starts the reference's runs at their gates (before the GPU is held
        alone). Where a gate cannot be made (a file system without FIFOs),
        none is: run() then starts each reference run in its turn."""
        from .checker import GatedRun
        if self.started or self.deadline.expired():
            return
        self.started = True
        try:
            for k in range(ROUNDS):
                self.refs.append(GatedRun(self.exe_ref, self.ref_harness, self._reference_cases(k),
                                          self.work / f"reference-{k + 1}", max(1.0, self.deadline.left()), self.env,
                                          []))
        except OSError as e:
            self.close()
            self.refs, self.gate_problem = [], f"no gate ({e.strerror}): the reference's runs start in their turn"

    def close(self) -> None:
        for g in self.refs:
            g.stop()

    def run(self) -> dict[int, PerfResult]:
        """The timing, the GPU held alone by the caller: R S R."""
        from .checker import Timed, run_timed_cases
        self.start()
        mine = {s: Timed() for s in self.steps}
        ref = {s: Timed() for s in self.steps}
        copies: list[float] = []
        calls: list[float] = []   # the library's times

        def add(into, got):
            for s, t in zip(self.steps, got):
                acc = into[s]
                if acc.note:
                    continue   # the first failure is the step's
                if t.note:
                    acc.note = t.note
                else:
                    acc.times += t.times
                    acc.samples += t.samples

        def reference(k):
            if self.refs:
                got = self.refs[k].go()
            else:   # not started at a gate: started now
                got = run_timed_cases(self.exe_ref, self.ref_harness, self._reference_cases(k),
                                      self.work / f"reference-{k + 1}", self.deadline.limit(self.own_timeout),
                                      self.env, [])
            if not got[0].note:
                copies.extend(got[0].times)
            if self.library and not got[1].note:
                calls.extend(got[1].times)
            add(ref, got[2 if self.library else 1:])   # after the ceilings

        # R, then S (round 0's cases, then round 1's), then the other R's; the lab's time running out ends it
        ref_note = ""
        for k in range(ROUNDS):
            if self.deadline.expired():
                ref_note = "the lab's time limit ran out"
                break
            reference(k)
            if k == 0:
                if self.deadline.expired():
                    ref_note = "the lab's time limit ran out"
                    break
                both = [(s, r[s]) for r in self.rounds for s in self.steps]
                got = run_timed_cases(self.exe_student, self.harness, both, self.work / "student",
                                      self.deadline.limit(self.own_timeout * ROUNDS), self.env, self.readable)
                for j in range(ROUNDS):
                    add(mine, got[j * len(self.steps):(j + 1) * len(self.steps)])
        self.close()
        return self._judge(mine, ref, copies, calls, ref_note)

    def _judge(self, mine, ref, copies, calls, ref_note) -> dict[int, PerfResult]:
        from .checkbase import copy_gbs
        from .checker import same_answers
        chk, steps, first = self.chk, self.steps, self.rounds[0]
        out: dict[int, PerfResult] = {}
        gbs = copy_gbs(self.copy, statistics.median(copies)) if copies else None
        rate = (chk.flops(self.library, steps[0]) / (statistics.median(calls) * 1e-3) if self.library and calls
                else None)   # FLOP/s
        for s in steps:
            res = out[s] = PerfResult(s, None, None, True)
            if mine[s].note:
                res.correct, res.note = False, mine[s].note
                continue
            if ref[s].note or ref_note or not ref[s].times or len(mine[s].times) != len(ref[s].times):
                res.note = (f"the reference could not be timed: {ref[s].note or ref_note or 'no timing'}")
                continue
            wrong = same_answers(self.lab_name, first[s], s, mine[s], ref[s])
            if wrong:
                res.correct, res.note = False, wrong
                continue
            res.samples_student, res.samples_ref = list(mine[s].times), list(ref[s].times)
            res.order = "the reference's half before and half after the student's"
            res.student_ms, res.ref_ms = statistics.median(mine[s].times), statistics.median(ref[s].times)
            if gbs is None:
                res.ceiling = "the device's copy bandwidth could not be measured"
                continue
            least_ms = chk.traffic(first[s], s) / (gbs * 1e6)   # the step's bytes at the copy bandwidth
            res.ceiling = (f"the least time: {chk.traffic(first[s], s) / 2 ** 20:.0f} MiB moved at the device's copy "
                           f"bandwidth ({gbs:.0f} GB/s, measured in the same run) takes {least_ms:.4f} ms")
            work = chk.flops(first[s], s)
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


def perf_lab(exe_student: Executor, exe_ref: Executor, harness: Path, ref_harness: Path, lab_name: str,
             cases: dict[int, object], deadline: Deadline, own_timeout: float, cwd: Path, gpu_env: dict[str, str],
             readable: list[Path]) -> dict[int, PerfResult]:
    """LabTiming's timing in one call: the reference's runs started, and
    run, with the GPU held by the caller (the tests; the grader starts them
    before it holds the GPU: labmeasure.MeasureStage._timing)."""
    t = LabTiming(exe_student, exe_ref, harness, ref_harness, lab_name, cases, deadline, own_timeout, cwd, gpu_env,
                  readable)
    try:
        return t.run()
    finally:
        t.close()


def _judged(r: PerfResult) -> bool:
    """A try with a time against the reference's: right, both timed, not
    flagged impossible."""
    return r.correct and not r.impossible and r.student_ms is not None and r.ref_ms is not None and r.ref_ms > 0


def try_again(tries: list[PerfResult], full_ratio: float) -> bool:
    """Whether a step timed `tries` so far is timed once more: its last try
    lost credit (over full_ratio x the reference's time), fewer than TRIES
    were made, and the last two did not agree (within AGREE of each other's
    ratio: then the step is that slow, and another try would only cost
    time). A wrong answer, an impossible time or a try without a time is
    never tried again: it stands (best_of_tries)."""
    last = tries[-1]
    if len(tries) >= TRIES or not _judged(last) or perf_credit(last.student_ms, last.ref_ms, full_ratio, True) >= 1.0:
        return False
    if len(tries) >= 2 and _judged(tries[-2]):
        a, b = last.student_ms / last.ref_ms, tries[-2].student_ms / tries[-2].ref_ms
        if abs(a - b) <= AGREE * min(a, b):
            return False
    return True


def best_of_tries(tries: list[PerfResult]) -> PerfResult:
    """A step's verdict from its tries (each its own R S R, the GPU held
    alone). Another process on the GPU (one the grader cannot hold off: a
    kit test's sanitizer, another user's job) can only slow a try, the
    student's run as well as the reference's: the try with the least ratio
    of the student's median to the reference's counts. A wrong answer or an
    impossible time in any try stands: no try undoes it."""
    bad = next((r for r in tries if not r.correct or r.impossible), None)
    judged = [r for r in tries if _judged(r)]
    best = bad or (min(judged, key=lambda r: r.student_ms / r.ref_ms) if judged else tries[0])
    best.tries = len(tries)
    return best

"""The run stage's measures of a runner: Nsight Compute's counters (the
GPU to itself while they are read) and a step's timings, the student's
and the reference's runs alternating (run_perf)."""
from __future__ import annotations

import shlex
import statistics
from pathlib import Path

from .gpuhold import profiling_on
from .parsers import CounterReport, ReportError, parse_counters, parse_runner_json
from .results import PerfResult
from .runbase import Deadline
from .sandbox import Executor


def run_counters(exe: Executor, runner: Path, steps: list[int], timeout: float, cwd: Path,
                 gpu_env: dict[str, str], readable: list[Path]) -> CounterReport:
    with profiling_on(exe, gpu_env, Deadline(timeout)):   # the runner's counters come from Nsight Compute: the GPU to
        # itself, and the host's Nsight Compute lock (gpuhold.py)
        r = exe.run([str(runner), "--step", ",".join(str(s) for s in sorted(set(steps))), "--counters"], cwd=cwd,
                    timeout=timeout, writable=[cwd], readable=readable, env=gpu_env)
    if r.timed_out:
        return CounterReport(False, "timed out")
    rep = parse_counters(r.stdout)
    if not rep.available and r.rc not in (0, 1) and rep.reason == "the runner printed no counter lines":
        tail = (r.stderr.strip().splitlines() or [""])[-1]
        return CounterReport(False, f"the runner failed (exit {r.rc}) {tail}".strip())
    return rep


def _one_timing(exe: Executor, runner: Path, step: int, args: list[str], timeout: float, cwd: Path,
                gpu_env: dict[str, str], readable: list[Path]):
    r = exe.run([str(runner), "--step", str(step), *args, "--json"], cwd=cwd, timeout=timeout, writable=[cwd],
                readable=readable, env=gpu_env)
    if r.timed_out:
        return None, False, "timed out"
    try:
        rows = parse_runner_json(r.stdout)
    except ReportError as e:
        return None, False, f"{e} (exit {r.rc})"
    row = rows.get(step)
    if row is None:
        return None, False, "the runner reported no row for the step"
    return row.median_ms, row.correct and row.status == "ok", "" if row.status == "ok" else f"runner: {row.status}"


def run_perf(exe_student: Executor, exe_ref: Executor, runner: Path, ref_runner: Path, step: int, args: str,
             repeats: int, deadline: Deadline, own_timeout: float, cwd: Path, gpu_env: dict[str, str],
             readable: list[Path]) -> PerfResult:
    """Student and reference runs alternate (S R R S S R ...), `repeats` each;
    the result is the median of each side's median_ms."""
    a = shlex.split(args)
    res = PerfResult(step, None, None, True)
    for i in range(repeats):
        order = ("s", "r") if i % 2 == 0 else ("r", "s")
        for who in order:
            if deadline.expired():
                res.note = "the lab's time limit ran out"
                break
            if who == "s":
                ms, ok, note = _one_timing(exe_student, runner, step, a, deadline.limit(own_timeout), cwd, gpu_env,
                                           readable)
                if not ok:
                    res.correct, res.note = False, note or "wrong answer"
                    return res
                res.samples_student.append(ms)
            else:
                ms, ok, note = _one_timing(exe_ref, ref_runner, step, a, deadline.limit(own_timeout), cwd, gpu_env, [])
                if ms is None:
                    res.note = f"the reference could not be timed: {note}"
                    return res
                res.samples_ref.append(ms)
    if res.samples_student and res.samples_ref:
        res.student_ms = statistics.median(res.samples_student)
        res.ref_ms = statistics.median(res.samples_ref)
    return res

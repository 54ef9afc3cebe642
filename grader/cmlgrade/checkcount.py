"""A step's hardware counters, measured by the grader's own Nsight Compute
run on the kit-only harness (counters_step; counters_report for a lab's
counter checks, many steps in one marked run: checkprofile.lab_profile),
and the sum of a metric in ncu's CSV (parse_ncu_csv). What the student's
code prints counts for nothing."""
from __future__ import annotations

from pathlib import Path

from .harnessio import write_input
from .parsers import UNREAD, ncu_value
from .profrun import profiled_run, read_profile
from .runbase import Deadline
from .sandbox import Executor


# ------------------------------------------------------------ counters (ncu run by the grader on the harness)

def parse_ncu_csv(text: str, metric: str, unread: list[str] | None = None) -> tuple[float | None, int]:
    """The sum of `metric` over the kernels ncu's CSV lists, and how many
    launches it lists; the sum is None where a launch's value is no number
    (parsers.ncu_value; why, in `unread`): counted again, never summed
    without it."""
    import csv
    import io
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    # ncu writes its own "==PROF==" lines into the log too: the table starts at its header row
    start = next((i for i, r in enumerate(rows) if "Metric Name" in r and "Metric Value" in r), None)
    if start is None:
        return 0.0, 0
    rows = rows[start:]
    head = rows[0]
    try:
        name_at, value_at = head.index("Metric Name"), head.index("Metric Value")
    except ValueError:
        return 0.0, 0
    kernel_at = head.index("Kernel Name") if "Kernel Name" in head else None
    total: float | None = 0.0
    n = 0
    for r in rows[1:]:
        if len(r) > max(name_at, value_at) and r[name_at] == metric:
            v = ncu_value(r[value_at])
            if v is None:
                if unread is not None and total is not None:
                    kernel = r[kernel_at][:80] if kernel_at is not None and len(r) > kernel_at else "a launch"
                    unread.append(UNREAD.format(cell=r[value_at], metric=metric, kernel=kernel))
                total = None
            elif total is not None:
                total += v
            n += 1
    return total, n


def counters_step(exe: Executor, harness: Path, lab_name: str, step: int, seed: int, metric: str,
                  out_dir: Path, timeout: float, env: dict[str, str], readable: list[Path],
                  tag: str) -> tuple[float | None, str]:
    """A step's counter, measured by Nsight Compute run by the grader on the
    harness (the checker's counter cases of the step): ncu writes its CSV into
    a file of the grader's folder, which no student code can write (the
    object checks refuse file access), so what the student's code prints
    counts for nothing. (value, "") or (None, why not)."""
    from .checker import CHECKERS, make_cases   # read when called: checker.py imports this module
    from .run import find_tool
    ncu = find_tool("ncu")
    if ncu is None:
        return None, "ncu not found"
    chk = CHECKERS[lab_name]
    cases = chk.counter_cases(chk.step_cases(make_cases(lab_name, seed, False), step), step)
    work = out_dir / f"counters-{tag}-step{step}"
    work.mkdir(parents=True, exist_ok=True)
    inp, outp, log = work / "input.bin", work / "output.bin", work / "ncu.csv"
    write_input(inp, step, cases)
    for p in (outp, log):
        p.unlink(missing_ok=True)
    # every kernel the step launches: the harness runs nothing else (the manifest's kernel regex is the
    # runner's, which launches copies and references too)
    # the GPU to itself, its context made before (profrun.py), and the host's Nsight Compute lock (gpuhold.py)
    r = profiled_run(exe, [ncu, "--csv", "--log-file", str(log), "--clock-control", "none", "--metrics", metric,
                           str(harness), str(inp), str(outp)], work, timeout, env, readable, Deadline(timeout))
    text, bad = read_profile(log, 1 << 22)
    unread: list[str] = []
    total, n = parse_ncu_csv(text, metric, unread)
    if r.timed_out:
        return None, f"timed out after {timeout:.0f} s"
    if bad:
        return None, bad
    if total is None:
        return None, unread[0]
    if n == 0:
        why = next((ln.strip() for ln in (r.stdout + r.stderr).splitlines() if "ERR_" in ln or "==ERROR==" in ln), "")
        return None, why or "ncu profiled no kernel of the step"
    return total, ""


def counters_report(exe: Executor, harness: Path, lab, steps: list[int], seed: int, out_dir: Path, timeout: float,
                    env: dict[str, str], readable: list[Path], tag: str):
    """A CounterReport (parsers.py) of the lab's counter checks for `steps`,
    every value from the grader's own ncu run on the harness: the lab's
    profile with nothing traced (checkprofile.lab_profile: the steps in one
    marked run, a step that failed in it counted alone)."""
    from .checkprofile import lab_profile   # read when called: checkprofile imports this module
    from .parsers import CounterReport
    steps = [s for s in dict.fromkeys(steps) if any(c.step == s for c in lab.counter_checks)]
    if not steps:
        return CounterReport(True, "")
    return lab_profile(exe, harness, lab, [], steps, seed, out_dir, timeout, timeout, env, readable, tag)[1]

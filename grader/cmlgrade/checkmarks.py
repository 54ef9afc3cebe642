"""One Nsight Compute run of the harness over several steps' cases
(marked_ncu_run), each step's cases after the kit's mark (mark_case,
hn_mark.cu's kernel), and ncu's CSV of that run split back into each step's
own at the marks (split_ncu_by_marks). The counters (checkcount.py) and the
technique traces (checktrace.py) measure many steps in one run with it, and
a lab's profile (checkprofile.py) both at once."""
from __future__ import annotations

from pathlib import Path

from .checkbase import FILL_INTS, Case
from .harnessio import read_output, write_input
from .profrun import profiled_run, read_profile
from .runbase import Deadline
from .sandbox import Executor


MARK_STEP = 0xFFFFFFFF     # harness.h's HN_MARK_STEP
MARK_KERNEL = "cml_hn_mark"   # hn_mark.cu's kernel: where a step's launches begin


def mark_case(step: int) -> Case:
    """The mark before a step's cases in a traced run of several steps."""
    return Case(step, 0, 0, b"", f"mark of step {step}", fill=FILL_INTS)


def split_ncu_by_marks(text: str, steps: list) -> dict | None:
    """ncu's CSV of a marked run of several steps (segments) split at the
    kit's marks: each one's own CSV (the header and the rows of its
    launches); None unless the marks are exactly one per segment, before any
    other launch."""
    import csv
    import io
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    start = next((i for i, r in enumerate(rows) if "Metric Name" in r and "Kernel Name" in r), None)
    if start is None:
        return None
    head = rows[start]
    at = {c: head.index(c) for c in ("ID", "Kernel Name") if c in head}
    if len(at) < 2:
        return None
    mine: dict[int, list[list[str]]] = {}
    marks, seen = 0, set()
    for r in rows[start + 1:]:
        if len(r) <= max(at.values()):
            continue
        launch = (r[at["ID"]], r[at["Kernel Name"]])   # ncu's IDs count launches in order
        if launch[1] == MARK_KERNEL:
            if launch not in seen:
                if marks >= len(steps):
                    return None
                mine[steps[marks]] = []
                marks += 1
            seen.add(launch)
            continue
        if not marks:
            return None   # a launch before the first mark: not the harness's order
        mine[steps[marks - 1]].append(r)
    return {s: csv_text([head] + got) for s, got in mine.items()} if marks == len(steps) else None


def csv_text(rows: list[list[str]]) -> str:
    import csv
    import io
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    return buf.getvalue()


def segment_step(key) -> int:
    """The step of a marked run's segment: the key itself, or the last
    item of a tuple key such as ("count", 3)."""
    return key if isinstance(key, int) else key[-1]


def marked_ncu_run(exe: Executor, harness: Path, lab_name: str, per: dict, metrics: list[str],
                   work: Path, timeout: float, env: dict[str, str], readable: list[Path]) -> dict:
    """One Nsight Compute run of the harness over several segments of cases,
    each after the kit's mark (MARK_STEP, hn_mark.cu): each segment's own CSV
    (split_ncu_by_marks), for the segments whose mark and cases all ended
    without a CUDA error. A segment is a step's cases, keyed by the step, or
    keyed by a tuple whose last item is the step (segment_step), so that one
    run can hold a step twice (its traced cases and its counter cases). A
    segment left out (a sticky error, a hang, marks that are not the
    grader's) is for the caller to measure alone."""
    from .checker import CHECKERS   # read when called: checker.py imports this module
    from .run import find_tool
    ncu = find_tool("ncu")
    if ncu is None or len(per) < 2:
        return {}
    chk = CHECKERS[lab_name]
    steps = list(per)
    cases: list[Case] = []
    order: list[int] = []
    for s in steps:
        cases += [mark_case(segment_step(s))] + per[s]
        order += [MARK_STEP] + [segment_step(s)] * len(per[s])
    work.mkdir(parents=True, exist_ok=True)
    inp, outp, log = work / "input.bin", work / "output.bin", work / "ncu.csv"
    write_input(inp, order, cases)
    for p in (outp, log):
        p.unlink(missing_ok=True)
    cmd = [ncu, "--csv", "--log-file", str(log), "--clock-control", "none", "--print-kernel-base", "mangled",
           "--metrics", ",".join(metrics), str(harness), str(inp), str(outp)]
    # the GPU to itself, its context made before (profrun.py), and the host's Nsight Compute lock (gpuhold.py)
    r = profiled_run(exe, cmd, work, timeout, env, readable, Deadline(timeout))
    text, why = read_profile(log, 1 << 24)
    outs = read_output(outp, cases, [0 if o == MARK_STEP else chk.out_bytes(c) for o, c in zip(order, cases)])
    split = None if r.timed_out or why else split_ncu_by_marks(text, steps)
    if split is None:
        return {}
    got, k = {}, 0
    for s in steps:
        ended = outs[k:k + 1 + len(per[s])]   # its mark and its cases
        k += 1 + len(per[s])
        if all(o is not None and o.err == 0 for o in ended):
            got[s] = split[s]
    return got

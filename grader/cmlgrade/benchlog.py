"""Where a graded class's time went, from the grader's process log
(CMLGRADE_PROCESS_LOG, sandbox.Executor: a line a process, and under a
harness's line its trace, harness.h's hn_trace): the processes by kind,
their count and seconds, and the CUDA contexts the harnesses made. The
benchmark prints it with --process-log."""
from __future__ import annotations

import re
import statistics
from pathlib import Path

_PROCESS = re.compile(r"^ *([0-9.]+) s  rc (\S+)  (.*?): (\S+)(.*)$")
_TRACE = re.compile(r"^ +harness: +([0-9.]+) s  case [0-9]+: (.*)$")

KINDS = ("build", "test program", "harness: checks", "harness: timing", "Nsight Compute", "compute-sanitizer",
         "verifier", "other")


def kind_of(cwd: str, program: str) -> str:
    """A logged process's kind, from its folder and program."""
    name = program.rsplit("/", 1)[-1]
    if name in ("cmake", "make", "ninja"):
        return "build"
    if name == "ncu":
        return "Nsight Compute"
    if name == "compute-sanitizer":
        return "compute-sanitizer"
    if "_harness" in name:
        return "harness: timing" if "/timed" in cwd else "harness: checks"
    if name.startswith("test_"):
        return "test program"
    if name.endswith("_verify"):
        return "verifier"
    return "other"


_LAB_DIR = re.compile(r"^([0-9]{2}_[a-z0-9_]+?)(-gpu[0-9]+)?$")


def lab_of(cwd: str) -> str:
    """The lab a logged process ran for, from its folder (a student's
    results/<student>/<lab>/..., the reference's results/<lab>-gpuN/...);
    "" where the folder names none (a slot's build of several labs)."""
    for part in cwd.split("/"):
        m = _LAB_DIR.match(part)
        if m:
            return m.group(1)
    return ""


def summarize(text: str) -> dict:
    """{"kinds": {kind: {"n", "seconds"}}, "labs": {lab: {kind: seconds}}
    (lab_of; "" for none), "contexts": [s, ...] (each harness's, from its
    trace; under Nsight Compute too), "gate_wait_s": seconds the gated
    runs (the reference's timing, profrun.py's Nsight Compute runs) waited
    at their gates for their turn, ready (in their processes' seconds,
    taken out of their kinds')}."""
    kinds: dict[str, dict] = {}
    labs: dict[str, dict[str, float]] = {}
    contexts: list[float] = []
    waited = 0.0
    last, made = None, None   # the process a trace line is of (its line comes first), its context's time
    mine: dict[str, float] = {}   # that process's lab's seconds by kind
    kind = ""
    for line in text.splitlines():
        m = _PROCESS.match(line)
        if m:
            kind = kind_of(m.group(3), m.group(4))
            last = kinds.setdefault(kind, {"n": 0, "seconds": 0.0})
            last["n"] += 1
            last["seconds"] += float(m.group(1))
            mine = labs.setdefault(lab_of(m.group(3)), {})
            mine[kind] = mine.get(kind, 0.0) + float(m.group(1))
            made = None
            continue
        m = _TRACE.match(line)
        if not m or last is None:
            continue
        at, what = float(m.group(1)), m.group(2)
        if what == "the CUDA context made":
            made = at
            contexts.append(at)
        elif what == "the profiler's warm-up launched" and made is not None:
            made = at   # a profiled run's (profrun.py): ready at its gate from here
        elif what == "let go" and made is not None:
            waited += at - made
            last["seconds"] -= at - made
            mine[kind] -= at - made
    return {"kinds": {k: {"n": v["n"], "seconds": round(v["seconds"], 2)} for k, v in kinds.items()},
            "labs": {lab: {k: round(v, 2) for k, v in got.items()} for lab, got in labs.items()},
            "contexts": contexts, "gate_wait_s": round(waited, 2)}


def lines(s: dict, labs: int) -> list[str]:
    """The summary as printed, with each kind's seconds per submission-lab."""
    out = ["every process of the run (those once per batch too), by kind:",
           f"{'process kind':<20} {'runs':>6} {'seconds':>9} {'per sub-lab':>12}"]
    for k in sorted(s["kinds"], key=lambda k: KINDS.index(k) if k in KINDS else len(KINDS)):
        v = s["kinds"][k]
        out.append(f"{k:<20} {v['n']:>6} {v['seconds']:>9.1f} {v['seconds'] / max(1, labs):>12.2f}")
    by_lab = {lab: got for lab, got in s.get("labs", {}).items() if lab}
    if by_lab:
        out.append("by lab (the students' processes and the reference's; builds of several labs at once not "
                   "counted), the two costliest kinds:")
        for lab in sorted(by_lab):
            got = by_lab[lab]
            top = sorted(got.items(), key=lambda kv: -kv[1])[:2]
            out.append(f"{lab:<20} {sum(got.values()):>8.1f} s: " + ", ".join(f"{k} {v:.1f} s" for k, v in top))
    c = s["contexts"]
    if c:
        out.append(f"CUDA contexts the harnesses made: {len(c)}, median {statistics.median(c):.2f} s, "
                   f"max {max(c):.2f} s, {sum(c):.1f} s in all")
    if s["gate_wait_s"]:
        out.append(f"the gated runs (the reference's timing, every Nsight Compute run) waited {s['gate_wait_s']:.1f} s "
                   "in all at their gates, ready to go (not counted above)")
    return out


def read(path: Path) -> dict:
    try:
        return summarize(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return summarize("")

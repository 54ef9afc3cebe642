"""An Nsight Compute run of a kit harness, started before the GPU is held
alone (docs/grading.md §9, "One Nsight Compute run a lab").

Every ncu run the grader makes (a lab's profile, a step's trace or
counters alone) profiles its kernels with the GPU to itself. Most of such a
run is not its kernels: ncu's start, the harness's CUDA context made under
the profiler, and the profiler's setup at the first kernel it profiles (on
an H200, lab 01's profile: 4.3 s in all, its 21 kernels 2.1 s of it). So
profiled_run starts the harness with a gate (harness.h: the FIFO, then
`warm`) while it holds a share of the GPU like any test process: the
harness makes its context, launches the kit's empty kernel cml_hn_warm
(hn_mark.cu) so that ncu sets itself up, and waits at the gate. Then the
grader takes the GPU alone without letting its share go first
(gpushare's upgrade: the others' processes end, no other alone() comes
between), and lets the harness go. No student code runs before the gate
(the harness's main is the kit's, and the object checks refuse a
student's constructors), and while the student's process exists no other
submission is timed on that GPU.

The warm-up launch is the run's first (ncu's ID 0) and no step's:
read_profile drops it from the CSV, and a run whose first launch is not it
counts for nothing. Where the others' processes hold the GPU for longer
than the run's own time limit, the gated run is stopped and the run is made
as before, the GPU held alone first (so the wait never eats its time); the
same where no FIFO can be made. The gate itself is harnessio.HarnessGate,
the reference's timing runs' too."""
from __future__ import annotations

import csv
import io
import threading
import time
from pathlib import Path

from .gpuhold import NSIGHT_BUSY, nsight_on
from .gpushare import share_of
from .harnessio import HarnessGate
from .process import ProcResult
from .sandbox import Executor

WARM_KERNEL = "cml_hn_warm"   # hn_mark.cu: the gated harness's launch before the gate


NOT_WARM = "the profile's first launch is not the kit's warm-up: not the harness's order"


def read_log(log: Path, cap: int) -> str:
    """A tool's log file (at most `cap` characters), "" where there is none."""
    try:
        return log.read_text(encoding="utf-8", errors="replace")[:cap] if log.is_file() else ""
    except OSError:
        return ""


def read_profile(log: Path, cap: int) -> tuple[str, str]:
    """ncu's CSV of a profiled_run (at most `cap` characters) without its
    warm-up launch, and "" or why it counts for nothing: a run whose first
    launch is not the kit's warm-up (NOT_WARM). No file, or a CSV without
    launches, is ("", "") or the text as it is: the callers say why from
    ncu's messages."""
    text = read_log(log, cap)
    rows = list(csv.reader(io.StringIO(text)))
    start = next((i for i, r in enumerate(rows) if "ID" in r and "Kernel Name" in r), None)
    if start is None:
        return text, ""
    head = rows[start]
    at_id, at_name = head.index("ID"), head.index("Kernel Name")
    body = [r for r in rows[start + 1:] if len(r) > max(at_id, at_name)]
    if not body:
        return text, ""
    first = body[0][at_id]   # ncu's IDs count the profiled launches in order: the warm-up is 0
    if not body[0][at_name].startswith(WARM_KERNEL):
        return "", NOT_WARM
    buf = io.StringIO()   # written as ncu writes it: every field quoted, a metric of a launch a line
    out = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    out.writerows([head] + [r for r in body if r[at_id] != first])
    return buf.getvalue(), ""


def _start(exe: Executor, ncu_argv: list[str], gate: HarnessGate, work: Path, timeout: float,
           env: dict[str, str], readable: list[Path]) -> tuple[threading.Thread, dict]:
    """The gated harness under ncu, in a thread of its own; its result
    lands in the dict's "r". Never a share of its own (shared=False): the
    caller holds what the run needs."""
    got: dict[str, ProcResult] = {}

    def run():
        got["r"] = exe.run([*ncu_argv, str(gate.path), "warm"], cwd=work, timeout=timeout, writable=[work],
                           readable=readable, env=env, shared=False)
    thread = threading.Thread(target=run, name="gated-profile", daemon=True)
    thread.start()
    return thread, got


def profiled_run(exe: Executor, ncu_argv: list[str], work: Path, timeout: float, env: dict[str, str],
                 readable: list[Path], deadline=None) -> ProcResult:
    """`ncu_argv` (ncu, its options, the harness, INPUT, OUTPUT) with the
    gate and `warm` added, in `work`: the harness started while this thread
    holds a share of its GPU, let go once the GPU is this thread's alone;
    the host's Nsight Compute lock held throughout. The run has `timeout`
    from its go (the module's docstring)."""
    share = share_of(env.get("CUDA_VISIBLE_DEVICES"))
    t0 = time.monotonic()
    with nsight_on(exe, env, deadline) as why:
        if why == NSIGHT_BUSY:   # without the GPU's turn another profile may be gated there: as before
            return _alone_first(share, exe, ncu_argv, work, timeout, env, readable)
        try:
            gate = HarnessGate(work / "gate")
        except OSError:   # a file system without FIFOs: as before
            return _alone_first(share, exe, ncu_argv, work, timeout, env, readable)
        try:
            # its context and warm-up beside others' work, never inside another's alone(); the share held
            # until the GPU is this thread's alone (upgrade), so that no other alone() (another submission's
            # timing) has the GPU while this process exists
            with share.shared():
                # its own time limit, and as long again for the wait at its gate (stopped beyond it)
                thread, got = _start(exe, ncu_argv, gate, work, 2 * timeout, env, readable)
                if not gate.wait_ready(thread.is_alive):   # it ended before its gate (no device, a harness
                    thread.join()                          # that failed): that result stands
                    return got["r"]
                try:
                    with share.alone(timeout=max(0.0, timeout - (time.monotonic() - t0)), upgrade=True):
                        gate.release(b"g", thread.is_alive)
                        thread.join()
                    return got["r"]
                except TimeoutError:
                    gate.release(b"s", thread.is_alive)   # stopped unrun (status 3), the share still held
                    thread.join()
        finally:
            gate.remove()
        return _alone_first(share, exe, ncu_argv, work, timeout, env, readable)


def _alone_first(share, exe: Executor, ncu_argv: list[str], work: Path, timeout: float, env: dict[str, str],
                 readable: list[Path]) -> ProcResult:
    """The run as before the gate: the GPU alone first, then the harness
    started, with its whole time limit. Its gate is a plain file that says
    'g' (no FIFO needed: it goes at once), so that it warms up too and its
    profile reads as profiled_run's."""
    go = work / "go"
    go.write_bytes(b"g")
    try:
        with share.alone():
            return exe.run([*ncu_argv, str(go), "warm"], cwd=work, timeout=timeout, writable=[work],
                           readable=readable, env=env)
    finally:
        go.unlink(missing_ok=True)

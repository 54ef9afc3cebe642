"""The harness's files and its errors' names (harness.h): the input file the
grader writes (write_input: every case with the step that runs it), the
output file it reads back (read_output: each case's CUDA error, output,
input as read back and timed repeats, never more than the cases can hold)
and the name of a CUDA error number (cuda_error). Nothing here runs a
harness or judges what it wrote."""
from __future__ import annotations

import errno
import functools
import os
import re
import shutil
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

from .checkbase import Case


@functools.cache
def _cuda_error_names() -> dict[int, str]:
    """cudaError_t's names by number, read from the toolkit's driver_types.h
    where there is one, else from the CPU path's cuda_runtime_api.h (the
    codes that runtime returns)."""
    heads = [Path(__file__).resolve().parents[2] / "common/cpu/include/cuda_runtime_api.h"]
    nvcc = shutil.which("nvcc")
    homes = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
    homes += [str(Path(nvcc).resolve().parent.parent)] if nvcc else []
    heads += [Path(h) / "include/driver_types.h" for h in homes if h]
    names: dict[int, str] = {}
    for h in heads:   # the toolkit's last: its names win
        try:
            text = h.read_text(errors="replace")
        except OSError:
            continue
        names.update({int(n): name for name, n in re.findall(r"\b(cudaError\w*)\s*=\s*(\d+)", text)})
    return names


def cuda_error(code: int) -> str:
    """'CUDA error 700 (cudaErrorIllegalAddress)': the number a student can
    look up and the name that says what it is."""
    name = _cuda_error_names().get(code)
    return f"CUDA error {code} ({name})" if name else f"CUDA error {code}"


VERSION = 2          # harness.h's file format
SAMPLES = 32         # HN_SAMPLES


def write_input(path: Path, step: int | list[int], cases: list[Case]) -> None:
    """The harness's input: every case run by `step` (or case k by step[k]).
    Checked cases of every step and both seeds share a process
    (check_together); timed cases of several steps share one too
    (reftime.LabTiming), each step's case with a seed of its own."""
    steps = step if isinstance(step, list) else [step] * len(cases)
    with path.open("wb") as f:
        f.write(b"CMLH" + struct.pack("<II", VERSION, len(cases)))
        for s, c in zip(steps, cases):
            f.write(struct.pack("<IIQQQIIQ", s, c.kind, c.a, c.b, c.count, c.fill, c.repeats, c.seed))
            if not c.fill:
                f.write(c.data)


@dataclass
class Output:
    err: int                      # the case's CUDA error
    out: bytes                    # its output (empty for a timed case)
    after: bytes                  # its input as read back (empty for a timed case)
    times: list[float] = field(default_factory=list)                       # ms per timed repeat
    samples: list[list[tuple[int, int]]] = field(default_factory=list)     # per repeat: (word, u32 value)
    timed_err: int = 0


def read_output(path: Path, cases: list[Case], expect_out: list[int]) -> list[Output | None]:
    """Each case's Output, or None where the file ends early or is
    malformed. Never reads more than the cases can hold, whatever the
    file's size."""
    res: list[Output | None] = [None] * len(cases)
    try:
        f = path.open("rb")
    except OSError:
        return res
    with f:
        head = f.read(12)
        if len(head) != 12 or head[:4] != b"CMLO" or struct.unpack("<II", head[4:]) != (VERSION, len(cases)):
            return res
        for k, c in enumerate(cases):
            h = f.read(12)
            if len(h) != 12:
                break
            err, nb = struct.unpack("<iQ", h)
            if nb > (0 if c.repeats else max(expect_out[k], 4)) or nb > (1 << 31):
                break
            out = f.read(nb)
            ib = f.read(8)
            want_in = 0 if c.repeats else len(c.data)
            if len(out) != nb or len(ib) != 8 or struct.unpack("<Q", ib)[0] != want_in:
                break
            after = f.read(want_in)
            nr = f.read(4)
            if len(after) != want_in or len(nr) != 4:
                break
            nrep = struct.unpack("<I", nr)[0]
            if nrep not in (0, c.repeats):
                break
            o = Output(err, out, after)
            rec = 4 + 12 * SAMPLES
            for _ in range(nrep):
                r = f.read(rec)
                if len(r) != rec:
                    break
                o.times.append(struct.unpack_from("<f", r)[0])
                o.samples.append([struct.unpack_from("<QI", r, 4 + 12 * j) for j in range(SAMPLES)])
            te = f.read(4)
            if len(o.times) != nrep or len(te) != 4:
                break
            o.timed_err = struct.unpack("<i", te)[0]
            res[k] = o
    return res


class HarnessGate:
    """A harness's gate (harness.h): a FIFO the harness opens once it is
    ready (its context made; with `warm`, its warm-up launched) and reads
    one byte from: 'g' runs its cases, anything else ends it with status 3.
    OSError where the file system cannot hold a FIFO. The reference's timing
    runs (checktime.GatedRun) and every Nsight Compute run (profrun.py)
    wait at one."""

    def __init__(self, path: Path):
        self.path = path
        path.unlink(missing_ok=True)
        os.mkfifo(path, 0o600)
        self._fd: int | None = None

    def wait_ready(self, alive) -> bool:
        """Waits until the harness has opened the gate, or its run has
        ended without (alive() false: False)."""
        while self._fd is None:
            try:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as e:
                if e.errno != errno.ENXIO:   # ENXIO: no reader yet
                    raise
                if not alive():
                    return False
                time.sleep(0.001)
        return True

    def release(self, byte: bytes, alive) -> None:
        """Writes `byte` once the harness waits at the gate, or nothing once
        its run has ended (it never got there)."""
        if not self.wait_ready(alive):
            return
        try:
            os.write(self._fd, byte)
        except OSError:
            pass   # it ended between its open and its read (EPIPE): its result says how
        finally:
            os.close(self._fd)
            self._fd = None

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)

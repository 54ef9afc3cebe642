"""The kit-only checker (docs/grading.md §8): a step's verdict comes from
this module, never from a process that holds student code.

For a lab with a harness (grader/harness/<lab>.c) the grader writes the
inputs of a step's cases (made here from the seed: the seed never reaches
the student's process), runs the student's harness on them (sandboxed, its
only output a file in a folder the grader made) and compares the raw
outputs with the right answers computed here, in Python, from the inputs.
The harness's exit status and what it prints decide nothing."""
from __future__ import annotations

import math
import random
import struct
import threading
from array import array
from dataclasses import dataclass, field
from pathlib import Path

from .sandbox import Executor

F32 = struct.Struct("<f")
MAX_MESSAGES = 3


@dataclass
class Case:
    kind: int
    a: int
    b: int
    data: bytes        # count * 4 bytes
    label: str         # what the student reads, e.g. "n = 65537 int"

    @property
    def count(self) -> int:
        return len(self.data) // 4


@dataclass
class StepVerdict:
    ok: bool | None                 # None: not measured (no device for the harness)
    failed: int = 0
    total: int = 0
    messages: list[str] = field(default_factory=list)
    note: str = ""


def _ints(rnd: random.Random, n: int, lo: int, span: int) -> array:
    """n ints in [lo, lo + span) (span a power of two <= 65536)."""
    raw = array("H", rnd.randbytes(2 * n))
    return array("i", [lo + (v & (span - 1)) for v in raw])


def _reals_1_2(rnd: random.Random, n: int) -> array:
    """n float32 values in [1, 2): exponent 0, a random mantissa."""
    raw = array("I", rnd.randbytes(4 * n))
    bits = array("I", [0x3F800000 | (v & 0x7FFFFF) for v in raw])
    return array("f", bits.tobytes())


class Reduction:
    """Lab 04: the sum of n ints (kind 0) or floats (kind 1)."""

    def cases(self, rnd: random.Random, cpu: bool) -> list[Case]:
        big = 100003 if cpu else 1000003
        ints = [1, 2, 31, 33, 255, 257, 513, 1025, 65537, big, rnd.randint(2, 5000),
                rnd.randint(5001, 60000 if cpu else 300000)]
        out = []
        for n in ints:  # values in [-1024, 3072): partial sums pass 2^24, so a float accumulator fails
            vals = _ints(rnd, n, -1024, 4096)
            out.append(Case(0, n, 0, vals.tobytes(), f"n = {n} int"))
        for n in (33, 4097, 65537, big):  # integer-valued floats: every partial sum exact
            vals = array("f", _ints(rnd, n, 0, 16))
            out.append(Case(1, n, 0, vals.tobytes(), f"n = {n} float (small integers, exact)"))
        for n in (1, 33, 4097, 131071):  # reals in [1, 2): one dropped element exceeds the bound
            out.append(Case(1, n, 0, _reals_1_2(rnd, n).tobytes(), f"n = {n} float (reals in [1, 2))"))
        return out

    def out_bytes(self, c: Case) -> int:
        return 4

    def judge(self, c: Case, step: int, out: bytes) -> str | None:
        if len(out) != 4:
            return f"{len(out)} bytes of output, expected 4"
        if c.kind == 0:
            vals = array("i")
            vals.frombytes(c.data)
            want = (sum(vals) + 2**31) % 2**32 - 2**31
            got = struct.unpack("<i", out)[0]
            return None if got == want else f"got {got}, expected {want}"
        vals = array("f")
        vals.frombytes(c.data)
        exact = math.fsum(vals)
        got = F32.unpack(out)[0]
        tol = 0.0 if c.label.endswith("exact)") else 2 * max(1, math.ceil(math.log2(max(2, c.a)))) * 2**-24 * math.fsum(abs(v) for v in vals)
        if math.isfinite(got) and abs(got - exact) <= tol:
            return None
        return f"got {got:.9g}, expected {exact:.9g}" + (f" (allowed error {tol:.3g})" if tol else "")


class Transpose:
    """Lab 06: out = the transpose of in (rows x cols floats); step 1 a copy."""

    def cases(self, rnd: random.Random, cpu: bool) -> list[Case]:
        shapes = [(1, 1), (1, 37), (37, 1), (32, 32), (33, 65), (97, 31), (257, 129)]
        shapes += [(300, 301)] if cpu else [(512, 513), (1000, 999)]
        shapes.append((rnd.randint(2, 200 if cpu else 700), rnd.randint(2, 200 if cpu else 700)))
        out = []
        for rows, cols in shapes:  # every element distinct: a wrong index is always seen
            mask = rnd.randrange(1 << 20)
            vals = array("f", (float(i ^ mask) + 0.5 for i in range(rows * cols)))
            out.append(Case(0, rows, cols, vals.tobytes(), f"{rows} x {cols}"))
        return out

    def out_bytes(self, c: Case) -> int:
        return len(c.data)

    def judge(self, c: Case, step: int, out: bytes) -> str | None:
        if len(out) != len(c.data):
            return f"{len(out)} bytes of output, expected {len(c.data)}"
        rows, cols = c.a, c.b
        vals = array("f")
        vals.frombytes(c.data)
        if step == 1:
            want = vals
        else:
            want = array("f")
            for col in range(cols):
                want.extend(vals[col::cols])
        if want.tobytes() == out:
            return None
        got = array("f")
        got.frombytes(out)
        i = next(k for k in range(len(want)) if got[k] != want[k] and not (math.isnan(got[k]) and math.isnan(want[k])))
        r, cc = (i // cols, i % cols) if step == 1 else (i % rows, i // rows)
        return f"out[{i}] = {got[i]:g}, expected {want[i]:g} (in({r}, {cc}))"


CHECKERS = {"04_reduction": Reduction(), "06_transpose": Transpose()}


def has_checker(lab_name: str) -> bool:
    return lab_name in CHECKERS


_CACHE: dict[tuple, list[Case]] = {}
_LOCK = threading.Lock()


def make_cases(lab_name: str, seed: int, cpu: bool) -> list[Case]:
    """The cases of every step of a lab for one seed (made once per run)."""
    key = (lab_name, seed, cpu)
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = CHECKERS[lab_name].cases(random.Random(f"cml-checker|{lab_name}|{seed}"), cpu)
        return _CACHE[key]


def write_input(path: Path, step: int, cases: list[Case]) -> None:
    with path.open("wb") as f:
        f.write(b"CMLH" + struct.pack("<II", 1, len(cases)))
        for c in cases:
            f.write(struct.pack("<IIQQQ", step, c.kind, c.a, c.b, c.count))
            f.write(c.data)


def read_output(path: Path, cases: list[Case], expect_out: list[int]) -> list[tuple[int, bytes, bytes] | None]:
    """Each case's (cuda error, output, input read back), or None where the
    file ends early or is malformed. Never reads more than the cases can
    hold, whatever the file's size."""
    res: list[tuple[int, bytes, bytes] | None] = [None] * len(cases)
    try:
        f = path.open("rb")
    except OSError:
        return res
    with f:
        head = f.read(12)
        if len(head) != 12 or head[:4] != b"CMLO" or struct.unpack("<II", head[4:]) != (1, len(cases)):
            return res
        for k, c in enumerate(cases):
            h = f.read(12)
            if len(h) != 12:
                break
            err, nb = struct.unpack("<iQ", h)
            if nb > max(expect_out[k], 4) or nb > (1 << 31):
                break
            out = f.read(nb)
            ib = f.read(8)
            if len(out) != nb or len(ib) != 8 or struct.unpack("<Q", ib)[0] != len(c.data):
                break
            after = f.read(len(c.data))
            if len(after) != len(c.data):
                break
            res[k] = (err, out, after)
    return res


def check_step(exe: Executor, harness: Path, lab_name: str, step: int, seed: int, out_dir: Path, timeout: float,
               env: dict[str, str], readable: list[Path], cpu: bool, tag: str) -> StepVerdict:
    """One step's verdict: cases from the seed, the student's harness run on
    them, the outputs compared here."""
    if not harness.is_file():
        return StepVerdict(False, note="the kit-only check could not run: its harness did not build")
    cases = make_cases(lab_name, seed, cpu)
    work = out_dir / f"check-{tag}-step{step}"
    work.mkdir(parents=True, exist_ok=True)
    inp, outp = work / "input.bin", work / "output.bin"
    write_input(inp, step, cases)
    outp.unlink(missing_ok=True)
    r = exe.run([str(harness), str(inp), str(outp)], cwd=work, timeout=timeout, writable=[work],
                readable=readable, env=env)
    # the grader runs a harness only where it knows there is a device (a GPU, or the CPU path): a
    # harness that says "no device" (exit 77) has no excuse, it fails like any other missing output
    chk = CHECKERS[lab_name]
    got = read_output(outp, cases, [chk.out_bytes(c) for c in cases])
    v = StepVerdict(True, total=len(cases))
    for c, g in zip(cases, got):
        if g is None:
            why = (f"timed out after {timeout:.0f} s" if r.timed_out else
                   f"no output (the harness ended with status {r.rc})")
        else:
            err, out, after = g
            why = (f"CUDA error {err}" if err != 0 else chk.judge(c, step, out) or
                   ("the kernel changed its input" if after != c.data else None))
        if why:
            v.failed += 1
            if len(v.messages) < MAX_MESSAGES:
                v.messages.append(f"step {step}, {c.label}: {why}")
    v.ok = v.failed == 0
    for p in (inp, outp):
        p.unlink(missing_ok=True)
    return v

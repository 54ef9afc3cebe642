"""What the kit-only checker's parts share: a case as the harness takes
it (harness.h), the copy ceiling's case, and the rule that picks the
cases a step's traces and counters are read on. The cases themselves and
their verdicts are each lab's spec's (specs.py)."""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass

F32 = struct.Struct("<f")
FILL_DATA, FILL_INTS, FILL_FLOATS = 0, 1, 2   # harness.h: the case's data follows / ints / floats made there
COPY_STEP = 0   # harness.h's HN_COPY_STEP: the device's copy ceiling, timed by the reference's harness
LIBRARY_STEP = 0xFFFFFFFE   # harness.h's HN_LIBRARY_STEP: a lab's library on a timed case (lab 03: cuBLAS SGEMM)


@dataclass
class Case:
    kind: int
    a: int
    b: int
    data: bytes         # count * 4 bytes (fill 0); empty for a filled case
    label: str          # what the student reads, e.g. "n = 65537 int"
    fill: int = FILL_DATA
    repeats: int = 0    # > 0: a timed case (harness.h)
    seed: int = 0       # a filled case's data and the timed repeats' changes and samples
    words: int = 0      # a filled case's count
    limit: bool = False  # at the contract's limits (huge or very narrow): checked, never traced or counted (ordinary)

    @property
    def count(self) -> int:
        return self.words if self.fill else len(self.data) // 4


def copy_case(words: int, repeats: int, seed: int) -> Case:
    """The device-to-device copy of `words` words (step COPY_STEP): its
    median time gives the copy bandwidth (copy_gbs)."""
    return Case(0, 0, 0, b"", f"device copy of {4 * words / 2 ** 20:.0f} MiB", fill=FILL_INTS, repeats=repeats,
                seed=seed, words=words)


def copy_gbs(c: Case, ms: float) -> float:
    """GB/s of a copy case that took `ms`: its words read and written once."""
    return 2 * 4 * c.count / (ms * 1e6)


def ordinary(cases: list[Case]) -> list[Case]:
    """The cases not at the contract's limits (all of them where every one
    is): what the technique traces and the counters measure. A limit case
    (a 1-wide image a million rows tall) says whether a kernel covers the
    whole range, not how it uses shared memory, and under the CPU path's
    bank tracing or Nsight Compute's replays it costs minutes."""
    return [c for c in cases if not c.limit] or cases


def floats_close(ref: int, got: int, rel: float, abs_: float) -> bool:
    """Two float32 words within rel of the reference's magnitude plus abs_."""
    r, g = F32.unpack(struct.pack("<I", ref))[0], F32.unpack(struct.pack("<I", got))[0]
    return math.isfinite(g) and abs(g - r) <= rel * abs(r) + abs_

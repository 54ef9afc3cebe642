"""What a lab's kit-only checker is made of (checker.py runs them; each
lab's checker is its common/labs/<lab>/checker.py, loaded by
cmlgrade/checks, with LAB, the lab's name, and CHECKER, an instance of a
LabChecker subclass).

A checker makes a step's cases from a random.Random the grader seeded,
says how many output bytes each case has, and judges one case's raw output
(None when right, else what the student reads). A checker with timed steps
also gives each timed step's case (filled by the harness from a public
seed, never a hidden one) and says when a sampled output word of the
student's harness is close enough to the reference's."""
from __future__ import annotations

import math
import random
import struct
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable
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


class Answers:
    """Right answers computed once per grader process. The cases of a seed
    are made once per run (checker.make_cases) and are the same for every
    submission of a batch, public and secret seed alike, and several steps
    share a case (lab 02's three convolution steps): a Python reference
    that takes seconds on a case the size of a GPU's limits is then paid
    once a batch, not once a step and submission. Keyed by the case object
    and a tag (what of the step the answer depends on); the oldest answers
    are dropped past `budget` bytes. The GPU workers' threads share it: a
    thread that asks for an answer another is computing waits for it."""

    def __init__(self, budget: int = 768 << 20) -> None:
        self.budget = budget
        self._held: OrderedDict[tuple[int, object], tuple[Case, array, int]] = OrderedDict()
        self._busy: dict[tuple[int, object], threading.Event] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, c: Case, tag: object, compute: Callable[[], array]) -> array:
        key = (id(c), tag)
        while True:
            with self._lock:
                hit = self._held.get(key)
                if hit is not None and hit[0] is c:   # the same case (an id is reused only after it is gone)
                    self._held.move_to_end(key)
                    return hit[1]
                wait = self._busy.get(key)
                if wait is None:
                    self._busy[key] = threading.Event()
                    break
            wait.wait()   # another thread's answer (or, where it failed, this thread's turn)
        try:
            got = compute()
            size = len(got) * got.itemsize
            with self._lock:
                old = self._held.pop(key, None)
                self._bytes -= old[2] if old else 0
                if size <= self.budget:
                    self._held[key] = (c, got, size)
                    self._bytes += size
                while self._bytes > self.budget:
                    self._bytes -= self._held.popitem(last=False)[1][2]
            return got
        finally:
            with self._lock:
                self._busy.pop(key).set()


ANSWERS = Answers()


class LabChecker:
    """One lab's checker; the subclasses say what differs."""

    # interface functions that take host data to upload and so may call
    # cudaMemcpy and friends (objcheck.py refuses host copies everywhere else)
    host_copies_in: tuple[str, ...] = ()

    def cases(self, rnd: random.Random, cpu: bool) -> list[Case]:
        raise NotImplementedError

    def step_cases(self, cases: list[Case], step: int) -> list[Case]:
        """The cases a step runs (all of them unless a lab's steps differ)."""
        return cases

    def counter_cases(self, cases: list[Case], step: int) -> list[Case]:
        """The cases a step's hardware counters are read on (checker.counters_step):
        the step's two largest ordinary cases unless a lab needs a shape of its own."""
        return sorted(ordinary(cases), key=lambda c: c.count)[-2:]

    def out_bytes(self, c: Case) -> int:
        raise NotImplementedError

    def judge(self, c: Case, step: int, out: bytes) -> str | None:
        raise NotImplementedError

    def timing_case(self, step: int, repeats: int, seed: int) -> Case | None:
        """The case a timed step runs on a GPU (inputs far larger than L2),
        None where the lab does not time that step this way."""
        return None

    def close(self, c: Case, step: int, ref: int, got: int) -> bool:
        """A sampled output word (u32 bits) against the reference's: exact
        unless a lab says otherwise."""
        return ref == got

    def traffic(self, c: Case, step: int) -> int:
        """The fewest bytes of device memory a timed case's launch must move:
        its input read once and an output the input's size written once,
        unless a lab says otherwise. Over the copy bandwidth, the least time
        any kernel can take (reftime: a faster time is impossible)."""
        return 8 * c.count

    def flops(self, c: Case, step: int) -> int | None:
        """The floating-point operations a timed case's launch must do, for a
        lab whose harness times a library on the same case (harness.h's
        HN_LIBRARY_STEP: lab 03's cuBLAS SGEMM); None for the others. Over the
        library's rate, measured in the same run, the least time a student's
        kernel can take (reftime: a faster time is impossible)."""
        return None


def ints(rnd: random.Random, n: int, lo: int, span: int) -> array:
    """n ints in [lo, lo + span) (span a power of two <= 65536)."""
    raw = array("H", rnd.randbytes(2 * n))
    return array("i", [lo + (v & (span - 1)) for v in raw])


def reals_1_2(rnd: random.Random, n: int) -> array:
    """n float32 values in [1, 2): exponent 0, a random mantissa."""
    raw = array("I", rnd.randbytes(4 * n))
    bits = array("I", [0x3F800000 | (v & 0x7FFFFF) for v in raw])
    return array("f", bits.tobytes())


def floats_close(ref: int, got: int, rel: float, abs_: float) -> bool:
    """Two float32 words within rel of the reference's magnitude plus abs_."""
    r, g = F32.unpack(struct.pack("<I", ref))[0], F32.unpack(struct.pack("<I", got))[0]
    return math.isfinite(g) and abs(g - r) <= rel * abs(r) + abs_


def outside_write(words, guard: int, n: int, poison: int, name: str) -> str | None:
    """Where a kernel wrote into the guard zones of `guard` words poisoned
    with `poison` before and after an output of n words (`words` holds all
    three), said for a student ("3 floats before out", "1 floats past out's
    end"); None where both zones are untouched."""
    for k in list(range(guard)) + list(range(guard + n, 2 * guard + n)):
        if words[k] != poison:
            return f"{guard - k} floats before {name}" if k < guard else f"{k - guard - n + 1} floats past {name}'s end"
    return None

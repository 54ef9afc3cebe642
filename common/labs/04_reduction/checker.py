"""Lab 04's kit-only checker: the sum of n ints (kind 0) or floats (kind 1)."""
from __future__ import annotations

import math
import random
import struct
from array import array

from cmlgrade.checkbase import F32, FILL_INTS, Case, LabChecker, ints, reals_1_2

LAB = "04_reduction"


class Reduction(LabChecker):
    def cases(self, rnd: random.Random, cpu: bool) -> list[Case]:
        big = 100003 if cpu else 1000003
        sizes = [1, 2, 31, 33, 255, 257, 513, 1025, 65537, big, rnd.randint(2, 5000),
                 rnd.randint(5001, 60000 if cpu else 300000)]
        out = []
        for n in sizes:  # values in [-1024, 3072): partial sums pass 2^24, so a float accumulator fails
            out.append(Case(0, n, 0, ints(rnd, n, -1024, 4096).tobytes(), f"n = {n} int"))
        for n in (33, 4097, 65537, big):  # integer-valued floats: every partial sum exact
            vals = array("f", ints(rnd, n, 0, 16))
            out.append(Case(1, n, 0, vals.tobytes(), f"n = {n} float (small integers, exact)"))
        for n in (1, 33, 4097, 131071):  # reals in [1, 2): one dropped element exceeds the bound
            out.append(Case(1, n, 0, reals_1_2(rnd, n).tobytes(), f"n = {n} float (reals in [1, 2))"))
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
        tol = (0.0 if c.label.endswith("exact)") else
               2 * max(1, math.ceil(math.log2(max(2, c.a)))) * 2**-24 * math.fsum(abs(v) for v in vals))
        if math.isfinite(got) and abs(got - exact) <= tol:
            return None
        return f"got {got:.9g}, expected {exact:.9g}" + (f" (allowed error {tol:.3g})" if tol else "")

    def traffic(self, c: Case, step: int) -> int:
        return 4 * c.count   # the ints read once; one sum written

    def timing_case(self, step: int, repeats: int, seed: int) -> Case | None:
        n = 1 << 28   # 1 GiB of ints (the results pages' size): far past L2; exact, so the samples must equal the reference's
        return Case(0, n, 0, b"", f"n = {n} int (timed)", fill=FILL_INTS, repeats=repeats, seed=seed, words=n)


CHECKER = Reduction()

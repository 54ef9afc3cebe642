"""Lab @LAB@'s kit-only checker (harness.c beside this file says how a case
is laid out): out[i] = a * in[i]. Each output float is the product of two
floats rounded once, so the answer is exact: a double product of two floats
is exact, and rounding it to float is what the GPU's multiply does. A wrong
index, a dropped element or a write past out's end (a guard) is found."""
from __future__ import annotations

import random
import struct
from array import array

from cmlgrade.checkbase import Case, LabChecker, outside_write

LAB = "@LAB@"
GUARD = 64                 # harness.c's SC_GUARD words each side of out
POISON = 0xFFFFFFFF


class Scale(LabChecker):
    def cases(self, rnd: random.Random, cpu: bool) -> list[Case]:
        big = 100003 if cpu else 1000003    # past the grid-stride step's 1024 x 256 threads: four turns of its loop
        # around and across a block (256) and the grid-stride loop's grid, distinct values in every case
        sizes = [1, 2, 255, 256, 257, 1023, 4097, 65537, big, rnd.randint(2, 5000), rnd.randint(5001, 300000)]
        out = []
        for n in sizes:
            a = rnd.choice([-3.0, 0.5, 1.75, rnd.uniform(-8, 8)])
            a = struct.unpack("<f", struct.pack("<f", a))[0]   # a float, as the kernel gets it
            vals = array("f", [rnd.uniform(-1000, 1000) for _ in range(n)])
            out.append(Case(0, n, struct.unpack("<I", struct.pack("<f", a))[0], vals.tobytes(),
                            f"n = {n}, a = {a:.9g}"))
        return out

    def out_bytes(self, c: Case) -> int:
        return 4 * (c.a + 2 * GUARD)

    def judge(self, c: Case, step: int, out: bytes) -> str | None:
        if len(out) != self.out_bytes(c):
            return f"{len(out)} bytes of output, expected {self.out_bytes(c)}"
        n = c.a
        where = outside_write(array("I", out), GUARD, n, POISON, "out")
        if where:
            return f"a write outside out, {where}: a thread past the end of the array without an i < n check"
        a = struct.unpack("<f", struct.pack("<I", c.b))[0]
        vals = array("f")
        vals.frombytes(c.data)
        want = array("f", [a * v for v in vals])   # exact product, rounded once to float
        got = array("f", out[4 * GUARD:4 * (GUARD + n)])
        if got == want:
            return None
        bad = [i for i in range(n) if got[i] != want[i]]
        i = bad[0]
        return f"{len(bad)} of {n} elements of out wrong: out[{i}] = {got[i]:.9g}, expected {want[i]:.9g}"


CHECKER = Scale()

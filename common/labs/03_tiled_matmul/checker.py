"""Lab 03's kit-only checker: C = A * B (M x K times K x N floats,
row-major); common/labs/03_tiled_matmul/harness.c says the case layout (a = M,
b = N, kind = K; data A then B; output C then C's two guard zones).

Three kinds of data. Small nonzero integers (+-1 .. +-16): every product
and partial sum is an integer below 2^24, so C is exact and judged
exactly; one dropped term changes it. Distinct integers in A (or in B)
against small ones in the other, sized so that the sums stay exact: one
element read from a wrong place of the distinct matrix changes C. Reals of
magnitude [1, 2) with random signs: judged within gamma_K * ||A(i, :)|| *
||B(:, j)|| (Cauchy-Schwarz over sum_k |A(i, k)| |B(k, j)|, the bound of
any order of float additions), which stays far below 1, the least a
dropped term changes C by."""
from __future__ import annotations

import math
import random
from array import array
from dataclasses import dataclass
from operator import mul

from cmlgrade.checkbase import ANSWERS, FILL_FLOATS, Case, LabChecker, floats_close

LAB = "03_tiled_matmul"

U = 2.0 ** -24          # float's unit roundoff
U64 = 2.0 ** -53        # double's (the Python reference's sums)
EXACT, DISTINCT_A, DISTINCT_B, REALS = 0, 1, 2, 3
MAX_SIDE = 1 << 18      # MATMUL_MAX_SIDE
MANY_TILES = (1025, 1031, 1021)   # M, N, K: labs/03_tiled_matmul/tests/gpu.c's large_shapes
WHAT = {EXACT: "small integers, exact", DISTINCT_A: "distinct integers in A, exact",
        DISTINCT_B: "distinct integers in B, exact", REALS: "reals"}


def gamma(n: int, u: float = U) -> float:
    """Higham's gamma_n: the relative error bound of a sum of n products in any order, fused or not."""
    return n * u / (1 - n * u)


def guard_words(row: int) -> int:
    """The harness's guard zone (03_tiled_matmul.c guard_words)."""
    return (max(128 * (row + 1), 16384) + 63) // 64 * 64


@dataclass
class MmCase(Case):
    data_kind: int = EXACT


def small_ints(rnd: random.Random, n: int, top: int = 16) -> list[float]:
    """n integer-valued floats in +-1 .. +-top (top a power of two <= 64; 1: +-1), never 0."""
    raw = rnd.randbytes(n)
    return [float((1 + (v & (top - 1))) * (1 if v & 0x80 else -1)) for v in raw]


def distinct_ints(rnd: random.Random, n: int) -> list[float]:
    """n distinct integer-valued floats: +-1 .. +-n, each magnitude once, random signs."""
    vals = [float(v if rnd.getrandbits(1) else -v) for v in range(1, n + 1)]
    rnd.shuffle(vals)
    return vals


def signed_reals_1_2(rnd: random.Random, n: int) -> list[float]:
    """n floats of magnitude in [1, 2), random mantissa and sign."""
    raw = array("I", rnd.randbytes(4 * n))
    return list(array("f", array("I", [0x3F800000 | (v & 0x7FFFFF) | (v & 0x80000000) for v in raw]).tobytes()))


class Matmul(LabChecker):
    def cases(self, rnd: random.Random, cpu: bool) -> list[Case]:
        # (M, N, K): 1-wide and 1-deep, around and across the tiles (8, 16, 32, 64, 128), K below, across and
        # above the k-tiles, rows 16-byte aligned (N and K multiples of 4) and not, skinny
        exact = [(1, 1, 1), (1, 1, 100), (1, 77, 33), (77, 1, 33), (45, 67, 1), (1, 129, 1), (17, 15, 17),
                 (31, 33, 7), (33, 31, 47), (61, 67, 71), (65, 63, 130), (97, 129, 40), (67, 45, 129),
                 (129, 130, 131), (130, 132, 68), (300, 3, 37), (3, 300, 37), (5, 7, 301),
                 (rnd.randint(2, 140), rnd.randint(2, 140), rnd.randint(2, 160)),
                 (rnd.randint(2, 140), 4 * rnd.randint(1, 35), 4 * rnd.randint(1, 40))]
        reals = [(67, 45, 129), (37, 29, 300), (130, 132, 68)]
        # distinct values: up to +-V (V that matrix's size), the other's entries +-1 .. +-8: K * V * 8 < 2^24
        distinct = [(DISTINCT_A, (67, 45, 129)), (DISTINCT_B, (45, 67, 129))]
        if not cpu:
            # 1025 x 1031 x 1021 (the public tests' many-tile shape): a thousand blocks of many k-tiles in flight,
            # where a tile refilled before every warp has read it (no barrier after the multiply-adds) garbles
            # thousands of elements of C on an H200; on every smaller case here, none. Like the limit cases it is
            # checked, not traced (ordinary): the technique traces and their floors stay on the cases they were
            exact += [(1000, 5, 257), (257, 131, 65), (4099, 3, 70), (3, 4099, 70), (5, 7, 4099),
                      (30011, 2, 3), (rnd.randint(2, 160), rnd.randint(2, 160), rnd.randint(2, 160)),
                      MANY_TILES]
            reals += [(129, 67, 513), (260, 12, 1000)]
            distinct += [(DISTINCT_A, (90, 131, 70)), (DISTINCT_B, (131, 90, 70))]
        # the contract's limits (matmul.h): every side past the largest tile (128) with one small side, so the
        # CPU path stays quick; on a GPU each side at MATMUL_MAX_SIDE (gridDim.y's 65535 blocks of 8 rows) with
        # the others small, and K at the limit (entries +-1: a sum of 2^18 terms stays exact)
        limits = [(600, 601, 3), (603, 2, 605), (2, 607, 609)]
        exact += limits
        ones = [(1, 1, 16411)] if cpu else [(MAX_SIDE, 2, 3), (3, MAX_SIDE, 2), (2, 3, MAX_SIDE),
                                            (MAX_SIDE - 1, 1, 1)]
        out: list[Case] = []
        for m, n, k in ones:
            out.append(self._case(EXACT, m, n, k, small_ints(rnd, m * k, 1), small_ints(rnd, k * n, 1), limit=True))
        for m, n, k in exact:
            out.append(self._case(EXACT, m, n, k, small_ints(rnd, m * k), small_ints(rnd, k * n),
                                  limit=(m, n, k) in limits or (m, n, k) == MANY_TILES))
        for m, n, k in reals:
            out.append(self._case(REALS, m, n, k, signed_reals_1_2(rnd, m * k), signed_reals_1_2(rnd, k * n)))
        for dk, (m, n, k) in distinct:
            assert k * (m if dk == DISTINCT_A else n) * k * 8 < 2 ** 24, "a distinct case whose sums are not exact"
            a = distinct_ints(rnd, m * k) if dk == DISTINCT_A else small_ints(rnd, m * k, 8)
            b = distinct_ints(rnd, k * n) if dk == DISTINCT_B else small_ints(rnd, k * n, 8)
            out.append(self._case(dk, m, n, k, a, b))
        return out

    @staticmethod
    def _case(dk: int, m: int, n: int, k: int, a: list[float], b: list[float], limit: bool = False) -> MmCase:
        return MmCase(k, m, n, array("f", a + b).tobytes(), f"{m} x {n} x {k} ({WHAT[dk]})", data_kind=dk,
                      limit=limit)

    def out_bytes(self, c: Case) -> int:
        return 4 * (c.a * c.b + 2 * guard_words(c.b))

    def judge(self, c: Case, step: int, out: bytes) -> str | None:
        m, n, k = c.a, c.b, c.kind
        if len(out) != self.out_bytes(c):
            return f"{len(out)} bytes of output, expected {self.out_bytes(c)}"
        want = ANSWERS.get(c, "C", lambda: self._product(c))   # every step of the lab: the same C
        got = array("f")
        got.frombytes(out[:4 * m * n])
        reals = getattr(c, "data_kind", EXACT) == REALS
        if reals:
            norms = ANSWERS.get(c, "norms", lambda: self._norms(c))
            a_norm, b_norm = norms[:m], norms[m:]
            g = gamma(k) + gamma(k, U64)
        bad, first = 0, None
        nan_poison = 0
        for i in (range(m) if reals or array("f", want) != got else ()):   # exact: want holds integers below 2^24
            gr, wr = got[i * n:(i + 1) * n], want[i * n:(i + 1) * n]
            if not reals and array("f", wr) == gr:
                continue
            for j in range(n):
                tol = g * a_norm[i] * b_norm[j] if reals else 0.0
                if abs(gr[j] - wr[j]) <= tol:
                    continue
                bad += 1
                nan_poison += math.isnan(gr[j]) and out[4 * (i * n + j):4 * (i * n + j + 1)] == b"\xff" * 4
                if first is None:
                    first = (i, j, gr[j], wr[j], tol)
        if first is not None:
            i, j, gv, wv, tol = first
            msg = (f"{bad} of {m * n} elements of C wrong" +
                   (f" ({nan_poison} never written)" if nan_poison else "") +
                   f": C({i}, {j}) = {gv:.9g}, expected {wv:.9g}" + (f" (allowed error {tol:.3g})" if tol else ""))
            if math.isnan(gv) and not nan_poison:
                msg += " (NaN: A and B lie between guard zones of NaN; a load past their ends brings it into C)"
            return msg
        gw = guard_words(n)
        before, after = out[4 * m * n:4 * (m * n + gw)], out[4 * (m * n + gw):]
        poison = b"\xff" * (4 * gw)
        changed = [] if before == poison else [x for x in range(gw) if before[4 * x:4 * x + 4] != b"\xff" * 4]
        if changed:   # the zone ends at C's first element: word x is gw - x floats before it
            return f"the kernel wrote outside C: {gw - changed[0]} floats before C's first element"
        changed = [] if after == poison else [x for x in range(gw) if after[4 * x:4 * x + 4] != b"\xff" * 4]
        if changed:   # word x of the zone after C is C[M * N + x]
            return f"the kernel wrote outside C: at C[{m * n + changed[0]}], past its last element C[{m * n - 1}]"
        return None

    @staticmethod
    def _rows_cols(c: Case) -> tuple[list[list[float]], list[list[float]]]:
        m, n, k = c.a, c.b, c.kind
        arr = array("f")
        arr.frombytes(c.data)
        vals = arr.tolist()   # Python floats once, not at every product
        return [vals[i * k:(i + 1) * k] for i in range(m)], [vals[m * k + j::n] for j in range(n)]

    def _product(self, c: Case) -> array:
        """C in double, row-major (each product of two floats is exact in double)."""
        if getattr(c, "data_kind", EXACT) != REALS:
            return self._integer_product(c)
        a_rows, b_cols = self._rows_cols(c)
        want = array("d")
        for row in a_rows:
            want.extend([sum(map(mul, row, col)) for col in b_cols])
        return want

    @staticmethod
    def _integer_product(c: Case) -> array:
        """C of integer-valued A and B (every kind but REALS), exactly, fast
        enough for the 1025 x 1031 x 1021 cases (a billion multiply-adds;
        seconds): B's row k packed into one integer, a 32-bit field per
        column, so that row i of C is sum_k A(i, k) x packed row k, one
        integer multiply-add per (i, k) instead of N. Every field is
        offset by 2^31 to read it back without borrows: each |C(i, j)| is
        below 2^24 (the cases' exactness bound)."""
        m, n, k = c.a, c.b, c.kind
        arr = array("f")
        arr.frombytes(c.data)
        vals = [int(v) for v in arr]
        packed = []
        for r in range(k):
            row = array("i", vals[m * k + r * n:m * k + (r + 1) * n])
            packed.append(int.from_bytes(row.tobytes(), "little", signed=False)
                          - (sum(1 << (32 * j) for j, v in enumerate(row) if v < 0) << 32))
        offset = int.from_bytes(b"\x00\x00\x00\x80" * n, "little")
        want = array("d")
        for i in range(m):
            total = sum(map(mul, vals[i * k:(i + 1) * k], packed)) + offset
            fields = array("I")
            fields.frombytes(total.to_bytes(4 * n, "little"))
            want.extend([f - (1 << 31) for f in fields])
        return want

    def _norms(self, c: Case) -> array:
        """||A(i, :)|| for every row i, then ||B(:, j)|| for every column j."""
        a_rows, b_cols = self._rows_cols(c)
        return array("d", [math.sqrt(sum(map(mul, v, v))) for v in a_rows + b_cols])

    def timing_case(self, step: int, repeats: int, seed: int) -> Case | None:
        # the [performance] steps (3, 6, 8, 9): the results' 4096 x 4096 x 4096 (A and B 64 MiB each, C 64 MiB:
        # past the L2; a few ms a launch for the tiled steps on an H100), floats in [-1, 1) from the harness
        if step not in (3, 6, 8, 9):
            return None
        m = n = k = 4096
        return MmCase(k, m, n, b"", f"{m} x {n} x {k} (timed)", fill=FILL_FLOATS, repeats=repeats, seed=seed,
                      words=m * k + k * n, data_kind=REALS)

    def traffic(self, c: Case, step: int) -> int:
        return 4 * (c.count + c.a * c.b)   # A and B read once, C written once (a loose floor: matmul computes)

    def flops(self, c: Case, step: int) -> int:
        return 2 * c.a * c.b * c.kind   # a multiply and an add for each of M x N x K terms: cuBLAS's rate bounds it

    def close(self, c: Case, step: int, ref: int, got: int) -> bool:
        # each harness's C(i, j) is within gamma_K * sum_k |A(i, k)| |B(k, j)| of the exact one; with |A|,
        # |B| < 1 that sum is below K: the two are within 2 * gamma_K * K of each other
        k = c.kind
        return ref == got or floats_close(ref, got, 0.0, 2 * gamma(k) * k)


CHECKER = Matmul()

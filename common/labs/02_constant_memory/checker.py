"""Lab 02's kit-only checker (common/labs/02_constant_memory/harness.c says the
case layout): steps 1-5 run the walk of constmem.h over two tables, steps
6-8 a 2D convolution with zero padding.

The walk's tables hold distinct nonzero integers small enough that every
sum the walk makes is exact in float (|entry| * reads < 2^24), so a thread's
sum is judged exactly and one wrong entry read changes it. Each case's signs
(read k of every pass subtracted where bit k is set) reach the kernel after
the upload: sums made there (row sums, prefix sums) are wrong. The convolution
is judged exactly on integer-valued data and within a derived bound on real
data whose every term is at least 1 in magnitude (so one dropped or extra
term is far outside the bound)."""
from __future__ import annotations

import math
import random
import struct
from array import array
from dataclasses import dataclass
from itertools import repeat
from operator import add, mul, ne

from cmlgrade.checkbase import ANSWERS, FILL_FLOATS, Case, LabChecker, floats_close

LAB = "02_constant_memory"

# constmem.h
TABLE_ENTRIES, BIG_ENTRIES = 1024, 12288
PASS_READS, WARP_STEP, PASS_STEP = 32, 97, 61
SMALL_MASK, BIG_MASK, BIG_STRIDE = 511, 8191, 128
MAX_PASSES, MAX_RADIUS = 128, 4
MAX_THREADS, MAX_HEIGHT = 1 << 26, 4194240   # CONSTMEM_MAX_THREADS; constmem_conv_job's height <=
# The CPU path's tall image (1 wide): past 65535 tiles of 16 rows, so blocks of 16 rows or fewer must loop down
# it. Its cost is the grid's (every CUDA thread a fiber, whatever the width): about 4 s of CPU time a step for the
# reference's harness (64-row tiles) and 8 s for 32 x 16 blocks (honest h02_policies_and_vector), plus 2 s for the
# Python reference; the header's 4,194,240 rows (GPU path) would take four times that.
TALL_CPU = 65535 * 16 + 1031
KIND_LOOKUP, KIND_CONV = 0, 1
DS = (1, 2, 4, 8, 16, 32)
# Exactness of the walk: a thread adds passes * 32 entries. The small table
# holds +-1 .. +-512 (1024 distinct values): 128 * 32 * 512 = 2^21. The big
# one +-1 .. +-6144 (12288 distinct values), walked with at most 64 passes:
# 64 * 32 * 6144 < 2^24. Every partial sum is then an integer below 2^24.
BIG_MAX_PASSES = 64
U = 2.0 ** -24          # float's unit roundoff
U64 = 2.0 ** -53


def gamma(n: int, u: float = U) -> float:
    """The bound on the relative error of n float operations' rounding
    (Higham's gamma_n): any order of summing n products, fused or not."""
    return n * u / (1 - n * u)


@dataclass
class CmCase(Case):
    exact: bool = False     # a convolution of integer-valued data: judged exactly


def signs_of(signs: int) -> list[float]:
    """s_k of the walk (constmem.h): -1 where bit k of signs is set, else +1."""
    return [-1.0 if signs >> k & 1 else 1.0 for k in range(PASS_READS)]


def distinct_table(rnd: random.Random, half: int) -> array:
    """2 * half floats: +-1 .. +-half, each once, in random order."""
    vals = [float(v) for v in range(1, half + 1)] + [float(-v) for v in range(1, half + 1)]
    rnd.shuffle(vals)
    return array("f", vals)


def signed_reals_1_2(rnd: random.Random, n: int) -> array:
    """n floats with magnitude in [1, 2) and a random sign."""
    raw = array("I", rnd.randbytes(4 * n))
    return array("f", array("I", [0x3F800000 | (v & 0x7FFFFF) | (v & 0x80000000) for v in raw]).tobytes())


def signed_ints(rnd: random.Random, n: int, top: int) -> array:
    """n integer-valued floats in +-1 .. +-top (top a power of two), never 0."""
    raw = array("H", rnd.randbytes(2 * n))
    return array("f", [float((1 + (v & (top - 1))) * (1 if v & 0x8000 else -1)) for v in raw])


class ConstMem(LabChecker):
    # the uploads take host tables and filters (cudaMemcpyToSymbol; a cudaMemcpy there is the
    # catalogued mistake cudamemcpy_to_the_symbol_name, which must fail as a test, not be refused)
    host_copies_in = ("constmem_upload_tables", "constmem_upload_filter")

    def __init__(self) -> None:
        self._pass_sums: dict[tuple[bytes, int], list[float]] = {}

    # ------------------------------------------------------------ cases

    def cases(self, rnd: random.Random, cpu: bool) -> list[Case]:
        # each case: the tables the upload gets, then other tables, the global copies steps 3 and 4 read (the
        # harness puts those on the device after the upload: what a step computes from the upload is wrong there),
        # then the walk's signs, which the harness also gives the kernel only after the upload: random bits (the
        # first two cases: none and all set)
        tables = [b"".join(distinct_table(rnd, half).tobytes() for half in (TABLE_ENTRIES // 2, BIG_ENTRIES // 2) * 2)
                  for _ in range(3)]
        # (threads, passes): 1 thread, around a warp and a block of 256, primes, and passes past 32 (step 1's
        # rows wrap at 32) up to the largest allowed
        shapes = [(1, 1), (31, 2), (32, 1), (33, 3), (255, 2), (257, 1), (1000, 3), (1025, MAX_PASSES),
                  (rnd.randint(2, 5000), rnd.randint(1, 8)), (rnd.randint(34, 700), rnd.randint(33, MAX_PASSES))]
        shapes += [(20011, 2)] if cpu else [(65537, 1), (100003, 2), ((1 << 18) + 3, 16), (4099, MAX_PASSES)]
        # the contract's limit (CONSTMEM_MAX_THREADS), one pass; on the CPU path far fewer threads (each a fiber)
        shapes += [((1 << 20) + 1, 1)] if cpu else [(MAX_THREADS, 1)]
        out: list[Case] = []
        n = 0
        for big in (0, 1):
            for d in DS:
                if big and d not in (1, 32) and cpu:
                    continue    # the CPU path: the big table's walk with d = 1 and 32 only (time)
                # d = 2 .. 16 walk the same entries as d = 1 and 32 in between: the small and edge shapes suffice
                for threads, passes in (shapes if d in (1, 32) else shapes[:10]):
                    # the big table: passes for exact sums, and at most 2^16 + 3 threads (its warps start at up
                    # to 8192 different entries, each one a walk for the Python reference)
                    if big:
                        threads, passes = min(threads, (1 << 16) + 3), min(passes, BIG_MAX_PASSES)
                    elif threads > (1 << 18) + 3 and d not in (1, 32):
                        continue   # the limit: d = 1 and 32 (the Python reference's time)
                    kind = KIND_LOOKUP | d << 8 | big << 16
                    signs = (0, 0xFFFFFFFF)[n] if n < 2 else rnd.getrandbits(32)
                    out.append(CmCase(kind, threads, passes, tables[n % len(tables)] + struct.pack("<I", signs),
                                      f"{threads} threads, {passes} passes, d = {d}, {'big' if big else 'small'} "
                                      f"table, signs {signs:#010x}", limit=threads > (1 << 18) + 3))
                    n += 1
        # convolutions (width, height, radius): 1-pixel and 1-wide images, around one 32 x 64 tile, ragged
        # right and bottom edges, every radius
        convs = [(1, 1, 1), (1, 1, 4), (1, 1025, 2), (4097, 1, 3), (2, 3, 4), (31, 63, 1), (32, 64, 2), (33, 65, 3),
                 (257, 131, 4), (97, 1031, 1),
                 (rnd.randint(2, 300), rnd.randint(2, 300), rnd.randint(1, MAX_RADIUS))]
        convs = [(w, h, r, (True, False)) for w, h, r in convs]
        # larger ones, one kind of data each (the Python reference's time)
        convs += [(301, 199, 2, (True, False))] if cpu else [(1000, 131, 2, (True,)), (67, 999, 3, (False,))]
        # the contract's limits (constmem.h): the tallest image, 1 and 3 wide, and a wide one; on the CPU path
        # (every pixel's thread a fiber) a 1-wide image past 65535 tiles of 16 rows (TALL_CPU)
        limits = ([(1, TALL_CPU, 2, (True,)), (3, 1 << 14, 4, (False,))] if cpu else
                  [(1, MAX_HEIGHT, 4, (True,)), (3, MAX_HEIGHT, 1, (True,)), (1 << 20, 3, 2, (True,))])
        convs += limits
        for w, h, r, kinds in convs:
            taps = (2 * r + 1) ** 2
            for exact in kinds:
                if exact:   # image +-1 .. +-64, filter +-1 .. +-8: |sum| <= 81 * 512, exact in float
                    data = signed_ints(rnd, taps, 8).tobytes() + signed_ints(rnd, w * h, 64).tobytes()
                else:       # magnitudes in [1, 2): every term at least 1
                    data = signed_reals_1_2(rnd, taps + w * h).tobytes()
                out.append(CmCase(KIND_CONV | r << 8, w, h, data,
                                  f"{w} x {h} image, radius {r}" + (" (small integers, exact)" if exact else
                                                                    " (reals)"), exact=exact,
                                  limit=(w, h, r, kinds) in limits))
        return out

    def step_cases(self, cases: list[Case], step: int) -> list[Case]:
        def fits(c: Case) -> bool:
            if c.kind & 0xFF == KIND_CONV:
                return step >= 6
            d, big = (c.kind >> 8) & 0xFF, (c.kind >> 16) & 0xFF
            return {1: d == 1 and not big, 2: not big, 3: True, 4: True, 5: d == 1 and big == 1}.get(step, False)
        return [c for c in cases if fits(c)]

    def out_bytes(self, c: Case) -> int:
        return 4 * c.a * (c.b if c.kind & 0xFF == KIND_CONV else 1)

    # ------------------------------------------------------------ judging

    def judge(self, c: Case, step: int, out: bytes) -> str | None:
        want_len = self.out_bytes(c)
        if len(out) != want_len:
            return f"{len(out)} bytes of output, expected {want_len}"
        got = array("f")
        got.frombytes(out)
        if c.kind & 0xFF == KIND_CONV:
            return self._judge_conv(c, got, out)
        # step 1 sums rows of its own; steps 3 and 4 walk the global copies; 2 and 5 the uploaded tables
        want = ANSWERS.get(c, 1 if step == 1 else 3 if step in (3, 4) else 2, lambda: self._walk(c, step))
        if want.tobytes() == out:
            return None
        nbad = sum(map(ne, want, got))   # float equality: -0 == 0, NaN never equal
        if not nbad:
            return None
        t = next(i for i, (w, g) in enumerate(zip(want, got)) if w != g)
        unwritten = array("I", out).count(0xFFFFFFFF)
        return (f"{nbad} of {c.a} sums wrong" + (f" ({unwritten} never written)" if unwritten else "") +
                f": out[{t}] (warp {t // 32}, lane {t % 32}) = {got[t]:.9g}, expected {want[t]:.0f}")

    def _walk(self, c: Case, step: int) -> array:
        """out[t] of every thread: exact integers."""
        threads, passes = c.a, c.b
        d, big = (c.kind >> 8) & 0xFF, (c.kind >> 16) & 0xFF
        tables, (signs,) = c.data[:-4], struct.unpack("<I", c.data[-4:])
        half = len(tables) // 2   # the uploaded tables, then the global copies steps 3 and 4 read
        data = tables[half:] if step in (3, 4) else tables[:half]
        tabs = array("f")
        tabs.frombytes(data)
        sg = signs_of(signs)
        if step == 1:   # sum over p of row (p % 32)'s signed sum times x = (t + p) % 3 - 1: depends on t % 3 only
            rows = [math.fsum(map(mul, tabs[32 * q:32 * q + PASS_READS], sg)) for q in range(32)]
            by3 = [math.fsum(rows[p % 32] * ((m + p) % 3 - 1) for p in range(passes)) for m in range(3)]
            want = array("f", by3) * (threads // 3 + 1)
            del want[threads:]
            return want
        mask = BIG_MASK if big else SMALL_MASK
        ps = self._pass_sums_of(data, big, signs)
        # a warp's sums depend on (warp * WARP_STEP) & mask only: the warps repeat every mask + 1 (odd
        # WARP_STEP), so one period of them, repeated at C speed, is every thread's sum (up to 2^26 threads)
        period = array("f")
        for warp in range(min((threads + 31) // 32, mask + 1)):
            w0 = (warp * WARP_STEP) & mask
            acc = [0.0] * d
            for p in range(passes):
                s = (w0 + p * PASS_STEP) & mask
                acc = list(map(add, acc, ps[s:s + d]))
            period.extend(acc * (32 // d))
        want = period * -(-threads // len(period))
        del want[threads:]
        return want

    def _pass_sums_of(self, data: bytes, big: int, signs: int) -> list[float]:
        """The signed sum of one pass's 32 reads starting at each entry a pass can start at (integers below
        2^24: exact in any order)."""
        key = (data, big, signs)
        if key not in self._pass_sums:
            tabs = array("f")
            tabs.frombytes(data)
            mask, stride, off = (BIG_MASK, BIG_STRIDE, TABLE_ENTRIES) if big else (SMALL_MASK, 1, 0)
            tab = tabs[off:]
            sums = [0.0] * (mask + 32)
            for k, s in enumerate(signs_of(signs)):   # read k of the pass starting at each entry, signed
                sums = list(map(add, sums, map(mul, tab[k * stride:k * stride + mask + 32], repeat(s))))
            self._pass_sums[key] = sums
            if len(self._pass_sums) > 16:
                self._pass_sums.pop(next(iter(self._pass_sums)))
        return self._pass_sums[key]

    def _judge_conv(self, c: Case, got: array, out: bytes) -> str | None:
        w, h, r = c.a, c.b, c.kind >> 8
        t = 2 * r + 1
        vals = array("f")
        vals.frombytes(c.data)
        filt, img = vals[:t * t], vals[t * t:]
        want = ANSWERS.get(c, "conv", lambda: array("d", conv(img, w, h, filt, r)))   # steps 6-8: one answer
        # The kernel's float sum of the t * t products (any order, fused or not) is within gamma_{t*t} times
        # the sum of their magnitudes of the exact sum; that sum is at most max|in| * sum|w|, and this double
        # reference is within gamma_{t*t} (for double) times it. On integer-valued data every product and
        # partial sum is an integer below 2^24: exact.
        mag = max(map(abs, img)) * math.fsum(map(abs, filt))
        tol = 0.0 if getattr(c, "exact", False) else (gamma(t * t) + gamma(t * t, U64)) * mag
        if not tol and array("f", want) == got:   # exact and right, at C speed (millions of pixels)
            return None
        bad = [i for i, (x, g) in enumerate(zip(want, got)) if not abs(g - x) <= tol]
        if not bad:
            return None
        i = bad[0]
        unwritten = array("I", out).count(0xFFFFFFFF)   # the poison: never a right pixel
        return (f"{len(bad)} of {w * h} pixels wrong" + (f" ({unwritten} never written)" if unwritten else "") +
                f": out(y {i // w}, x {i % w}) = {got[i]:.9g}, expected {want[i]:.9g}" +
                (f" (allowed error {tol:.3g})" if tol else ""))

    # ------------------------------------------------------------ timing

    def timing_case(self, step: int, repeats: int, seed: int) -> Case | None:
        # steps 6-8 ([performance]): the results' 8192 x 8192 image, radius 2 (256 MiB in, 256 MiB out, far
        # past the L2); the harness fills the filter (the first 25 words) and the image with floats in [-1, 1)
        if step not in (6, 7, 8):
            return None
        w = h = 8192
        r = 2
        taps = (2 * r + 1) ** 2
        return CmCase(KIND_CONV | r << 8, w, h, b"", f"{w} x {h} image, radius {r} (timed)", fill=FILL_FLOATS,
                      repeats=repeats, seed=seed, words=taps + w * h)

    def close(self, c: Case, step: int, ref: int, got: int) -> bool:
        # each pixel of either harness is within gamma_n * sum|w||in| of the exact one (n = taps products);
        # with |w|, |in| < 1 that sum is below n, so the two are within 2 * gamma_n * n of each other
        r = c.kind >> 8
        n = (2 * r + 1) ** 2
        return ref == got or floats_close(ref, got, 0.0, 2 * gamma(n) * n)


def conv(img: array, w: int, h: int, filt: array, r: int) -> list[float]:
    """The zero-padded convolution in double (each product of two floats is exact in double)."""
    t = 2 * r + 1
    if w < h:   # a tall image: the convolution of its transpose (filter transposed), transposed back, in long rows
        img_t = array("f")
        for x in range(w):
            img_t.extend(img[x::w])
        out_t = conv(img_t, h, w, array("f", [filt[b * t + a] for a in range(t) for b in range(t)]), r)
        out = [0.0] * (w * h)
        for x in range(w):
            out[x::w] = out_t[x * h:(x + 1) * h]
        return out
    pad = [0.0] * r
    rows = [pad + list(img[y * w:(y + 1) * w]) + pad for y in range(h)]
    out: list[float] = []
    for y in range(h):
        acc = [0.0] * w
        for a in range(t):
            yy = y + a - r
            if not 0 <= yy < h:
                continue
            row = rows[yy]
            for b in range(t):
                acc = list(map(add, acc, map(mul, row[b:b + w], repeat(float(filt[a * t + b])))))
        out.extend(acc)
    return out


CHECKER = ConstMem()

"""Lab 01's kit-only checker (common/labs/01_shared_banks/harness.c says what
each case kind runs).

Steps 1-3 are the host-side bank model: bank_of on many addresses (step 1)
and conflict_degree on many warps' patterns, 4-byte ones (step 2), 8- and
16-byte ones and inputs it must refuse (step 3); the right answers come
from the model worked out again here. Step 4 is the probe: its clock values
cannot be judged, but every thread's sum of the words it read can (and
each warp's stop must come after its start); round counts it must refuse
are cases too. Steps 5-7 are C = A*B^T on batches of 32x32 matrices, with
C's guards checked; nonzero small integers make every sum exact, so a
dropped product or a wrong index shows, and one batch of reals is judged
against a derived rounding bound."""
from __future__ import annotations

import math
import operator
import random
import struct
from array import array

from cmlgrade.checkbase import FILL_FLOATS, Case, LabChecker, floats_close, outside_write

LAB = "01_shared_banks"

WARP, BANKS = 32, 32
REC = 2 + WARP                  # harness: access_bytes, NULL flag, 32 addresses
GUARD = 64                      # harness: BK_GUARD words each side of C
TILE = 32
MATRIX = TILE * TILE
PROBE_WARPS, UNROLL, MAX_WORD, MAX_ROUNDS = 16, 32, 1088, 100000
THREADS = PROBE_WARPS * WARP
INVALID_VALUE = 1               # cudaErrorInvalidValue
POISON = 0xFFFFFFFF
U = 2.0 ** -24                  # float's unit roundoff


def model_degree(addrs: list[int], nbytes: int) -> int:
    """conflict_degree as banks.h defines it, counted independently."""
    if nbytes not in (4, 8, 16) or any(a % nbytes for a in addrs):
        return -1
    words = nbytes // 4
    lanes = WARP // words
    total = 0
    for first in range(0, WARP, lanes):
        seen: dict[int, set[int]] = {}
        for a in addrs[first:first + lanes]:
            for k in range(words):
                w = a // 4 + k
                seen.setdefault(w % BANKS, set()).add(w)
        total += max(len(s) for s in seen.values())
    return total


def _patterns(rnd: random.Random, nbytes: int, count: int) -> list[list[int]]:
    """Warp patterns of nbytes-wide accesses (aligned): strides, broadcast,
    lanes crowded into a few words (broadcast and conflict mixed), lanes in
    one bank 16 KiB or more apart, and addresses anywhere."""
    out = []
    step = nbytes
    for s in (0, 1, 2, 3, 4, 8, 16, 17, 32, 33, 64):
        base = rnd.randrange(0, 1 << 16, step)
        out.append([(base + s * step * i) & 0xFFFFFFFF for i in range(WARP)])
    base = rnd.randrange(0, 1 << 20, step)
    out.append([base + (i % 2) * 16384 * (i // 2 + 1) for i in range(WARP)])          # one bank, far apart
    out.append([rnd.randrange(0, 1 << 19) * 128 + (i * step) % 128 for i in range(WARP)])  # far apart, banks spread
    while len(out) < count:
        style = rnd.randrange(4)
        if style == 0:      # a handful of words: broadcast within, conflicts between
            pool = [rnd.randrange(0, 1 << 12, step) for _ in range(rnd.randint(1, 6))]
            out.append([rnd.choice(pool) for _ in range(WARP)])
        elif style == 1:    # a small window: some lanes share words, some banks
            out.append([rnd.randrange(0, 64 * nbytes, step) for _ in range(WARP)])
        elif style == 2:    # anywhere in 4 GiB
            out.append([rnd.randrange(0, 1 << 32, step) for _ in range(WARP)])
        else:               # a random stride with a random base
            base, s = rnd.randrange(0, 1 << 24, step), rnd.randint(1, 40)
            out.append([(base + s * step * i) & 0xFFFFFFFF for i in range(WARP)])
    return out


def _records(pats: list[tuple[int, int, list[int]]]) -> bytes:
    """(access_bytes, NULL flag, addresses) -> the harness's records."""
    words = array("I")
    for nbytes, null, addrs in pats:
        words.append(nbytes & 0xFFFFFFFF)
        words.append(null)
        words.extend(addrs)
    return words.tobytes()


def _probe_sum(word: int, rounds: int) -> int:
    return rounds * sum(word + 32 * j for j in range(UNROLL)) & 0xFFFFFFFF


def _lane_words_desc(words: list[int]) -> str:
    return "lane i reads word " + ", ".join(str(w) for w in words[:4]) + ", ..."


class Banks(LabChecker):
    def __init__(self) -> None:
        self._abt: dict[int, tuple[Case, array, array]] = {}

    def cases(self, rnd: random.Random, cpu: bool) -> list[Case]:
        out = []
        # step 1: edge addresses, then random ones below 64 KiB and anywhere in 4 GiB
        edge = [0, 1, 2, 3, 4, 7, 124, 127, 128, 131, 132, 4 * 33, 16384, 16384 + 68, 49152, 0xFFFFFFFC, 0xFFFFFFFF,
                0x80000000, 0x7FFFFFFF]
        low = array("I", edge + [rnd.randrange(1 << 16) for _ in range(2000)])
        out.append(Case(0, 0, 0, low.tobytes(), f"bank_of on {len(low)} addresses below 64 KiB"))
        anyw = array("I", [rnd.randrange(1 << 32) for _ in range(3000)])
        out.append(Case(0, 0, 0, anyw.tobytes(), f"bank_of on {len(anyw)} addresses anywhere"))
        # step 2: 4-byte patterns (kind 1, b = the step)
        pats = [(4, 0, p) for p in _patterns(rnd, 4, 300)]
        out.append(Case(1, len(pats), 2, _records(pats), f"conflict_degree on {len(pats)} 4-byte patterns"))
        # step 3: 8- and 16-byte patterns, and inputs it must refuse (-1)
        for nbytes in (8, 16):
            pats = [(nbytes, 0, p) for p in _patterns(rnd, nbytes, 300)]
            out.append(Case(1, len(pats), 3, _records(pats),
                            f"conflict_degree on {len(pats)} {nbytes}-byte patterns"))
        bad = []
        for nbytes in (8, 16, 4):
            p = [rnd.randrange(0, 1 << 16, nbytes) for _ in range(WARP)]
            p[rnd.randrange(WARP)] += rnd.randint(1, 3) if nbytes == 4 else nbytes // 2  # 4-byte aligned, not nbytes
            bad.append((nbytes, 0, p))
        for nbytes in (0, 2, 12, 32, -4):
            bad.append((nbytes, 0, [4 * i for i in range(WARP)]))
        bad.append((4, 1, [0] * WARP))
        out.append(Case(1, len(bad), 3, _records(bad),
                        "conflict_degree on inputs it must refuse (misaligned, width not 4/8/16, NULL)"))
        # step 4: round counts it must refuse, then the probe on distinct lane words (the
        # grader's counters and technique runs take a step's last two ordinary cases of the
        # largest size: they must be probes that run; the limit's is not ordinary)
        for rounds in (0, -1, MAX_ROUNDS + 1):
            out.append(Case(3, rounds & 0xFFFFFFFFFFFFFFFF, 0, array("I", range(WARP)).tobytes(),
                            f"probe with rounds = {rounds} (must return cudaErrorInvalidValue)"))
        named = {"stride 1": [i for i in range(WARP)], "stride 33": [33 * i for i in range(WARP)],
                 "stride 32": [32 * i for i in range(WARP)],
                 "tile column 5 swizzled": [32 * i + (5 ^ i) for i in range(WARP)]}
        for k in range(3):
            named[f"random words {k + 1}"] = rnd.sample(range(MAX_WORD), WARP)
        # the contract's limits (banks.h): the highest words a lane may name, BANKS_PROBE_MAX_ROUNDS rounds on a
        # GPU (a few on the CPU path, where every load is emulated)
        named["the highest words"] = rnd.sample(range(MAX_WORD - WARP, MAX_WORD), WARP)
        for name, words in named.items():
            rounds = (rnd.randint(2, 12 if cpu else 50) if "random" in name else 1 if name == "stride 1" else
                      (3 if cpu else MAX_ROUNDS) if "highest" in name else 7)
            out.append(Case(2, rounds, 0, array("I", words).tobytes(), f"probe, {name}, {rounds} round(s)",
                            limit="highest" in name))
        # steps 5-7: batches of nonzero small-integer matrices (exact), one of reals (bounded)
        batches = [1, 2, 33, rnd.randint(3, 40 if cpu else 400)] + ([] if cpu else [257])
        for n in batches:   # integers +-[1, 64]: |products| <= 2^12, sums of 32 exact in float
            raw = rnd.randbytes(2 * n * MATRIX)
            vals = array("f", [float((b & 63) + 1 if b & 64 else -1 - (b & 63)) for b in raw])
            out.append(Case(4, n, 0, vals.tobytes(), f"A*B^T, batch {n}, integers (exact)"))
        n = 5 if cpu else 65    # reals +-[0.25, 1): a dropped product (>= 1/16) is far beyond the bound
        raw = array("I", rnd.randbytes(8 * n * MATRIX))
        vals = array("f", [(0.25 + 0.75 * (v >> 8) / (1 << 24)) * (1 if v & 1 else -1) for v in raw])
        out.append(Case(4, n, 0, vals.tobytes(), f"A*B^T, batch {n}, reals"))
        for batch in (0, -1):
            out.append(Case(5, batch & 0xFFFFFFFFFFFFFFFF, 0, bytes(8 * MATRIX),
                            f"A*B^T with batch = {batch} (must return cudaErrorInvalidValue)"))
        return out

    def step_cases(self, cases: list[Case], step: int) -> list[Case]:
        if step == 1:
            return [c for c in cases if c.kind == 0]
        if step in (2, 3):
            return [c for c in cases if c.kind == 1 and c.b == step]
        if step == 4:
            return [c for c in cases if c.kind in (2, 3)]
        return [c for c in cases if c.kind in (4, 5)]

    def out_bytes(self, c: Case) -> int:
        if c.kind == 0:
            return c.count * 4
        if c.kind == 1:
            return c.a * 4
        if c.kind == 2:
            return THREADS * 4 + 2 * PROBE_WARPS * 8
        if c.kind == 4:
            return (c.count // 2 + 2 * GUARD) * 4
        return 4

    def judge(self, c: Case, step: int, out: bytes) -> str | None:
        want_bytes = self.out_bytes(c)
        if len(out) != want_bytes:
            return f"{len(out)} bytes of output, expected {want_bytes}"
        if c.kind == 0:
            return self._judge_bank_of(c, out)
        if c.kind == 1:
            return self._judge_degree(c, out)
        if c.kind == 2:
            return self._judge_probe(c, out)
        if c.kind in (3, 5):
            got = struct.unpack("<I", out)[0]
            return None if got == INVALID_VALUE else (
                f"returned error {got}, expected cudaErrorInvalidValue ({INVALID_VALUE})")
        return self._judge_abt(c, out)

    @staticmethod
    def _judge_bank_of(c: Case, out: bytes) -> str | None:
        addrs, got = array("I", c.data), array("i", out)
        for a, g in zip(addrs, got):
            if g != (a // 4) % BANKS:
                return f"bank_of({a}) = {g}, expected {(a // 4) % BANKS}"
        return None

    @staticmethod
    def _judge_degree(c: Case, out: bytes) -> str | None:
        w, got = array("I", c.data), array("i", out)
        for k in range(c.a):
            r = w[k * REC:(k + 1) * REC]
            nbytes = r[0] - (1 << 32) if r[0] >= 1 << 31 else r[0]
            addrs = list(r[2:])
            want = -1 if r[1] else model_degree(addrs, nbytes)
            if got[k] != want:
                what = ("byte_address NULL" if r[1] else
                        "lanes at bytes " + ", ".join(str(a) for a in addrs[:6]) + ", ...")
                return (f"pattern {k + 1} ({what}; access_bytes {nbytes}): conflict_degree = {got[k]}, "
                        f"expected {want}")
        return None

    @staticmethod
    def _judge_probe(c: Case, out: bytes) -> str | None:
        words = list(array("I", c.data))
        sums = array("I", out[:THREADS * 4])
        start = struct.unpack_from(f"<{PROBE_WARPS}q", out, THREADS * 4)
        stop = struct.unpack_from(f"<{PROBE_WARPS}q", out, THREADS * 4 + PROBE_WARPS * 8)
        for t in range(THREADS):
            want = _probe_sum(words[t % WARP], c.a)
            if sums[t] != want:
                why = "never written" if sums[t] == POISON else "other words read, or not every round"
                return (f"sums[{t}] = {sums[t]}, expected {want} (the words lane {t % WARP} reads, every round; "
                        f"{why}; {_lane_words_desc(words)})")
        for w in range(PROBE_WARPS):
            if stop[w] <= start[w]:
                why = "never written" if stop[w] == -1 or start[w] == -1 else "clock64() read in the wrong place"
                return f"warp {w}: stop {stop[w]} is not after start {start[w]} ({why})"
        return None

    def _want_abt(self, c: Case) -> tuple[array, array]:
        """C = A*B^T of the case in double (exact for the integer cases)
        and each element's sum of |products| (for the bound)."""
        got = self._abt.get(id(c))
        if got is not None and got[0] is c:
            return got[1], got[2]
        # products of two floats are exact in double and 32 of them add up with an
        # error below 2^-48 sum|a b|: far inside the float bound (exact for integers)
        v = array("f", c.data).tolist()
        n = c.a * MATRIX
        exact = "exact" in c.label
        want, mag = array("d"), array("d")
        for m in range(c.a):
            rows_a = [v[m * MATRIX + i * TILE:m * MATRIX + (i + 1) * TILE] for i in range(TILE)]
            rows_b = [v[n + m * MATRIX + j * TILE:n + m * MATRIX + (j + 1) * TILE] for j in range(TILE)]
            abs_b = [[abs(x) for x in rb] for rb in rows_b]
            for ra in rows_a:
                want.extend(sum(map(operator.mul, ra, rb)) for rb in rows_b)
                if not exact:
                    abs_a = [abs(x) for x in ra]
                    mag.extend(sum(map(operator.mul, abs_a, ab)) for ab in abs_b)
        if len(self._abt) > 64:
            self._abt.clear()
        self._abt[id(c)] = (c, want, mag)
        return want, mag

    def _judge_abt(self, c: Case, out: bytes) -> str | None:
        words = array("I", out)
        n = c.a * MATRIX
        where = outside_write(words, GUARD, n, POISON, "C")
        if where:
            return (f"a write outside C, {where}: an index past the matrix, or a block for a matrix that "
                    "does not exist")
        got = array("f", out[GUARD * 4:(GUARD + n) * 4])
        want, mag = self._want_abt(c)
        exact = "exact" in c.label
        for k in range(n):
            g, w = got[k], want[k]
            # a float sum of 32 products in order, each step rounding once: |err| <= 32 u sum|a b|
            tol = 0.0 if exact else 32 * U * mag[k] + 1e-30
            if math.isfinite(g) and abs(g - w) <= tol:
                continue
            m, i, j = k // MATRIX, k // TILE % TILE, k % TILE
            what = "never written" if words[GUARD + k] == POISON else f"{g:.9g}"
            return (f"matrix {m}, C[{i}][{j}] = {what}, expected {w:.9g}"
                    + (f" (allowed error {tol:.3g})" if tol else ""))
        return None

    def timing_case(self, step: int, repeats: int, seed: int) -> Case | None:
        if step not in (6, 7):
            return None
        batch = 1 << 16   # the runner's default: A and B 256 MiB each, C 256 MiB, far past L2
        return Case(4, batch, 0, b"", f"A*B^T, batch {batch} (timed)", fill=FILL_FLOATS, repeats=repeats,
                    seed=seed, words=2 * batch * MATRIX)

    def traffic(self, c: Case, step: int) -> int:
        return 4 * (c.count + c.count // 2)   # A and B read once, C (one matrix a pair) written once

    def close(self, c: Case, step: int, ref: int, got: int) -> bool:
        # inputs in [-1, 1): sum|a b| < 32, and each of the two harnesses is within
        # 32 u sum|a b| of the exact product, so they differ by at most 2 * 32 * 32 u
        return floats_close(ref, got, 0.0, 2 * 32 * 32 * U)


CHECKER = Banks()

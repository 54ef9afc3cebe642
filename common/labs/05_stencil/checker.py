"""Lab 05's kit-only checker (common/labs/05_stencil/harness.c says how a case
is laid out): step 1 runs 1D grids, step 2 2D grids, steps 3-6 3D grids.

Every grid value and the boundary value `outside` are nonzero integers
below 2^11 in magnitude and the coefficients distinct odd multiples of 1/8
below 4: every product and every partial sum is exact in float, so the
answer is exact whatever the order of the sum, and a dropped term, a
neighbour from the wrong side, a halo cell left unloaded or holding 0, or
a read before or past the array (NaN there) changes it. Sizes are never
all multiples of a tile (1D 2048, 2D 64 x 32, 3D 32 x 8 x 4, 64 x 16 x 64
planes, 128 x 16 x 32 planes): 1 point, 1 wide, one past a tile, primes,
several z chunks. Grids the launcher must refuse are cases too."""
from __future__ import annotations

import math
import random
import struct
from array import array
from itertools import repeat
from operator import add, mul, truediv

from cmlgrade.checkbase import ANSWERS, FILL_FLOATS, Case, LabChecker, floats_close, outside_write

LAB = "05_stencil"

R = 3                     # STENCIL_R
HEAD = 2 * R + 1 + 9 + 7 + 1   # stencil_coeffs: c1, c2, c3, outside (floats)
GUARD = 64                # harness: ST_GUARD words each side of out
MAX_NY2, MAX_YZ3 = 1000000, 65535   # stencil.h: 2D ny <=, 3D ny and nz <=
POISON = 0xFFFFFFFF
INVALID_VALUE = 1         # cudaErrorInvalidValue
U = 2.0 ** -24
OFF3 = ((0, 0, 0), (-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0), (0, 0, -1), (0, 0, 1))


def _dims(step: int) -> int:
    return 1 if step == 1 else 2 if step == 2 else 3


def _name(nx: int, ny: int, nz: int, dims: int) -> str:
    return (f"1D n = {nx}" if dims == 1 else f"2D {nx} x {ny}" if dims == 2 else f"3D {nx} x {ny} x {nz}")


def _distinct_eighths(rnd: random.Random, k: int) -> list[int]:
    """k distinct odd numerators p in +-[1, 31]: coefficients p / 8."""
    return rnd.sample([p for p in range(-31, 32) if p % 2], k)


def _values(rnd: random.Random, n: int) -> list[int]:
    """n nonzero integers in +-[1, 2047]."""
    raw = array("H", rnd.randbytes(2 * n))
    return [(v & 2047 or 1) * (1 if v & 0x8000 else -1) for v in raw]


class Stencil(LabChecker):
    def _case(self, rnd: random.Random, dims: int, nx: int, ny: int, nz: int, limit: bool = False) -> Case:
        c1, c2, c3 = _distinct_eighths(rnd, 2 * R + 1), _distinct_eighths(rnd, 9), _distinct_eighths(rnd, 7)
        outside = _values(rnd, 1)[0]
        head = array("f", [p / 8 for p in c1 + c2 + c3] + [float(outside)])
        grid = array("f", _values(rnd, nx * ny * nz))
        return Case(0, nx, ny | nz << 32, head.tobytes() + grid.tobytes(), _name(nx, ny, nz, dims), limit=limit)

    def cases(self, rnd: random.Random, cpu: bool) -> list[Case]:
        out = []
        sizes1 = [1, 2, 3, 4, 7, 100, 2047, 2048, 2049, 4099, 98381, rnd.randint(2, 30000),
                  100003 if cpu else 1000003]
        for nx in sizes1:
            out.append(self._case(rnd, 1, nx, 1, 1))
        sizes2 = [(1, 1), (2, 2), (3, 1), (1, 3), (5, 4), (63, 31), (64, 32), (65, 33), (129, 65), (1000, 77),
                  (1, 3001), (3001, 2), (rnd.randint(2, 300), rnd.randint(2, 200))]
        sizes2 += [(700, 301)] if cpu else [(2049, 1025)]   # on a GPU: as large as Python stays quick
        # the contract's limits (stencil.h): 2D ny up to 1,000,000, 3D ny and nz up to 65535 each, on narrow
        # grids (the CPU path's tall 2D grid is 1 wide)
        limits2 = [(1, MAX_NY2)] if cpu else [(1, MAX_NY2), (3, MAX_NY2)]
        for nx, ny in sizes2 + limits2:
            out.append(self._case(rnd, 2, nx, ny, 1, limit=(nx, ny) in limits2))
        sizes3 = [(1, 1, 1), (2, 2, 2), (3, 1, 2), (1, 2, 3), (5, 4, 3), (31, 7, 3), (33, 9, 5), (65, 17, 70),
                  (129, 17, 33), (1, 1, 300), (1, 37, 129), (67, 1, 65),
                  (rnd.randint(2, 70), rnd.randint(2, 40), rnd.randint(2, 140))]
        sizes3 += [(70, 33, 131)] if cpu else [(257, 129, 67)]
        # (the CPU path: ny at the limit, nz at an eighth of it: a z-marching step's 512-thread blocks over 65535
        # planes take half a minute there)
        limits3 = [(1, MAX_YZ3, 1), (1, 2, MAX_YZ3 // 8)] if cpu else [(1, MAX_YZ3, 5), (3, 4, MAX_YZ3),
                                                                      (2, MAX_YZ3, 9)]
        for nx, ny, nz in sizes3 + limits3:
            out.append(self._case(rnd, 3, nx, ny, nz, limit=(nx, ny, nz) in limits3))
        # grids outside the launcher's limits: it must return cudaErrorInvalidValue (each
        # smaller than the step's two largest grids, which the grader's technique run takes)
        refuse = [(1, 0, 1, 1), (1, 5, 2, 1), (2, 0, 1, 1), (2, 4, 3, 2), (3, 0, 1, 1), (3, 1, 65536, 1),
                  (3, 1, 1, 65536)]
        for dims, nx, ny, nz in refuse:
            c = self._case(rnd, dims, nx, ny, nz)
            out.append(Case(1, c.a, c.b, c.data, f"{dims}D step called with nx = {nx}, ny = {ny}, nz = {nz} "
                            "(must return cudaErrorInvalidValue)"))
        return out

    def step_cases(self, cases: list[Case], step: int) -> list[Case]:
        return [c for c in cases if c.label.startswith(f"{_dims(step)}D")]

    def out_bytes(self, c: Case) -> int:
        return 4 if c.kind == 1 else (c.count - HEAD + 2 * GUARD) * 4

    def _reference(self, c: Case, step: int) -> array:
        """8 x the stencil of the case at every point, exact (integers),
        computed once per case (its grid's dimensions say its steps: 3-6
        share the 3D cases)."""
        return ANSWERS.get(c, "stencil", lambda: array("q", self._stencil(c, step)))

    def _stencil(self, c: Case, step: int) -> list[int]:
        head = array("f", c.data[:HEAD * 4])
        p = [round(8 * x) for x in head[:HEAD - 1]]
        c1, c2, c3 = p[:2 * R + 1], p[2 * R + 1:2 * R + 10], p[2 * R + 10:]
        o = round(head[HEAD - 1])
        g = [int(v) for v in array("f", c.data[HEAD * 4:])]
        nx, ny, nz = c.a, c.b & 0xFFFFFFFF, c.b >> 32
        dims = _dims(step)
        if dims == 2 and nx < ny:   # a tall grid: its transpose (c2 transposed too) is less padding to add up
            gt = [0] * len(g)
            for x in range(nx):
                gt[x * ny:(x + 1) * ny] = g[x::nx]
            wt = self._flat(gt, o, c1, [c2[b * 3 + a] for a in range(3) for b in range(3)], c3, ny, nx, 1, 2)
            want = [0] * len(g)
            for x in range(nx):
                want[x::nx] = wt[x * ny:(x + 1) * ny]
        else:
            want = self._flat(g, o, c1, c2, c3, nx, ny, nz, dims)
        return want

    @staticmethod
    def _flat(g: list[int], o: int, c1: list[int], c2: list[int], c3: list[int], nx: int, ny: int, nz: int,
              dims: int) -> list[int]:
        """8 x the stencil of grid g (8 x the coefficients given), exact."""
        # the grid inside a border of `outside` (R cells in 1D, 1 cell per used axis
        # otherwise), flat; each term is then the same grid shifted by one offset
        px, py, pz = (R, 0, 0) if dims == 1 else (1, 1, 0) if dims == 2 else (1, 1, 1)
        wx, wy, wz = nx + 2 * px, ny + 2 * py, nz + 2 * pz
        padded = [o] * (wx * wy * wz)
        for z in range(nz):   # a plane's rows, or (a narrow grid) its columns: slices at C speed
            if nx >= ny:
                for y in range(ny):
                    at = ((z + pz) * wy + y + py) * wx + px
                    padded[at:at + nx] = g[(z * ny + y) * nx:(z * ny + y + 1) * nx]
            else:
                for x in range(nx):
                    at = ((z + pz) * wy + py) * wx + px + x
                    padded[at:at + ny * wx:wx] = g[z * ny * nx + x:(z + 1) * ny * nx:nx]
        if dims == 1:
            taps = list(zip(c1, range(-R, R + 1)))
        elif dims == 2:
            taps = [(c2[(dy + 1) * 3 + dx + 1], dy * wx + dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
        else:
            taps = [(q, (dz * wy + dy) * wx + dx) for q, (dx, dy, dz) in zip(c3, OFF3)]
        first = (pz * wy + py) * wx + px          # the padded index of point (0, 0, 0)
        span = ((nz - 1 + pz) * wy + ny - 1 + py) * wx + px + nx - first if nx * ny * nz else 0
        acc = [0] * span
        for q, off in taps:   # map at C speed: the limit cases hold millions of points
            acc = list(map(add, acc, map(mul, padded[first + off:first + off + span], repeat(q))))
        want = [0] * (nx * ny * nz)
        for z in range(nz):
            if nx >= ny:
                for y in range(ny):
                    at = ((z + pz) * wy + y + py) * wx + px - first
                    want[(z * ny + y) * nx:(z * ny + y + 1) * nx] = acc[at:at + nx]
            else:
                for x in range(nx):
                    at = ((z + pz) * wy + py) * wx + px + x - first
                    want[z * ny * nx + x:(z + 1) * ny * nx:nx] = acc[at:at + ny * wx:wx]
        return want

    def judge(self, c: Case, step: int, out: bytes) -> str | None:
        want_bytes = self.out_bytes(c)
        if len(out) != want_bytes:
            return f"{len(out)} bytes of output, expected {want_bytes}"
        if c.kind == 1:
            got = struct.unpack("<I", out)[0]
            return None if got == INVALID_VALUE else (
                f"returned error {got}, expected cudaErrorInvalidValue ({INVALID_VALUE})")
        n = c.count - HEAD
        words = array("I", out)
        where = outside_write(words, GUARD, n, POISON, "out")
        if where:
            return (f"a write outside out, {where}: a point past the edge of the grid written without a "
                    "bounds check")
        got = array("f", out[GUARD * 4:(GUARD + n) * 4])
        want = self._reference(c, step)
        if array("f", map(truediv, want, repeat(8))) == got:   # every point right (exact), at C speed
            return None
        nx, ny = c.a, c.b & 0xFFFFFFFF
        for k in range(n):
            if got[k] * 8 == want[k]:   # both exact: any order of the sum gives these bits
                continue
            x, y, z = k % nx, k // nx % ny, k // (nx * ny)
            at = f"out[{x}]" if step == 1 else f"out({x}, {y})" if step == 2 else f"out({x}, {y}, {z})"
            if words[GUARD + k] == POISON:
                return f"{at} never written (expected {want[k] / 8:.9g})"
            what = ("NaN: a cell read outside in (before the array or past its end)" if math.isnan(got[k])
                    else f"{got[k]:.9g}")
            return f"{at} = {what}, expected {want[k] / 8:.9g}{self._where(step, c, x, y, z)}"
        return None

    @staticmethod
    def _where(step: int, c: Case, x: int, y: int, z: int) -> str:
        """Where a wrong point lies, when that is the likely cause."""
        nx, ny, nz = c.a, c.b & 0xFFFFFFFF, c.b >> 32
        r = R if step == 1 else 1
        near = [(v < r or v >= size - r) for v, size in ((x, nx), (y, ny), (z, nz))[:_dims(step)]]
        return " (within the stencil's radius of the grid's edge)" if any(near) else ""

    def timing_case(self, step: int, repeats: int, seed: int) -> Case | None:
        # the lab's results sizes: 512 MiB in and out each, far past L2; the
        # harness takes the coefficients from the first HEAD filled words
        shapes = {1: (1 << 27, 1, 1), 2: (16384, 8192, 1), 6: (512, 512, 512)}
        if step not in shapes:
            return None
        nx, ny, nz = shapes[step]
        return Case(0, nx, ny | nz << 32, b"", _name(nx, ny, nz, _dims(step)) + " (timed)", fill=FILL_FLOATS,
                    repeats=repeats, seed=seed, words=HEAD + nx * ny * nz)

    def close(self, c: Case, step: int, ref: int, got: int) -> bool:
        # filled data and coefficients in [-1, 1): a T-term sum has sum|c v| < T,
        # each harness is within (T + 1) u sum|c v| of the exact value (the lab's
        # bound), so the two differ by at most 2 (T + 1) T u
        t = 2 * R + 1 if step == 1 else 9 if step == 2 else 7
        return floats_close(ref, got, 0.0, 2 * (t + 1) * t * U)


CHECKER = Stencil()

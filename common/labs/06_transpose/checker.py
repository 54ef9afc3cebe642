"""Lab 06's kit-only checker: out = the transpose of in (rows x cols
floats); step 1 is a copy."""
from __future__ import annotations

import math
import random
from array import array

from cmlgrade.checkbase import FILL_FLOATS, Case, LabChecker

LAB = "06_transpose"


TALL = 65535 * 64 + 65      # past any tile height's gridDim.y limit up to 64 rows
TALL_CPU = 100003


def distinct_words(rnd: random.Random, n: int) -> array:
    """n distinct floats, normal and finite: consecutive bit patterns from a random start (C speed for tens of
    millions; i + 0.5 stops being distinct in float past 2^23), so any element read from a wrong place differs."""
    start = 0x40000000 + rnd.randrange(1 << 24)
    return array("f", array("I", range(start, start + n)).tobytes())


class Transpose(LabChecker):
    def cases(self, rnd: random.Random, cpu: bool) -> list[Case]:
        shapes = [(1, 1), (1, 37), (37, 1), (32, 32), (33, 65), (97, 31), (257, 129)]
        shapes += [(300, 301)] if cpu else [(512, 513), (1000, 999)]
        shapes.append((rnd.randint(2, 200 if cpu else 700), rnd.randint(2, 200 if cpu else 700)))
        # the contract's limit is rows * cols < 2^31 alone: very tall and very wide narrow matrices, past
        # gridDim.y's 65535 blocks of tiles 32 and 64 rows high on a GPU (4,194,305 rows), as tall as the
        # CPU path takes in a few seconds there
        limits = [(TALL_CPU, 3), (2, TALL_CPU)] if cpu else [(TALL, 1), (TALL, 3), (3, TALL)]
        out = []
        for rows, cols in shapes + limits:  # every element distinct: a wrong index is always seen
            out.append(Case(0, rows, cols, distinct_words(rnd, rows * cols).tobytes(), f"{rows} x {cols}",
                            limit=(rows, cols) in limits))
        return out

    def counter_cases(self, cases: list[Case], step: int) -> list[Case]:
        """Bank conflicts are read on the runner's counter shape, 256 x 1056
        (whole tiles): at partial tiles the padded and swizzled references
        show a few (ncu: 80 and 4 at 1000 x 999 and 512 x 513 on an H100),
        and at 1024 x 1024 still 23 and 6, which made the reference itself
        miss "zero"; the runner's pages read 0 at 256 x 1056."""
        rows, cols = 256, 1056
        vals = array("f", (float(i) + 0.5 for i in range(rows * cols)))
        return [Case(0, rows, cols, vals.tobytes(), f"{rows} x {cols} (counters)")]

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
        elif cols <= rows:   # column by column (few columns), or row by row: few slices at C speed either way
            want = array("f")
            for col in range(cols):
                want.extend(vals[col::cols])
        else:
            want = array("f", bytes(len(c.data)))
            for r in range(rows):
                want[r::rows] = vals[r * cols:(r + 1) * cols]
        if want.tobytes() == out:
            return None
        got = array("f")
        got.frombytes(out)
        i = next(k for k in range(len(want)) if got[k] != want[k] and not (math.isnan(got[k]) and math.isnan(want[k])))
        r, cc = (i // cols, i % cols) if step == 1 else (i % rows, i // rows)
        return f"out[{i}] = {got[i]:.9g}, expected {want[i]:.9g} (in({r}, {cc}))"

    def timing_case(self, step: int, repeats: int, seed: int) -> Case | None:
        rows, cols = 8192, 8193   # 256 MiB each way, a side that is not a multiple of the tile
        return Case(0, rows, cols, b"", f"{rows} x {cols} (timed)", fill=FILL_FLOATS, repeats=repeats, seed=seed,
                    words=rows * cols)


CHECKER = Transpose()

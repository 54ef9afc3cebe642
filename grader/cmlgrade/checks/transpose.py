"""Lab 06's kit-only checker: out = the transpose of in (rows x cols
floats); step 1 is a copy."""
from __future__ import annotations

import math
import random
from array import array

from ..checkbase import FILL_FLOATS, Case, LabChecker

LAB = "06_transpose"


class Transpose(LabChecker):
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

    def timing_case(self, step: int, repeats: int, seed: int) -> Case | None:
        rows, cols = 8192, 8193   # 256 MiB each way, a side that is not a multiple of the tile
        return Case(0, rows, cols, b"", f"{rows} x {cols} (timed)", fill=FILL_FLOATS, repeats=repeats, seed=seed,
                    words=rows * cols)


CHECKER = Transpose()

"""The benchmark's proof that two modes grade alike (bench.py compares the
first and the last): their output files byte for byte, and every graded
item of every student's result.json but the timed ones."""
from __future__ import annotations

import filecmp
import json
import re
from pathlib import Path

# a number a run measures ("324 errors", "67043967 of ...", "1.36e-05"), blurred
# to "#" where two runs are compared but for what they measure
NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def compare(a: Path, b: Path) -> tuple[int, list[str]]:
    """Every file under a and b, byte for byte: (files compared, differences)."""
    fa = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    fb = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    diffs = [f"only in one run: {p}" for p in sorted(set(fa) ^ set(fb))]
    diffs += [str(p) for p in sorted(set(fa) & set(fb)) if not filecmp.cmp(a / p, b / p, shallow=False)]
    return len(fa), diffs


def compare_verdicts(a: Path, b: Path) -> tuple[int, list[str], list[str]]:
    """Every graded item of every student's result.json under a and b but
    the timed ones, whose times differ from run to run on a GPU: its points,
    status and feedback, and which tests its details name (a detail's text
    after its first ": " is left out, and a test that failed is one that
    crashed: a kernel that reads or writes memory it should not shows other
    values, or ends otherwise, in another run). (items compared,
    differences, and the items whose feedback differs in its numbers only:
    counts a run measures, which a race or an out-of-bounds access changes
    from run to run on a GPU: "ERROR SUMMARY: 324 errors" and "196 errors",
    "4 of 20 cases wrong" and "5 of 20", a race first found in one kernel
    and line or in another; every point and status the same)."""
    def named(detail: str) -> str:
        head = detail.split(": ", 1)[0]
        return re.sub(r" (failed|crashed|errored)$", " did not pass", head)

    def items(root: Path) -> dict[tuple, dict]:
        got = {}
        for f in sorted(root.glob("students/*/result.json")):
            res = json.loads(f.read_text(encoding="utf-8"))
            for lab in res.get("labs", []):
                got[(res["student"], lab["lab"], "build errors")] = lab.get("build_errors")
                got[(res["student"], lab["lab"], "not counted")] = lab.get("not_counted")
                for it in lab.get("items", []):
                    if it.get("category") != "performance":
                        got[(res["student"], lab["lab"], it["name"])] = (
                            it.get("points"), it.get("max_points"), it.get("status"), it.get("feedback"),
                            [named(d) for d in it.get("details", [])])
        return got
    def counts_blurred(item):
        if not isinstance(item, tuple):
            return item
        pts, mx, status, feedback, details = item
        # where a compute-sanitizer tool first reports a race (which kernel,
        # which line) is as much the run's as how many hazards it counts
        return (pts, mx, status, [NUMBER.sub("#", f) for f in feedback or []],
                ["first finding" if d.startswith("first finding in ") else d for d in details])

    ia, ib = items(a), items(b)
    keys = [k for k in sorted(set(ia) | set(ib)) if ia.get(k) != ib.get(k)]
    counts = [k for k in keys if counts_blurred(ia.get(k)) == counts_blurred(ib.get(k))]
    return (len(set(ia) | set(ib)), [" / ".join(k) for k in keys if k not in counts],
            [" / ".join(k) for k in counts])


def unexplained(a: Path, b: Path, byte_diffs: list[str]) -> list[str]:
    """The files of compare() whose texts differ in more than their numbers.
    A race (on the CPU path too: a block's threads run in whatever order,
    so a read before the barrier sees other values) changes the counts in
    the feedback from run to run, and nothing else; a changed point is
    compare_verdicts' to find, not this."""
    def blurred(p: Path) -> str:
        return NUMBER.sub("#", p.read_text(encoding="utf-8", errors="replace"))
    return [d for d in byte_diffs
            if not ((a / d).is_file() and (b / d).is_file() and blurred(a / d) == blurred(b / d))]


def verdict_lines(what: str, n: int, diffs: list[str], counts: list[str], most: int | None = None) -> list[str]:
    """compare_verdicts' answer as the bench prints it (`what`: the two
    runs named), naming at most `most` items of each list."""
    lines = [f"verdicts of {what} (every item but the timed ones): {n} items, "
             + ("the same" if not diffs else f"{len(diffs)} differ: {'; '.join(diffs[:most])}")]
    if counts:
        lines.append(f"    the same but for what a run measures (a race's count or first finding, memory read out of "
                     f"bounds), {len(counts)}: {'; '.join(counts[:most])}")
    return lines

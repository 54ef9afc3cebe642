"""The pristine skeleton of each student file, and which steps a student has
not started.

The skeleton is made from the reference solution by the kit's own generator
(`labtool skeleton solutions/<lab>/<file>`, the one CTest checks the
committed labs/ files against), never read from labs/: when a student grades
their own clone, labs/ holds their edits, and comparing with it would call
every edited file "untouched" and hide the "Likely mistake" hints. A kit
without solutions/ (a student release) has no other pristine copy: then the
kit's labs/ file is used and the run says so.

A step is not started while every `TODO(step N)` block of the skeleton is
still in the student's file as it was (the comment and the line after it):
its failures are unfinished work, not a classic mistake."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .sandbox import Executor

_TODO = re.compile(r"TODO\(step (\d+)\)")


@dataclass
class Skeletons:
    files: dict[tuple[str, str], bytes] = field(default_factory=dict)   # (lab, file) -> pristine bytes
    source: dict[tuple[str, str], str] = field(default_factory=dict)    # (lab, file) -> where they came from
    notes: list[str] = field(default_factory=list)

    def get(self, lab: str, name: str) -> bytes | None:
        return self.files.get((lab, name))


def make_skeletons(exe: Executor, labtool: Path | None, kit: Path, labs, out: Path) -> Skeletons:
    """The skeleton of every student file of `labs`, generated from
    solutions/ with labtool when the kit has them, else the kit's labs/
    copy (with a note)."""
    sk = Skeletons()
    out.mkdir(parents=True, exist_ok=True)
    fallback = []
    for lab in labs:
        for name in lab.files:
            sol = kit / lab.solution_dir / name if lab.solution_dir else None
            dest = out / lab.name / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            if sol is not None and sol.is_file() and labtool is not None and labtool.is_file():
                r = exe.run([str(labtool), "skeleton", str(sol), str(dest)], cwd=out, timeout=60, writable=[out])
                if r.rc == 0 and dest.is_file():
                    sk.files[(lab.name, name)] = dest.read_bytes()
                    sk.source[(lab.name, name)] = f"labtool skeleton {lab.solution_dir}/{name}"
                    continue
                sk.notes.append(f"{lab.name}/{name}: labtool skeleton failed ({r.output.strip()[-200:]}); "
                                f"the kit's labs/ copy stands in for the skeleton")
            else:
                fallback.append(f"{lab.name}/{name}")
            sk.files[(lab.name, name)] = (kit / lab.dir / name).read_bytes()
            sk.source[(lab.name, name)] = f"{lab.dir}/{name}"
    if fallback:
        sk.notes.append("no reference solution to make the skeleton from (" + ", ".join(fallback) + "): "
                        "'untouched skeleton' compares with the kit's labs/ files")
    return sk


def _norm(line: str) -> str:
    return " ".join(line.split())


def todo_blocks(skeleton: str) -> dict[int, list[tuple[str, ...]]]:
    """step -> the skeleton's TODO blocks of that step: the TODO comment's
    lines and the first line of code after them (normalized whitespace)."""
    lines = skeleton.splitlines()
    out: dict[int, list[tuple[str, ...]]] = {}
    i = 0
    while i < len(lines):
        m = _TODO.search(lines[i])
        if not m or "//" not in lines[i]:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip().startswith("//") and not _TODO.search(lines[j]):
            j += 1
        block = [_norm(x) for x in lines[i:j]]
        if j < len(lines) and not _TODO.search(lines[j]):
            block.append(_norm(lines[j]))
        out.setdefault(int(m.group(1)), []).append(tuple(block))
        i = j
    return out


def _contains(haystack: list[str], block: tuple[str, ...]) -> bool:
    n = len(block)
    return any(tuple(haystack[k:k + n]) == block for k in range(len(haystack) - n + 1))


def not_started(skeleton: str, student: str) -> set[int]:
    """The steps whose every TODO block is still in the student's file as in
    the skeleton."""
    mine = [_norm(x) for x in student.splitlines()]
    mine = [x for x in mine if x]  # a blank line added or removed changes nothing
    out = set()
    for step, blocks in todo_blocks(skeleton).items():
        if all(_contains(mine, tuple(x for x in b if x)) for b in blocks):
            out.add(step)
    return out

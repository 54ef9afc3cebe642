"""Temporary source trees. A student's tree is the pristine kit (the
instructor's tests, headers and common/ drivers) without solutions/ and
without the grader's code but its CMakeLists.txt and harnesses, configured
as the grading edition (-DKIT_EDITION=grading: no reference, no catalogue,
no kit tests): nothing secret is in reach. Only the student-editable files
come from the submission. The reference is built from the kit itself."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

# What of the kit a student tree needs (everything else stays out).
KIT_PARTS = ("CMakeLists.txt", "CMakePresets.json", "cmake", "common", "labs", "tools")
SKIP_NAMES = {".git", "build", "__pycache__", ".ci"}
GRADING_EDITION = "grading"   # the KIT_EDITION a student's tree is configured with (CMakeLists.txt)


class TreeError(Exception):
    pass


def check_kit(kit: Path) -> list[str]:
    """What is missing from the kit for the grader to work (empty: fine)."""
    missing = [p for p in ("CMakeLists.txt", "cmake", "common", "labs") if not (kit / p).exists()]
    return [f"the kit at {kit} has no {m}" for m in missing]


_SUBDIR = re.compile(r"^\s*add_subdirectory\s*\(\s*\"?([\w./-]+?)\"?\s*[)\s]", re.M | re.I)


def kit_parts(kit: Path) -> list[str]:
    """KIT_PARTS and every folder the kit's top CMakeLists.txt adds with
    add_subdirectory (a new one, like slides/, must be there for cmake to
    configure), never solutions/ or the grader (handled apart) and nothing
    else of the kit's root (an instructor's submissions folder may be
    there)."""
    parts = list(KIT_PARTS)
    top = kit / "CMakeLists.txt"
    text = top.read_text(encoding="utf-8", errors="replace") if top.is_file() else ""
    for m in _SUBDIR.finditer(text):
        first = m.group(1).strip("/").split("/")[0]
        if first not in parts and first not in ("solutions", "grader", "..", ".") and (kit / first).is_dir():
            parts.append(first)
    return parts


def _ignore(_dir: str, names: list[str]) -> set[str]:
    return {n for n in names if n in SKIP_NAMES or n.startswith("build-")}


def make_student_tree(kit: Path, dest: Path, files: dict[str, dict[str, bytes]]) -> Path:
    """dest/src: a copy of the kit's public parts with the student's files
    (lab -> file name -> bytes) in labs/<lab>/. Returns the source dir."""
    src = dest / "src"
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    for part in kit_parts(kit):
        p = kit / part
        if p.is_dir():
            shutil.copytree(p, src / part, ignore=_ignore, symlinks=False)
        elif p.is_file():
            shutil.copy2(p, src / part)
    grader_cmake = kit / "grader" / "CMakeLists.txt"
    (src / "grader").mkdir(parents=True)
    if grader_cmake.is_file():
        shutil.copy2(grader_cmake, src / "grader" / "CMakeLists.txt")
    if (kit / "grader" / "harness").is_dir():  # what every lab's harness shares (common/labs/<lab>/harness.c)
        shutil.copytree(kit / "grader" / "harness", src / "grader" / "harness")
    for lab, lab_files in files.items():
        lab_dir = src / "labs" / lab
        if not lab_dir.is_dir():
            raise TreeError(f"the kit has no labs/{lab}")
        for name, data in lab_files.items():
            if "/" in name or name.startswith("."):
                raise TreeError(f"refusing file name {name!r}")
            (lab_dir / name).write_bytes(data)
    return src

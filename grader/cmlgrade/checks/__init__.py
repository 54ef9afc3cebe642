"""Each lab's kit-only checker, from the kit this grader belongs to: the
lab's spec, labs/<lab>/spec.c, asked through its verifier program
(specs.SpecChecker). A lab without a spec has no harness-based verdicts,
and grade.py says so."""
from __future__ import annotations

import json
from pathlib import Path

from ..specs import SpecChecker

KIT = Path(__file__).resolve().parents[3]   # grader/cmlgrade/checks/ -> the kit


def load() -> dict[str, SpecChecker]:
    """Every lab's checker by lab name. A Python checker module
    (common/labs/<lab>/checker.py, the kit's former way) is refused: its
    cases would be written a second time, beside the spec's."""
    for old in sorted((KIT / "common" / "labs").glob("*/checker.py")):
        raise ImportError(f"{old}: a lab's cases and verdicts are its spec now (labs/{old.parent.name}/spec.c, "
                          f"docs/adding-a-lab.md); remove the Python checker")
    found: dict[str, SpecChecker] = {}
    for spec in sorted((KIT / "labs").glob("*/spec.c")):
        lab = spec.parent.name
        try:
            stem = json.loads((spec.parent / "lab.json").read_text(encoding="utf-8"))["stem"]
        except (OSError, ValueError, KeyError) as e:
            raise ImportError(f"{spec.parent / 'lab.json'}: no stem for the lab's verifier ({e})") from e
        found[lab] = SpecChecker(lab, stem)
    return found


def bind(build_dir: Path, checkers: dict[str, SpecChecker]) -> None:
    """The checkers use the verifiers of this build of the kit."""
    for chk in checkers.values():
        chk.bind(build_dir)

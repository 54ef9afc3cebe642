"""Each lab's kit-only checker, from the kit this grader belongs to: the
lab's spec, labs/<lab>/spec.c, asked through its verifier program
(specs.SpecChecker), or, for a lab not yet written that way, the module
common/labs/<lab>/checker.py beside the lab's harness (checkbase.py says
what a module holds). A lab without either has no harness-based
verdicts, and grade.py says so."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

from ..checkbase import LabChecker

KIT = Path(__file__).resolve().parents[3]   # grader/cmlgrade/checks/ -> the kit


def module(lab: str) -> ModuleType | None:
    """The lab's checker module, loaded once (as cmlgrade.checks.lab_<lab>),
    None where the lab has none."""
    path = KIT / "common" / "labs" / lab / "checker.py"
    name = f"{__name__}.lab_{lab}"
    if name in sys.modules:
        return sys.modules[name]
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    return mod


def load() -> dict[str, LabChecker]:
    """Every lab's checker by lab name: a SpecChecker for a lab with a spec,
    else its module's CHECKER (the module's LAB must be the folder's name).
    A lab with both is refused: its cases would be written twice."""
    from ..specs import SpecChecker
    found: dict[str, LabChecker] = {}
    for spec in sorted((KIT / "labs").glob("*/spec.c")):
        lab = spec.parent.name
        try:
            stem = json.loads((spec.parent / "lab.json").read_text(encoding="utf-8"))["stem"]
        except (OSError, ValueError, KeyError) as e:
            raise ImportError(f"{spec.parent / 'lab.json'}: no stem for the lab's verifier ({e})") from e
        if (KIT / "common" / "labs" / lab / "checker.py").is_file():
            raise ImportError(f"lab {lab} has a spec (labs/{lab}/spec.c) and a Python checker "
                              f"(common/labs/{lab}/checker.py): one of them must go")
        found[lab] = SpecChecker(lab, stem)
    for path in sorted((KIT / "common" / "labs").glob("*/checker.py")):
        mod = module(path.parent.name)
        lab, chk = getattr(mod, "LAB", None), getattr(mod, "CHECKER", None)
        if lab != path.parent.name or not isinstance(chk, LabChecker):
            raise ImportError(f"{path}: LAB must be \"{path.parent.name}\" and CHECKER a LabChecker")
        found[lab] = chk
    return found


def bind(build_dir: Path, checkers: dict[str, LabChecker]) -> None:
    """The spec checkers use the verifiers of this build of the kit."""
    for chk in checkers.values():
        if hasattr(chk, "bind"):
            chk.bind(build_dir)

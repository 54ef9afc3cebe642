"""Each lab's kit-only checker: the module common/labs/<lab>/checker.py of
the kit this grader belongs to, beside the lab's harness (harness.c there;
checkbase.py says what a module holds). A lab without one has no
harness-based verdicts, and grade.py says so."""
from __future__ import annotations

import importlib.util
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
    """Every lab's checker by lab name (its module's LAB, which must be the
    folder's name, and CHECKER)."""
    found: dict[str, LabChecker] = {}
    for path in sorted((KIT / "common" / "labs").glob("*/checker.py")):
        mod = module(path.parent.name)
        lab, chk = getattr(mod, "LAB", None), getattr(mod, "CHECKER", None)
        if lab != path.parent.name or not isinstance(chk, LabChecker):
            raise ImportError(f"{path}: LAB must be \"{path.parent.name}\" and CHECKER a LabChecker")
        found[lab] = chk
    return found

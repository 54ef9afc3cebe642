"""Each lab's kit-only checker, one module per lab (checkbase.py says what
a module holds). A lab without a module here has no harness-based verdicts."""
from __future__ import annotations

import importlib
import pkgutil

from ..checkbase import LabChecker


def load() -> dict[str, LabChecker]:
    found: dict[str, LabChecker] = {}
    for m in pkgutil.iter_modules(__path__):
        mod = importlib.import_module(f"{__name__}.{m.name}")
        lab, chk = getattr(mod, "LAB", None), getattr(mod, "CHECKER", None)
        if isinstance(lab, str) and isinstance(chk, LabChecker):
            found[lab] = chk
    return found

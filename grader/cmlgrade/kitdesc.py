"""The kit's description of its labs: <build>/kit/labs.json where the build
wrote it, else the same fields derived here from each labs/<lab>/lab.json
(derive: what cmake/KitManifest.cmake adds), and which edition the kit
says it is (kit_edition: only a developer kit's solutions/ are used)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from .labtypes import LabError


# ------------------------------------------------------------ the kit's description

FORMAT = 1


def derive(manifest: dict, has_solutions: bool) -> dict:
    """A manifest with the fields the build adds for <build>/kit/labs.json
    (cmake/KitManifest.cmake, kit_manifest_description)."""
    d = {k: v for k, v in manifest.items() if k != "about"}
    name, stem = d.get("name", ""), d.get("stem", "")
    d["dir"] = f"labs/{name}"
    d["solution_dir"] = f"solutions/{name}" if has_solutions else ""
    d["kernel_file"] = (d.get("files") or [""])[0]
    d["suite"] = "step{num}"
    d["targets"] = {"runner": f"{stem}_run", "tests": f"test_{stem}",
                    "model_tests": f"test_{stem}_model" if d.get("model") else "", "ref_suffix": "_ref"}
    return d


_EDITION = re.compile(r'^set\(KIT_EDITION "(developer|student|grading)" CACHE', re.M)


def kit_edition(kit: Path) -> str:
    """What the kit's CMakeLists.txt says it is (KIT_EDITION's default):
    "developer" (the repository: the reference solutions are there) or
    "student" (a release, tools/release); a kit that says neither is taken
    for a developer kit, which its configure checks."""
    try:
        m = _EDITION.search((kit / "CMakeLists.txt").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        m = None
    return m.group(1) if m else "developer"


def manifests(kit: Path) -> list[dict]:
    """labs/*/lab.json of the kit, in name order, with the build's fields
    (solution_dir: the developer kit's solutions/<lab>, kit_edition)."""
    solutions = kit_edition(kit) == "developer"
    out = []
    for path in sorted((kit / "labs").glob("*/lab.json")):
        try:
            m = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise LabError(f"{path}: not a readable manifest: {e}") from e
        if not isinstance(m, dict) or m.get("name") != path.parent.name:
            raise LabError(f"{path}: its \"name\" must be the folder's name, {path.parent.name}")
        out.append(derive(m, solutions))
    return out


def kit_description(kit: Path, build_dir: Path | None = None) -> list[dict]:
    """The labs of the kit: <build_dir>/kit/labs.json when the build wrote
    it, else the same fields made from labs/*/lab.json."""
    written = build_dir / "kit" / "labs.json" if build_dir else None
    if written is not None and written.is_file():
        try:
            data = json.loads(written.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise LabError(f"{written}: not readable: {e}") from e
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("labs"), list):
            raise LabError(f"{written}: expected {{\"format\": {FORMAT}, \"labs\": [...]}}")
        return data["labs"]
    return manifests(kit)

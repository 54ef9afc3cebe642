"""What a grade may rest on: the object checks of a lab's build (which
objects are the student's, which paths they may include) and the secret
seed's stand-in for student processes. See docs/grading.md §8."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

from .labs import Lab
from .objcheck import ObjectReport, check_objects, interface_names

SYSTEM_INCLUDE_ROOTS = [Path("/usr/include"), Path("/usr/lib/gcc"), Path("/usr/local/include"),
                        Path("/usr/local/cuda"), Path("/usr/lib/cuda"), Path("/opt/cuda")]


def lab_objects(lab: Lab, build_dir: Path) -> tuple[list[Path], list[Path], bool]:
    """The student's compiled objects of a lab in a build folder (the CUDA
    build's and the CPU path's object libraries, the model file's object),
    their dependency files, and whether they are the CPU path's."""
    cm = build_dir / "CMakeFiles"
    objs: list[Path] = []
    cpu = False
    for d in sorted(cm.glob(f"{lab.stem}_kernels_student*.dir")):
        found = sorted(d.rglob("*.o"))
        objs += found
        cpu = cpu or d.name.endswith("_cpu.dir")
    if lab.model_file:
        for d in sorted(cm.glob(f"test_{lab.stem}_model*.dir")):
            if "_ref" in d.name:
                continue
            objs += sorted(p for p in d.rglob(f"{lab.model_file}.o"))
    deps = [Path(str(o) + ".d") for o in objs if Path(str(o) + ".d").is_file()]
    deps += [o.with_suffix(".d") for o in objs if o.with_suffix(".d").is_file()]
    return objs, deps, cpu


def include_roots(lab: Lab, depfile: Path) -> list[Path]:
    """Where the object's includes may come from: its own lab folder, the
    kit's public headers (common/include; the CPU path's common/cpu/include),
    the build's generated headers, the system's and CUDA's headers. The
    tree's root is read off the depfile's first entry (the source file)."""
    text = depfile.read_text(encoding="utf-8", errors="replace").replace("\\\n", " ")
    deps = text.partition(": ")[2].split()
    roots = list(SYSTEM_INCLUDE_ROOTS)
    for cuda in Path("/usr/local").glob("cuda*"):
        roots.append(cuda.resolve())
    if deps:
        src = Path(deps[0]).resolve()
        # <root>/labs/<lab>/<file> or, on the CPU path, a translated copy in the build
        root = src.parents[2] if src.parent.name == lab.name and src.parent.parent.name == "labs" else None
        if root is not None:
            roots += [root / "labs" / lab.name, root / "common" / "include", root / "common" / "cpu" / "include"]
    build = next((p for p in depfile.parents if p.name == "CMakeFiles"), None)
    if build is not None:
        roots += [build.parent / "kit" / "include" / lab.name, build.parent / "common" / "cpu"]
        roots += [p for p in build.parent.glob(f"cml_cpu/{lab.stem}_kernels_student*")]
    return roots


def check_lab(lab: Lab, build_dir: Path, kit: Path) -> ObjectReport:
    """The object checks of one lab's student build (objcheck.py)."""
    objs, deps, cpu = lab_objects(lab, build_dir)
    headers = [kit / lab.dir / f"{lab.stem}.h"] + sorted((kit / lab.dir).glob("*.h"))
    iface = interface_names([h for h in dict.fromkeys(headers) if h.is_file()])
    roots: list[Path] = []
    for d in deps:
        roots += include_roots(lab, d)
    return check_objects(objs, deps, iface, list(dict.fromkeys(roots)), cpu)


def derived_seed(secret: int, *parts: str) -> int:
    """A seed a student process may see in place of the secret one: a one-way
    function of the secret and of who and what is graded, so a seed printed
    in feedback neither reveals the secret nor serves another submission."""
    h = hashlib.sha256(f"{secret}|".encode() + "|".join(parts).encode()).digest()
    return int.from_bytes(h[:8], "little") >> 1


def scrub_seed(text: str, seeds: list[int]) -> str:
    """A message without the seeds' values (decimal or hex)."""
    for s in seeds:
        if s is None:
            continue
        text = re.sub(rf"\b({s}|{s:#x}|{s:x})\b", "<secret>", text, flags=re.I)
    return text

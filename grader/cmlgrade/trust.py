"""What a grade may rest on: the object checks of a lab's build (which
objects are the student's, which paths they may include) and the secret
seed's stand-in for student processes. See docs/grading.md §8.

The kit-only checker's verdicts (run_kit_checks), the test lines they
become and the technique checks on traces of what each step launched are
kitchecks.py's."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

from .labs import Lab
from .objcheck import ObjectReport, check_objects, depfiles_of, interface_names

# names this module defined before kitchecks.py was split from it: importable from here still
from .kitchecks import KIT_CHECK_BINARY, KIT_CHECK_TEST, harness_target, reference_traces, run_kit_checks  # noqa: F401
from .kitchecks import _sass_text, _share_floor, _technique, _verdict_lines, traced_steps  # noqa: F401

SYSTEM_INCLUDE_ROOTS = [Path("/usr/include"), Path("/usr/lib/gcc"), Path("/usr/local/include"),
                        Path("/usr/local/cuda"), Path("/usr/lib/cuda"), Path("/opt/cuda")]


def lab_objects(lab: Lab, build_dir: Path) -> tuple[list[Path], list[Path], set[Path]]:
    """The student's compiled objects of a lab in a build folder (the CUDA
    build's and the CPU path's object libraries, the model file's object),
    their dependency files, and which objects are the CPU path's."""
    cm = build_dir / "CMakeFiles"
    objs: list[Path] = []
    cpu: set[Path] = set()
    for d in sorted(cm.glob(f"{lab.kernels_library()}*.dir")):
        found = sorted(d.rglob("*.o"))
        objs += found
        if d.name.endswith("_cpu.dir"):
            cpu |= set(found)
    if lab.model_file:
        for d in sorted(cm.glob(f"test_{lab.stem}_model*.dir")):
            if "_ref" in d.name:
                continue
            found = sorted(d.rglob(f"{lab.model_file}.o"))
            objs += found
            cpu |= set(found)  # host C: no device code
    deps = [d for o in objs for d in depfiles_of(o)]
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
        if src.suffix == ".cpp" and src.is_file():   # the CPU path's translation: its #line names the source
            m = re.search(r'^#line \d+ "([^"]+)"', src.read_text(encoding="utf-8", errors="replace")[:4096], re.M)
            src = Path(m.group(1)).resolve() if m else src
        # <root>/labs/<lab>/<file> or, on the CPU path, a translated copy in the build
        root = src.parents[2] if src.parent.name == lab.name and src.parent.parent.name == "labs" else None
        if root is not None:
            roots += [root / "labs" / lab.name, root / "common" / "include", root / "common" / "cpu" / "include"]
    build = next((p for p in depfile.parents if p.name == "CMakeFiles"), None)
    if build is not None:
        roots += [build.parent / "kit" / "include" / lab.name, build.parent / "common" / "cpu"]
        roots += [p for p in build.parent.glob(f"cml_cpu/{lab.kernels_library()}*")]
    return roots


def check_lab(lab: Lab, build_dir: Path, kit: Path) -> ObjectReport:
    """The object checks of one lab's student build (objcheck.py)."""
    objs, deps, cpu = lab_objects(lab, build_dir)
    headers = [kit / lab.dir / f"{lab.stem}.h"] + sorted((kit / lab.dir).glob("*.h"))
    iface = interface_names([h for h in dict.fromkeys(headers) if h.is_file()])
    roots: list[Path] = []
    for d in deps:
        roots += include_roots(lab, d)
    from .checker import CHECKERS, has_checker
    # where the kit-only checker judges the outputs, a launcher that moves data to the host is refused; a
    # lab's upload functions of host data may copy (lab 02's classic cudaMemcpy-to-a-__constant__ mistake
    # stays a failing test, not a refusal)
    chk = CHECKERS.get(lab.name)
    return check_objects(objs, deps, iface, list(dict.fromkeys(roots)), cpu, host_data=not has_checker(lab.name),
                         host_copies_in=frozenset(chk.host_copies_in if chk else ()))


def derived_seed(secret: int, *parts: str) -> int:
    """A seed a student process may see in place of the secret one: a one-way
    function of the secret and of who and what is graded, so a seed printed
    in feedback neither reveals the secret nor serves another submission."""
    h = hashlib.sha256(f"{secret}|".encode() + "|".join(parts).encode()).digest()
    return int.from_bytes(h[:8], "little") >> 1


def scrub_seed(text: str, seeds: list[int | None]) -> str:
    """A message without the seeds' values (decimal or hex)."""
    for s in seeds:
        if s is None:
            continue
        text = re.sub(rf"\b({s}|{s:#x}|{s:x})\b", "<secret>", text, flags=re.I)
    return text


def scrub_outcomes(br, seeds: list[int | None]) -> None:
    """A test run's messages without the seeds (a hidden test's message
    names its seed)."""
    from .parsers import TestOutcome
    for key, o in list(br.outcomes.items()):
        msgs = [scrub_seed(m, seeds) for m in o.messages]
        if msgs != o.messages:
            br.outcomes[key] = TestOutcome(o.suite, o.name, o.status, msgs)
    br.problem = scrub_seed(br.problem, seeds)


def student_seed(secret: int | None, seed: int | None, student: str, lab: str, files: dict[str, bytes]) -> int | None:
    """The seed a student-linked test process gets: None (the public one) for
    the public run; for the hidden run a one-way stand-in for the secret,
    different for every student, lab and submitted content."""
    if seed is None or secret is None:
        return seed
    digest = hashlib.sha256(b"".join(k.encode() + b"\0" + v for k, v in sorted(files.items()))).hexdigest()
    return derived_seed(secret, student, lab, digest)

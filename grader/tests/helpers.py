"""Shared by the grader's tests: import path, the kit, small builders."""
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

GRADER = Path(__file__).resolve().parent.parent
KIT = GRADER.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# the kit's own build (CTest says where; else build/ of the repository): the labs' verifiers
KIT_BUILD = Path(os.environ.get("CMLGRADE_KIT_BUILD") or KIT / "build")
if str(GRADER) not in sys.path:
    sys.path.insert(0, str(GRADER))

from cmlgrade.labs import load_labs  # noqa: E402

LAB_FILES = {m.parent.name: json.loads(m.read_text())["files"] for m in sorted((KIT / "labs").glob("*/lab.json"))}


def labs(only=None):
    return {lab.name: lab for lab in load_labs(KIT, only=only)}


def kit_verifiers() -> None:
    """The labs' verifiers (specs.py) are the kit's own build's: a test's
    pipeline binds them to its own reference build, gone after the test."""
    from cmlgrade.checker import bind_build
    bind_build(KIT_BUILD)


def tmpdir(testcase) -> Path:
    d = tempfile.TemporaryDirectory(prefix="cmlgrade-test-")
    testcase.addCleanup(d.cleanup)
    testcase.addCleanup(kit_verifiers)
    return Path(d.name)


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def fake_build(argv) -> None:
    """For a test's fake command runner: a "build" of a lab's verifier
    (<stem>_verify, specs.py) puts the kit's real one where the build would
    (the rest of the grader asks it for the lab's cases and verdicts)."""
    if "--build" not in argv or "--target" not in argv:
        return
    target = argv[argv.index("--target") + 1]
    if not target.endswith("_verify"):
        return
    real = KIT_BUILD / target
    if not real.is_file():
        raise RuntimeError(f"{real} is not built: build the kit first (cmake --build build), or set "
                           f"CMLGRADE_KIT_BUILD to a build of it")
    dest = Path(argv[argv.index("--build") + 1])
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(real, dest / target)


kit_verifiers()

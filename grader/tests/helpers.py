"""Shared by the grader's tests: import path, the kit, small builders."""
import json
import os
import sys
import tempfile
from pathlib import Path

GRADER = Path(__file__).resolve().parent.parent
KIT = GRADER.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
if str(GRADER) not in sys.path:
    sys.path.insert(0, str(GRADER))

from cmlgrade.labs import load_labs  # noqa: E402

LAB_FILES = {m.parent.name: json.loads(m.read_text())["files"] for m in sorted((KIT / "labs").glob("*/lab.json"))}


def labs(only=None):
    return {lab.name: lab for lab in load_labs(KIT, only=only)}


def tmpdir(testcase) -> Path:
    d = tempfile.TemporaryDirectory(prefix="cmlgrade-test-")
    testcase.addCleanup(d.cleanup)
    return Path(d.name)


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")

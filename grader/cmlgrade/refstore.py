"""The reference's runs kept in a shared reference build (--reference-build
DIR, in DIR/reference-runs/): a Slurm array's tasks, a batch graded again
and the self-check run again reuse the reference's tests, traces and
counters of a lab and GPU model instead of running them again. The timing
is never kept: a student's steps are timed beside the reference's, every run.

A kept run is found under a key that hashes everything it depends on:
  - the kit and the grader's code (cache.kit_digest), the lab's rubric and
    mistake catalogue as loaded (an override included), the seeds (the
    secret one hashed with the rest, never stored);
  - the bytes of the reference's own programs that ran (the compiler's and
    the CUDA architectures' part);
  - the GPU model and driver (or the CPU path), Nsight Compute (its file),
    and whether the GPU checks run here.
Only a complete run is kept: every test program wrote its report and every
test passed, and on a GPU the counters the lab checks were read. The files
are the grader's own (pickle), in a folder only the instructor writes; the
grader already runs the programs beside them."""
from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

from .cache import run_context
from .machine import find_tool
from .results import LabRun

FORMAT = 1
FOLDER = "reference-runs"


class RefStore:
    def __init__(self, folder: Path, context: str):
        self.folder = folder
        self.context = context

    @classmethod
    def for_run(cls, ref_build: Path, kit: Path, seeds: list, conditions: list[str]) -> "RefStore":
        return cls(ref_build / FOLDER, run_context(f"cmlgrade-reference-runs {FORMAT}", kit, seeds, conditions))

    def key(self, lab, where: str, programs: list[Path]) -> str:
        """`where`: the GPU model's words (or the CPU path's); `programs`:
        the reference's programs the runs use (those missing are named as
        missing)."""
        h = hashlib.sha256(self.context.encode())
        h.update(b"\0" + lab.name.encode() + b"\0" + where.encode())
        h.update(repr(lab.rubric).encode() + repr(lab.mistakes).encode())
        for p in programs:
            h.update(b"\0" + p.name.encode() + b"\0")
            h.update(hashlib.sha256(p.read_bytes()).hexdigest().encode() if p.is_file() else b"missing")
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.pickle"

    def get(self, key: str) -> LabRun | None:
        try:
            with open(self._path(key), "rb") as f:
                d = pickle.load(f)
            if d.get("format") != FORMAT or not isinstance(d.get("run"), LabRun):
                return None
            return d["run"]
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
            return None

    def put(self, key: str, run: LabRun) -> None:
        p = self._path(key)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(f".tmp{os.getpid()}")
        with open(tmp, "wb") as f:
            pickle.dump({"format": FORMAT, "lab": run.lab, "run": run}, f)
        os.replace(tmp, p)   # never a half-written entry, even with a Slurm array's tasks sharing the folder


def tool_stamp(name: str) -> str:
    """Which `name` (Nsight Compute: the counters and traces it reads) the
    runs used: its path and a hash of the file found there."""
    found = find_tool(name)
    if not found:
        return f"{name}: none"
    real = Path(found).resolve()
    try:
        return f"{real} {hashlib.sha256(real.read_bytes()).hexdigest()}"
    except OSError:
        return f"{real}: unreadable"


def complete(run: LabRun, counters_wanted: bool, traces_wanted: list[int]) -> bool:
    """Whether a reference run may be kept: every test program wrote its
    report, every test passed (or is disabled), the counters the lab
    checks were read where they were wanted, and every step in
    `traces_wanted` (the shared steps a student's are compared with) was
    traced."""
    if not run.tests or any(not kind for kind in run.tests.values()):
        return False
    for kind in run.tests.values():
        for br in kind.values():
            if not br.built or br.problem or not br.outcomes:
                return False
            if any(o.status not in ("PASSED", "SKIPPED") for o in br.outcomes.values()):
                return False
    if any(s not in run.traces for s in traces_wanted):
        return False
    if counters_wanted:
        c = run.counters
        if c is None or not c.available or c.missing:
            return False
    return True

"""The content-hash cache: a rerun skips a submission-lab already graded
from the same bytes with the same kit, rubric and seed, and says so.

An entry is one lab of one student: its scored result (LabScore) as JSON,
under a key that hashes everything the result depends on:
  - the student id, the lab and the bytes of every file submitted for it;
  - the kit (its public parts, each lab's rubric among them, solutions/
    and the harnesses' shared code, as the grader reads them) and the
    grader's own code;
  - the lab's rubric and mistake catalogue as loaded (an override included);
  - the seeds (the secret one hashed with the rest, never stored);
  - the machine's grading conditions: the GPUs' names (or why there is no
    GPU), the sandbox, the CUDA architectures.
Change any of them and the entry is not found: the lab is graded afresh.
Only complete results are stored (not one a grader error cut short)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import asdict
from pathlib import Path

from .buildtree import SKIP_NAMES, kit_parts
from .results import Item, LabScore, StudentResult

FORMAT = 1


def _hash_tree(h, root: Path, rel: str) -> None:
    base = root / rel
    if base.is_file():
        h.update(f"F {rel}\n".encode())
        h.update(base.read_bytes())
        return
    for dirpath, dirs, names in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_NAMES and not d.startswith("build-"))
        for n in sorted(names):
            p = Path(dirpath) / n
            if p.is_file() and not p.is_symlink():
                h.update(f"F {p.relative_to(root).as_posix()}\n".encode())
                h.update(p.read_bytes())


def kit_digest(kit: Path) -> str:
    """The kit as the grader uses it, and the grader's own code."""
    h = hashlib.sha256()
    for part in sorted(set(kit_parts(kit)) | {"solutions", "grader/CMakeLists.txt", "grader/harness"}):
        if (kit / part).exists():
            _hash_tree(h, kit, part)
    here = Path(__file__).resolve().parent
    for p in sorted(here.glob("*.py")):
        h.update(f"G {p.name}\n".encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def gpu_names(query: str = "name") -> str:
    """The visible GPUs' names (timings depend on the model), '' without one;
    with query "name,driver_version", their drivers too."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return ""
    from .sandbox import run_process, scrubbed_env
    r = run_process([smi, f"--query-gpu={query}", "--format=csv,noheader"], timeout=30, env=scrubbed_env())
    return r.stdout.strip() if r.rc == 0 else ""


def run_context(tag: str, kit: Path, seeds: list, conditions: list[str]) -> str:
    """What every entry of a run's keys starts from: the kit and the
    grader (kit_digest), the seeds and the machine's grading conditions."""
    h = hashlib.sha256(f"{tag}\n".encode())
    h.update(kit_digest(kit).encode())
    h.update(repr(seeds).encode())
    for c in conditions:
        h.update(b"\0" + c.encode())
    return h.hexdigest()


def labscore_from_dict(d: dict) -> LabScore:
    d = dict(d)
    d["items"] = [Item(**it) for it in d.get("items", [])]
    return LabScore(**d)


def student_from_dict(d: dict) -> StudentResult:
    d = dict(d)
    d["labs"] = [labscore_from_dict(ls) for ls in d.get("labs", [])]
    return StudentResult(**d)


class ResultCache:
    def __init__(self, folder: Path, context: str):
        self.folder = folder
        self.context = context
        self.hits = 0

    @classmethod
    def for_run(cls, folder: Path, kit: Path, seeds: list, conditions: list[str]) -> "ResultCache":
        return cls(folder, run_context(f"cmlgrade-cache {FORMAT}", kit, seeds, conditions))

    def key(self, student: str, lab, files: dict[str, bytes]) -> str:
        h = hashlib.sha256(self.context.encode())
        h.update(b"\0" + student.encode() + b"\0" + lab.name.encode())
        h.update(repr(lab.rubric).encode() + repr(lab.mistakes).encode())
        for name in sorted(files):
            h.update(b"\0" + name.encode() + b"\0" + hashlib.sha256(files[name]).hexdigest().encode())
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, student: str, lab, files: dict[str, bytes]) -> tuple[LabScore, dict] | None:
        p = self._path(self.key(student, lab, files))
        try:
            d = json.loads(p.read_text(encoding="utf-8"))
            if d.get("format") != FORMAT:
                return None
            return labscore_from_dict(d["score"]), dict(d.get("seconds") or {})
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, student: str, lab, files: dict[str, bytes], score: LabScore, seconds: dict) -> None:
        p = self._path(self.key(student, lab, files))
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps({"format": FORMAT, "student": student, "lab": lab.name, "score": asdict(score),
                                   "seconds": seconds}, sort_keys=True), encoding="utf-8")
        os.replace(tmp, p)   # never a half-written entry, even with shards sharing a folder

    def lookup(self, subs, labs, say=None) -> dict[tuple[str, str], tuple[LabScore, dict]]:
        """(student, lab) -> (score, seconds) of every submission-lab found;
        says how many, and which."""
        found = {}
        for s in subs:
            for lab in labs:
                if lab.name in s.files:
                    hit = self.get(s.student, lab, s.files[lab.name])
                    if hit is not None:
                        found[(s.student, lab.name)] = hit
                        if say:
                            say(f"{s.student} {lab.name}: already graded from the same files, kit, rubric and "
                                f"seed: skipped (cache {self.folder})")
        self.hits = len(found)
        return found

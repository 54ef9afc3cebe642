"""A class in shards (grade.py --shard I/S): shard I of S is every S-th
submission in student-id order from the I-th, graded into its own
shard.json (write_shard); merge_shards checks that every shard is there,
graded alike, each student in one only, and writes the class outputs from
them, the same bytes one run over the whole class writes. slurm.py runs
the shards as a Slurm job array."""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

FORMAT = 1


class ShardError(Exception):
    pass


# ------------------------------------------------------------ shards (used by grade.py --shard)

def parse_shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError as e:
        raise ShardError(f"--shard '{text}': expected I/S, e.g. 0/8") from e
    if n < 1 or not 0 <= i < n:
        raise ShardError(f"--shard '{text}': I must be 0 to S-1")
    return i, n


def shard_of(subs: list, i: int, n: int) -> list:
    """Shard i of n: the submissions sorted by student id, every n-th from
    the i-th (students with nothing submitted included, so each row of the
    gradebook comes from exactly one shard)."""
    return [s for k, s in enumerate(sorted(subs, key=lambda s: s.student)) if k % n == i]


def write_shard(out: Path, shard: tuple[int, int], results, labs: list[str], timestamp: str, note: str,
                errors: list[str]) -> Path:
    d = {"format": FORMAT, "shard": shard[0], "shards": shard[1], "labs": labs, "timestamp": timestamp,
         "note": note, "errors": errors, "students": [asdict(r) for r in results]}
    p = out / "shard.json"
    p.write_text(json.dumps(d, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return p


def merge_shards(paths: list[Path], out: Path) -> tuple[int, int]:
    """Writes the class outputs from every shard's shard.json. Returns
    (shards, students)."""
    from .cache import student_from_dict
    from .report import write_all
    shards = []
    for p in paths:
        try:
            shards.append(json.loads(p.read_text(encoding="utf-8")))
        except (OSError, ValueError) as e:
            raise ShardError(f"{p}: unreadable ({e})") from e
    if not shards:
        raise ShardError("no shard to merge")
    first = shards[0]
    n = first.get("shards")
    got = sorted(s.get("shard") for s in shards)
    if got != list(range(n)):
        missing = sorted(set(range(n)) - set(got))
        raise ShardError(f"shards {', '.join(map(str, missing))} of {n} are missing")
    for s in shards:
        for k in ("format", "shards", "labs", "timestamp", "note"):
            if s.get(k) != first.get(k):
                raise ShardError(f"shard {s.get('shard')} differs from shard {first.get('shard')} in '{k}': "
                                 f"graded with other options or another kit; rerun it")
    results = sorted((student_from_dict(d) for s in shards for d in s["students"]), key=lambda r: r.student)
    ids = [r.student for r in results]
    if len(set(ids)) != len(ids):
        raise ShardError("a student appears in two shards")
    write_all(out, results, first["labs"], first["timestamp"], first["note"])
    return n, len(results)

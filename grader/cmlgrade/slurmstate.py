"""A Slurm grading's state folder (made by `slurm submit`): its config.json,
each shard's status.json (running, done, failed), and what state each
shard is in, from those files and Slurm's queue (shard_states)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from .shards import ShardError


# ------------------------------------------------------------ the state folder

def _state(path: Path) -> dict:
    try:
        return json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ShardError(f"{path} is not a grading state folder (made by `slurm submit`): {e}") from e


def _save(path: Path, cfg: dict) -> None:
    tmp = path / "config.json.tmp"
    tmp.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path / "config.json")


def _status(path: Path, i: int) -> dict:
    try:
        return json.loads((path / "shards" / str(i) / "status.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _set_status(path: Path, i: int, **kw) -> None:
    d = path / "shards" / str(i)
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / "status.json.tmp"
    tmp.write_text(json.dumps(kw, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, d / "status.json")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


PENDING = ("PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SUSPENDED")


def _queue(job_ids: list[str]) -> dict[int, str] | None:
    """Array task -> Slurm state (PENDING, RUNNING ...) of the jobs still
    queued; None when squeue cannot be asked."""
    squeue = shutil.which("squeue")
    if not squeue or not job_ids:
        return None
    r = subprocess.run([squeue, "-h", "-r", "-j", ",".join(job_ids), "-o", "%i %T"], capture_output=True, text=True)
    if r.returncode != 0:
        return {} if "Invalid job id" in r.stderr else None
    out: dict[int, str] = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and "_" in parts[0]:
            task = parts[0].split("_", 1)[1]
            if task.isdigit():
                out[int(task)] = parts[1]
    return out


def shard_states(state: Path) -> list[dict]:
    cfg = _state(state)
    queued = _queue([j["id"] for j in cfg.get("jobs", [])])
    rows = []
    for i in range(cfg["shards"]):
        st = _status(state, i)
        s = st.get("state", "")
        q = (queued or {}).get(i)
        why = ""
        if s == "done":
            shown = "done"
        elif s == "failed":
            shown, why = "failed", f"exit {st.get('rc')}"
        elif q is not None:   # in the queue: its own state (a rerun's task may not have written its status yet)
            shown = "pending" if q in PENDING else "running"
        elif queued is None:   # squeue cannot be asked: the status file alone
            shown = "running" if s == "running" else "pending"
        elif s == "running":
            shown, why = "failed", "the task ended without finishing (cancelled, time limit or node failure)"
        else:
            shown, why = "failed", "never ran (not in the queue)"
        rows.append({"shard": i, "state": shown, "why": why, "job": st.get("job", ""), "host": st.get("host", ""),
                     "log": str(state / "shards" / str(i))})
    return rows

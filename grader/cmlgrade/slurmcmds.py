"""What each `slurm` command does (slurm.py reads the command line): submit
writes the state folder and job.sh and submits the job array, task grades
one shard (each array task runs it), progress says each shard's state,
rerun resubmits shards, merge writes the class outputs from the shards."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from .shards import FORMAT, ShardError, merge_shards
from .slurmstate import _now, _save, _set_status, _state, shard_states

SECRET_ENV = "CML_GRADER_SECRET_SEED"


JOB_SH = """#!/bin/bash
# One shard of a class per array task (grader/tools/slurm; docs/grading.md).
#SBATCH --job-name={name}
#SBATCH --array=0-{last}%{parallel}
#SBATCH --gres={gres}
#SBATCH --cpus-per-task={cpus}
#SBATCH --output={state}/shards/%a/slurm-%A_%a.log
{extra}
exec {python} {tool} task {state}
"""


def _sbatch(argv: list[str], env: dict[str, str]) -> str:
    sbatch = shutil.which("sbatch")
    if not sbatch:
        raise ShardError("sbatch is not on the PATH: run this on a Slurm login node")
    r = subprocess.run([sbatch, "--parsable", *argv], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise ShardError(f"sbatch failed (exit {r.returncode}): {r.stderr.strip() or r.stdout.strip()}")
    return r.stdout.strip().split(";")[0]


def cmd_submit(a) -> int:
    grader = Path(__file__).resolve().parent.parent
    inp = Path(a.input).resolve()
    if not inp.is_dir():
        raise ShardError(f"{inp} is not a folder of submissions")
    out = Path(a.out).resolve()
    state = Path(a.state).resolve() if a.state else out.with_name(out.name + "-slurm")
    if (state / "config.json").exists() and not a.force:
        raise ShardError(f"{state} already holds a submitted class: `slurm progress {state}`, "
                         f"`slurm rerun {state}`, or --force to start again")
    if a.shards < 1 or a.parallel < 1:
        raise ShardError("--shards and --parallel must be at least 1")
    grade_args = list(a.grade_args)
    for bad in ("--out", "--shard", "--batch", "--single", "--secret-seed"):
        if bad in grade_args:
            raise ShardError(f"{bad} is set by the job array (the secret seed: ${SECRET_ENV} or --secret-seed "
                             f"here, passed in the job's environment)")
    for i in range(a.shards):
        (state / "shards" / str(i)).mkdir(parents=True, exist_ok=True)
    extra = "\n".join(f"#SBATCH {x}" for x in (a.sbatch_arg or []))
    if a.partition:
        extra += f"\n#SBATCH --partition={a.partition}"
    if a.time:
        extra += f"\n#SBATCH --time={a.time}"
    job = state / "job.sh"
    job.write_text(JOB_SH.format(name=a.name, last=a.shards - 1, parallel=a.parallel, gres=a.gres, cpus=a.cpus,
                                 state=shlex.quote(str(state)), extra=extra.strip(),
                                 python=shlex.quote(a.python or sys.executable),
                                 tool=shlex.quote(str(grader / "tools" / "slurm"))), encoding="utf-8")
    job.chmod(0o755)
    cfg = {"format": FORMAT, "input": str(inp), "out": str(out), "shards": a.shards, "parallel": a.parallel,
           "grade_args": grade_args, "grade": str(grader / "grade.py"), "python": a.python or sys.executable,
           "jobs": []}
    _save(state, cfg)
    env = dict(os.environ)
    if a.secret_seed:
        env[SECRET_ENV] = a.secret_seed
    if a.dry_run:
        print(f"would run: sbatch {job}")
        return 0
    jid = _sbatch([str(job)], env)
    cfg["jobs"].append({"id": jid, "array": f"0-{a.shards - 1}%{a.parallel}", "submitted": _now()})
    _save(state, cfg)
    print(f"submitted job array {jid}: {a.shards} shards, at most {a.parallel} at a time, one GPU each\n"
          f"  progress: {sys.argv[0]} progress {state}\n  when done: {sys.argv[0]} merge {state}")
    return 0


def cmd_task(a) -> int:
    """One array task: its shard of the class into shards/<i>/."""
    state = Path(a.state).resolve()
    cfg = _state(state)
    i = a.shard if a.shard is not None else int(os.environ.get("SLURM_ARRAY_TASK_ID", "-1"))
    if not 0 <= i < cfg["shards"]:
        raise ShardError(f"no shard {i} (SLURM_ARRAY_TASK_ID; the class has {cfg['shards']} shards)")
    d = state / "shards" / str(i)
    job = f"{os.environ.get('SLURM_ARRAY_JOB_ID', os.environ.get('SLURM_JOB_ID', 'local'))}_{i}"
    info = {"job": job, "host": socket.gethostname(), "gpus": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
            "started": _now()}
    _set_status(state, i, state="running", **info)
    shutil.rmtree(d / "out", ignore_errors=True)
    argv = [cfg["python"], cfg["grade"], cfg["input"], "--batch", "--shard", f"{i}/{cfg['shards']}",
            "--out", str(d / "out"), "--cache", str(d / "cache"), "--reference-build", str(state / "reference"),
            "--progress", *cfg["grade_args"]]
    cpus = os.environ.get("SLURM_CPUS_PER_TASK", "")
    if cpus.isdigit() and "--jobs" not in argv:   # the task's CPUs, not the whole node's
        argv += ["--jobs", cpus]
    print(f"[slurm task {job}] {' '.join(shlex.quote(x) for x in argv)}", flush=True)
    rc = subprocess.run(argv).returncode
    ok = rc == 0 and (d / "out" / "shard.json").is_file()
    _set_status(state, i, state="done" if ok else "failed", rc=rc, ended=_now(), **info)
    return rc


def cmd_progress(a) -> int:
    state = Path(a.state).resolve()
    rows = shard_states(state)
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    counts = {k: sum(1 for r in rows if r["state"] == k) for k in ("done", "running", "pending", "failed")}
    for r in rows:
        extra = f" ({r['why']})" if r["why"] else ""
        where = f" {r['job']} on {r['host']}" if r["job"] and r["state"] != "pending" else ""
        print(f"shard {r['shard']:>3}: {r['state']}{extra}{where}")
    print(", ".join(f"{v} {k}" for k, v in counts.items()) + f" of {len(rows)} shards")
    failed = [str(r["shard"]) for r in rows if r["state"] == "failed"]
    if failed:
        print(f"rerun the failed shards alone: {sys.argv[0]} rerun {state}  (logs: {state}/shards/<i>/slurm-*.log)")
    elif counts["done"] == len(rows):
        print(f"all done: {sys.argv[0]} merge {state}")
    return 0


def cmd_rerun(a) -> int:
    state = Path(a.state).resolve()
    cfg = _state(state)
    shards = a.shard or [r["shard"] for r in shard_states(state) if r["state"] == "failed"]
    bad = [s for s in shards if not 0 <= s < cfg["shards"]]
    if bad:
        raise ShardError(f"no shard {bad[0]} (0 to {cfg['shards'] - 1})")
    if not shards:
        print("no failed shard to rerun")
        return 0
    env = dict(os.environ)
    if a.secret_seed:
        env[SECRET_ENV] = a.secret_seed
    array = ",".join(str(s) for s in sorted(set(shards)))
    jid = _sbatch([f"--array={array}", str(state / "job.sh")], env)
    for s in shards:
        _set_status(state, s, state="resubmitted", job=f"{jid}_{s}")
    cfg["jobs"].append({"id": jid, "array": array, "submitted": _now()})
    _save(state, cfg)
    print(f"resubmitted shard(s) {array} as job {jid} (each skips the labs it graded already)")
    return 0


def cmd_merge(a) -> int:
    state = Path(a.state).resolve()
    cfg = _state(state)
    out = Path(a.out).resolve() if a.out else Path(cfg["out"])
    rows = shard_states(state)
    notdone = [str(r["shard"]) for r in rows if r["state"] != "done"]
    if notdone:
        raise ShardError(f"shard(s) {', '.join(notdone)} not done (`slurm progress {state}`; failed ones: "
                         f"`slurm rerun {state}`)")
    n, students = merge_shards([state / "shards" / str(i) / "out" / "shard.json" for i in range(cfg["shards"])],
                               out)
    print(f"merged {n} shards, {students} students into {out}")
    return 0

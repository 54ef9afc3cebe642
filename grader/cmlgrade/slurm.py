"""Grading a class on a Slurm cluster: one job array, one shard per task.

    grader/tools/slurm submit submissions/ --out grades/ --shards 8 --parallel 4 [-- GRADE_OPTIONS]
    grader/tools/slurm progress grades-slurm/
    grader/tools/slurm rerun grades-slurm/            (the failed shards, alone)
    grader/tools/slurm merge grades-slurm/            (writes grades/)

`submit` writes a state folder (default OUT-slurm/: config.json, job.sh,
shards/<i>/) and runs `sbatch --array=0-(S-1)%K job.sh`, one GPU per task
(--gres=gpu:1). Each task runs `slurm task`, which picks its shard from
SLURM_ARRAY_TASK_ID and runs grade.py --shard i/S into shards/<i>/out/
(with its cache in shards/<i>/cache/, so a rerun skips what it graded
already; the reference solutions built once, by the first task, in
reference/ for all), recording running/done/failed in shards/<i>/status.json. `merge`
reads every shard's shard.json and writes the class outputs, the same bytes
a single grade.py run over the whole folder writes. The secret seed goes
with the job's environment (CML_GRADER_SECRET_SEED, exported by sbatch),
never into the state folder."""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

FORMAT = 1
SECRET_ENV = "CML_GRADER_SECRET_SEED"


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


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="slurm", description=__doc__.split("\n\n")[0] + " (docs/grading.md)",
                                epilog="submit ... -- GRADE_OPTIONS: everything after -- goes to each task's grade.py")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("submit", help="submit the class as a job array")
    s.add_argument("input", help="the folder of submissions (one per student)")
    s.add_argument("--out", required=True, help="where `merge` writes the class outputs")
    s.add_argument("--state", help="the state folder (default: OUT-slurm beside OUT; on a shared file system)")
    s.add_argument("--shards", type=int, default=8, help="array tasks (default 8)")
    s.add_argument("--parallel", type=int, default=4, help="at most this many at once (%%K, default 4)")
    s.add_argument("--gres", default="gpu:1", help="per task (default gpu:1)")
    s.add_argument("--cpus", type=int, default=4, help="--cpus-per-task (default 4)")
    s.add_argument("--partition")
    s.add_argument("--time", help="--time per task, e.g. 02:00:00")
    s.add_argument("--sbatch-arg", action="append", metavar="ARG", help="another #SBATCH line, e.g. --account=x")
    s.add_argument("--name", default="cmlgrade", help="the job's name")
    s.add_argument("--python", help="the Python 3.11+ the tasks run (default: this one)")
    s.add_argument("--secret-seed", help=f"passed to the tasks in their environment (or set ${SECRET_ENV})")
    s.add_argument("--force", action="store_true", help="reuse a state folder")
    s.add_argument("--dry-run", action="store_true", help="write job.sh, do not submit")
    t = sub.add_parser("task", help="(run by each array task) grade one shard")
    t.add_argument("state")
    t.add_argument("--shard", type=int, help="default: $SLURM_ARRAY_TASK_ID")
    g = sub.add_parser("progress", help="shards done, running, pending and failed")
    g.add_argument("state")
    g.add_argument("--json", action="store_true")
    r = sub.add_parser("rerun", help="resubmit the failed shards (or --shard I), alone")
    r.add_argument("state")
    r.add_argument("--shard", type=int, action="append")
    r.add_argument("--secret-seed")
    m = sub.add_parser("merge", help="write the class outputs from the shards")
    m.add_argument("state")
    m.add_argument("--out", help="default: submit's --out")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    rest = []
    if "--" in argv:   # submit's grade.py options
        rest, argv = argv[argv.index("--") + 1:], argv[:argv.index("--")]
    a = parser().parse_args(argv)
    a.grade_args = rest
    try:
        return {"submit": cmd_submit, "task": cmd_task, "progress": cmd_progress, "rerun": cmd_rerun,
                "merge": cmd_merge}[a.cmd](a)
    except ShardError as e:
        print(f"slurm: {e}", file=sys.stderr)
        return 2

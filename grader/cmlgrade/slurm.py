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
never into the state folder.

The shards themselves (grade.py --shard, merging them) are shards.py's,
the state folder and Slurm's queue slurmstate.py's, and what each command
does slurmcmds.py's; this module reads the command line."""
from __future__ import annotations

import argparse
import sys

from .shards import ShardError
from .slurmcmds import SECRET_ENV, cmd_merge, cmd_progress, cmd_rerun, cmd_submit, cmd_task

# names this module defined before shards.py, slurmstate.py and slurmcmds.py were split from it: importable from
# here still
from .shards import FORMAT, merge_shards, parse_shard, shard_of, write_shard  # noqa: F401
from .slurmcmds import JOB_SH  # noqa: F401
from .slurmstate import PENDING, shard_states  # noqa: F401


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

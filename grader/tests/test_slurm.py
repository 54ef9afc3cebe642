"""A real single-node Slurm (Debian's slurmctld, slurmd, slurm-client and
munge) grades a small class as a job array, end to end, without a GPU:
`grader/tools/slurm submit` (--array=0-2%2, --gres=gpu:1: each task gets
its own CUDA_VISIBLE_DEVICES), one task cancelled while it runs (progress
shows it failed), `rerun` of that shard alone, `merge`, and the merged
outputs byte-identical to one grade.py run over the same folder. Lab 08
only (its two files mixed between the reference's and the skeleton's; the
CPU path grades it in seconds; a few minutes at most).

The cluster lives in a temporary folder: its own munged (own key and
socket), slurmctld and slurmd on their own ports, and four fake GPU device
nodes (`mknod ... c 1 3`, character devices as Slurm's gres/gpu wants,
named by File= in gres.conf) in that folder, not in /dev. Every daemon it
started is stopped at the end.

Run by CTest as `grader.slurm` (label host; CMLGRADE_SLURM_TEST=1): there,
without the packages or without root it is reported Skipped with the reason
and the install command, and with CMLGRADE_REQUIRE_SLURM=1 (CI: .ci/run
installs the packages and sets it) it FAILS instead. In a plain
`unittest discover` it is skipped, saying how to run it. Needs root
(mknod, daemons)."""
import difflib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

from helpers import GRADER, KIT, LAB_FILES

INSTALL = "apt-get update && apt-get install -y slurmctld slurmd slurm-client munge"
TOOLS = ("slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo", "munged")
SBIN = ("/usr/sbin", "/usr/bin", "/sbin")
# lab 08: two files, so a submission can mix the reference's and the skeleton's, and a lab the CPU path grades
# in seconds (lab 01's reference run alone took 32 s a grading process, and the test starts five)
LAB = "08_occupancy"


def find(tool: str) -> str | None:
    return shutil.which(tool) or next((f"{d}/{tool}" for d in SBIN if os.access(f"{d}/{tool}", os.X_OK)), None)


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """slurmctld + slurmd + munged in `root`, stopped by stop()."""

    def __init__(self, root: Path, gpus: int = 4, cpus: int = 8):
        self.root, self.gpus, self.cpus = root, gpus, cpus
        self.procs: list[subprocess.Popen] = []
        self.host = subprocess.run(["hostname", "-s"], capture_output=True, text=True).stdout.strip() or "localhost"
        self.env = dict(os.environ, SLURM_CONF=str(root / "slurm.conf"))

    def start(self) -> None:
        r = self.root
        for d in ("state", "spool", "log", "munge", "dev"):
            (r / d).mkdir(parents=True, exist_ok=True)
        os.chmod(r / "munge", 0o700)
        key = r / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o600)
        sock = r / "munge" / "munge.socket"
        self._daemon([find("munged"), "--foreground", "--force", f"--socket={sock}", f"--key-file={key}",
                      f"--pid-file={r / 'munge' / 'munged.pid'}", f"--log-file={r / 'log' / 'munged.log'}",
                      f"--seed-file={r / 'munge' / 'seed'}"])
        self._wait(lambda: sock.exists(), "munged did not start", r / "log" / "munged.log")
        for i in range(self.gpus):
            dev = r / "dev" / f"nvidia{i}"
            if not dev.exists():
                os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))   # a character device, like a GPU's
        (r / "gres.conf").write_text(f"Name=gpu File={r}/dev/nvidia[0-{self.gpus - 1}]\n")
        (r / "plugstack.conf").write_text("")
        (r / "slurm.conf").write_text(f"""ClusterName=cmltest
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.log
PlugStackConfig={r}/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SchedulerParameters=sched_interval=1
MinJobAge=600
NodeName={self.host} NodeAddr=127.0.0.1 CPUs={self.cpus} Gres=gpu:{self.gpus} RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes={self.host} Default=YES MaxTime=INFINITE State=UP
""")
        self._daemon([find("slurmctld"), "-D", "-i", "-f", str(r / "slurm.conf")])
        self._wait(lambda: self._ok(["sinfo", "-h"]), "slurmctld did not answer", r / "log" / "slurmctld.log")
        self._daemon([find("slurmd"), "-D", "-f", str(r / "slurm.conf"), "-N", self.host])
        self._wait(lambda: "idle" in self.run(["sinfo", "-h", "-o", "%T"]).stdout, "the node did not come up idle",
                   r / "log" / "slurmd.log")

    def _daemon(self, argv: list) -> None:
        self.procs.append(subprocess.Popen([str(a) for a in argv], env=self.env, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL, start_new_session=True))

    def _ok(self, argv) -> bool:
        return self.run(argv).returncode == 0

    def run(self, argv, **kw) -> subprocess.CompletedProcess:
        return subprocess.run([find(argv[0]) or argv[0], *argv[1:]], env=self.env, capture_output=True, text=True,
                              **kw)

    def _wait(self, cond, what: str, log: Path) -> None:
        """Waits for a daemon by readiness: until cond() holds, or fails at
        once when a daemon has exited. No short time limit (a loaded
        machine starts munged slowly): CTest's timeout bounds the test."""
        while not cond():
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"
                raise RuntimeError(f"{what}: {Path(str(dead[0].args[0])).name} exited with status "
                                   f"{dead[0].returncode}; {log}:\n{tail}")
            time.sleep(0.5)

    def stop(self) -> None:
        """Cancels what is still queued (the job steps end with it), then
        stops the daemons, newest first."""
        if self.procs and self.procs[-1].poll() is None:
            ids = self.run(["squeue", "-h", "-o", "%A"]).stdout.split()
            if ids:
                self.run(["scancel", *ids])
                end = time.monotonic() + 20
                while time.monotonic() < end and self.run(["squeue", "-h"]).stdout.strip():
                    time.sleep(0.5)
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in reversed(self.procs):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def missing() -> list[str]:
    return [t for t in TOOLS if not find(t)]


@unittest.skipUnless(os.environ.get("CMLGRADE_SLURM_TEST"),
                     "the Slurm job array test runs under CTest (ctest -R grader.slurm; needs root and Slurm: "
                     + INSTALL + ")")
class SlurmArrayTest(unittest.TestCase):
    def test_job_array_end_to_end(self):
        # CI sets CMLGRADE_REQUIRE_SLURM=1 (.ci/run installs Slurm and runs as
        # root): there a missing piece fails. Elsewhere (a student's or an
        # instructor's machine) the test says why it cannot run and CTest
        # reports it Skipped, never Passed.
        why = ""
        gone = missing()
        if gone:
            why = f"Slurm is not installed ({', '.join(gone)} missing): {INSTALL}"
        elif os.geteuid() != 0:
            why = ("the Slurm test starts slurmctld, slurmd and munged and makes device nodes: run it as root "
                   "(as CI does)")
        if why and os.environ.get("CMLGRADE_REQUIRE_SLURM") == "1":
            self.fail(why)
        if why:
            self.skipTest(why)
        kit = Path(os.environ.get("CMLGRADE_TEST_KIT") or KIT).resolve()
        base = Path(os.environ.get("CMLGRADE_TEST_BUILD_DIR") or tempfile.mkdtemp(prefix="cmlgrade-slurm-"))
        base = base.resolve() / "slurm"
        shutil.rmtree(base, ignore_errors=True)
        base.mkdir(parents=True)
        t0 = time.monotonic()

        def say(m):
            print(f"[test_slurm {time.monotonic() - t0:5.0f} s] {m}", file=sys.stderr, flush=True)

        # a class of five: the reference, the skeleton, a compile error, two mistakes by hand, a roster absentee
        subs = base / "submissions"
        sol = {f: (kit / "solutions" / LAB / f).read_bytes() for f in LAB_FILES[LAB]}
        skel = {f: (kit / "labs" / LAB / f).read_bytes() for f in LAB_FILES[LAB]}
        main, spill = LAB_FILES[LAB]
        variants = {"ada": sol, "ben": skel, "cy": dict(sol, **{spill: sol[spill] + b"\nint x = ;\n"}),
                    "dee": dict(sol, **{spill: skel[spill]}), "eve": dict(skel, **{main: sol[main]})}
        for who, files in variants.items():
            (subs / who).mkdir(parents=True)
            for f, data in files.items():
                (subs / who / f).write_bytes(data)
        roster = base / "roster.csv"
        roster.write_text("student_id\n" + "".join(f"{w}\n" for w in variants) + "zed\n")
        grade_args = ["--lab", LAB, "--roster", str(roster), "--cuda-arch", os.environ.get("CUDAARCHS", "90"),
                      "--kit", str(kit), "--jobs", "2"]

        cluster = Cluster(base / "cluster")
        self.addCleanup(cluster.stop)
        say("starting munged, slurmctld and slurmd")
        cluster.start()
        env = cluster.env
        tool = [sys.executable, str(GRADER / "tools" / "slurm")]
        state = base / "state"

        def slurm(*a, check=True):
            r = subprocess.run([*tool, *map(str, a)], env=env, capture_output=True, text=True)
            if check:
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            return r

        def progress():
            return {row["shard"]: row for row in json.loads(slurm("progress", state, "--json").stdout)}

        def wait(cond, what, never=lambda p: False):
            # by readiness: until the shards' progress says so; failing at once where it never can
            # (never(p)) or the cluster's daemons have died (CTest's timeout bounds a loaded machine)
            while True:
                p = progress()
                if cond(p):
                    return p
                if never(p):
                    self.fail(f"waiting for {what}, which can no longer happen: {p}")
                dead = [d for d in cluster.procs if d.poll() is not None]
                if dead:
                    logs = "\n".join(f"{q}: {q.read_text(errors='replace')[-1500:]}" for q in sorted(state.rglob("*.log")))
                    self.fail(f"a Slurm daemon exited while waiting for {what}: {p}\n{logs}")
                time.sleep(2)

        say("submitting 3 shards, at most 2 at once, one GPU each")
        r = slurm("submit", subs, "--out", base / "merged", "--state", state, "--shards", 3, "--parallel", 2,
                  "--cpus", 2, "--", *grade_args)
        self.assertIn("submitted job array", r.stdout)
        job = json.loads((state / "config.json").read_text())["jobs"][0]["id"]
        self.assertIn("#SBATCH --array=0-2%2", (state / "job.sh").read_text())
        self.assertIn("#SBATCH --gres=gpu:1", (state / "job.sh").read_text())
        # cancel shard 1 as soon as it runs: progress must call it failed
        p = wait(lambda p: p[1]["state"] == "running", "shard 1 to start",
                 never=lambda p: p[1]["state"] in ("done", "failed"))
        cluster.run(["scancel", f"{job}_1"])
        say("shard 1 cancelled while running")
        p = wait(lambda p: all(p[i]["state"] in ("done", "failed") for i in p), "every shard to end")
        self.assertEqual(p[1]["state"], "failed", p)
        self.assertEqual([p[0]["state"], p[2]["state"]], ["done", "done"], p)
        text = slurm("progress", state).stdout
        self.assertIn("2 done, 0 running, 0 pending, 1 failed of 3 shards", text)
        self.assertIn("rerun", text)
        r = slurm("merge", state, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("shard(s) 1 not done", r.stderr)
        # each task had its own GPU
        gpus = {i: json.loads((state / "shards" / str(i) / "status.json").read_text())["gpus"] for i in (0, 2)}
        self.assertTrue(all(g.isdigit() for g in gpus.values()), gpus)

        say("rerunning shard 1 alone; meanwhile the same class on one machine, for comparison")
        r = slurm("rerun", state)
        self.assertIn("resubmitted shard(s) 1", r.stdout)
        one = base / "one"
        # as on a node with one GPU (a task's view; without one listed the grader would take the CPU path)
        single = subprocess.Popen([sys.executable, str(GRADER / "grade.py"), str(subs), "--batch", "--out", str(one),
                                   "--no-cache", "--reference-build", str(state / "reference"), *grade_args],
                                  env=dict(env, CUDA_VISIBLE_DEVICES="0"),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: single.poll() is None and single.kill())
        wait(lambda p: p[1]["state"] in ("done", "failed"), "the rerun of shard 1")
        self.assertEqual(progress()[1]["state"], "done", (state / "shards" / "1").glob("*.log"))
        # the other shards were not run again (one log each)
        self.assertEqual(len(list((state / "shards" / "0").glob("slurm-*.log"))), 1)
        slurm("merge", state)

        err = single.communicate(timeout=600)[1]
        self.assertEqual(single.returncode, 0, err[-3000:])
        a = sorted(p.relative_to(one) for p in one.rglob("*") if p.is_file())
        b = sorted(p.relative_to(base / "merged") for p in (base / "merged").rglob("*") if p.is_file())
        self.assertEqual(a, b)
        self.assertIn(Path("students/zed/feedback.md"), a)   # the roster's absentee, from exactly one shard
        differ = [f for f in a if (one / f).read_bytes() != (base / "merged" / f).read_bytes()]
        if differ:   # say what differs, line by line, and keep the shards' logs in view
            diff = "".join(line for f in differ for line in difflib.unified_diff(
                (one / f).read_text(errors="replace").splitlines(True),
                (base / "merged" / f).read_text(errors="replace").splitlines(True),
                f"one/{f}", f"merged/{f}", n=2))
            logs = "\n".join(f"{p}: {p.read_text(errors='replace')[-2000:]}" for p in sorted(state.rglob("*.log")))
            self.fail(f"{len(differ)} file(s) differ from the one-machine run: {', '.join(map(str, differ))}\n"
                      f"{diff[:12000]}\n{logs}")
        book = (one / "gradebook.csv").read_text()
        self.assertEqual(len(book.strip().splitlines()), 1 + len(variants) + 1)
        say(f"merged outputs byte-identical to the one-machine run ({len(a)} files)")


if __name__ == "__main__":
    unittest.main()

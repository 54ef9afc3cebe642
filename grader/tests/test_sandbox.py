"""The sandbox for real: a process started the way the grader starts student
code (hidden kit and work folders, the student's own tree readable and
writable) tries to read the solutions, another student's files and the
instructor's rubric override, to overwrite the grader's results, to reach
the network and to see the grader's environment. Runs where bubblewrap
works (CI installs it); elsewhere it skips and says why."""
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from unittest import mock

import helpers  # noqa: F401  (import path)
from helpers import tmpdir

from cmlgrade.sandbox import Executor, become_subreaper, detect_sandbox, kill_leftovers, run_process

PROBE = r"""
import json, os, pathlib, socket, sys
kit, work, override, own = map(pathlib.Path, sys.argv[1:5])
port = int(sys.argv[5])
def read(p):
    try:
        return p.read_text()
    except OSError as e:
        return "refused: " + type(e).__name__
seen = {"solution": read(kit / "solutions" / "04_reduction" / "reduction.cu"),
        "other_student": read(work / "students" / "bob" / "reduction.cu"),
        "override": read(override),
        "own": read(own / "reduction.cu")}
try:
    (work / "results" / "alice.json").write_text('{"points": 1000}')
except OSError as e:
    pass
(own / "build.log").write_text("built")
try:
    socket.create_connection(("127.0.0.1", port), timeout=3).close()
    seen["network"] = "connected"
except OSError as e:
    seen["network"] = "refused: " + type(e).__name__
seen["secret_seed_env"] = os.environ.get("CML_GRADER_SECRET_SEED", "")
seen["other_checkout"] = read(pathlib.Path(sys.argv[6]))
kept = pathlib.Path(sys.argv[8])   # a kept reference run in a shared reference build (refstore.py)
seen["kept_run"] = read(kept)
try:
    kept.write_text("a reference run that lists no tests")
except OSError:
    pass
ancestors = []
for d in pathlib.Path("/proc").iterdir():
    if d.name.isdigit():
        try:
            ancestors.append((d / "cmdline").read_bytes().decode(errors="replace"))
        except OSError:
            pass
seen["cmdlines"] = " ".join(ancestors)
print(json.dumps(seen))
"""


def outside_tmp(testcase) -> Path:
    """A scratch folder outside /tmp: the sandbox puts an empty tmpfs on /tmp,
    which would hide a fake kit there whether or not the grader hides it."""
    for base in (os.environ.get("CMLGRADE_TEST_BUILD_DIR"), "/var/tmp"):
        if base and not Path(base).resolve().is_relative_to("/tmp"):
            try:
                Path(base).mkdir(parents=True, exist_ok=True)
                d = tempfile.TemporaryDirectory(prefix="cmlgrade-sandbox-", dir=base)
            except OSError:
                continue
            testcase.addCleanup(d.cleanup)
            return Path(d.name).resolve()
    testcase.skipTest("no writable folder outside /tmp for the fake kit")


class SandboxTests(unittest.TestCase):
    def test_student_code_sees_only_its_own_tree(self):
        root = outside_tmp(self)
        kit, work, override = root / "kit", root / "work", root / "override.toml"
        (kit / "solutions" / "04_reduction").mkdir(parents=True)
        (kit / "solutions" / "04_reduction" / "reduction.cu").write_text("THE SOLUTION")
        own, bob = work / "students" / "alice", work / "students" / "bob"
        own.mkdir(parents=True)
        bob.mkdir(parents=True)
        (own / "reduction.cu").write_text("ALICE'S CODE")
        (bob / "reduction.cu").write_text("BOB'S CODE")
        (work / "results").mkdir()
        (work / "results" / "alice.json").write_text('{"points": 3}')
        override.write_text("[tests]\nsecret_seed = 42\n")

        sb = detect_sandbox([kit, work, override])
        if not sb.active:
            self.skipTest(f"bubblewrap is not usable here: {sb.note}")
        # a server on the grader's loopback: reachable from any process that
        # shares the grader's network
        server = socket.create_server(("127.0.0.1", 0))
        self.addCleanup(server.close)
        port = server.getsockname()[1]
        # another checkout of the kit the grader was not told about: an allow-list never shows it
        other = root / "elsewhere" / "solutions" / "04_reduction" / "reduction.cu"
        other.parent.mkdir(parents=True)
        other.write_text("ANOTHER CHECKOUT'S SOLUTION")
        # the reference's kept runs in a shared reference build (--reference-build): poisoned, they would set
        # what every later student is compared with
        kept = root / "refbuild" / "reference-runs" / "0123abcd.pickle"
        kept.parent.mkdir(parents=True)
        kept.write_text("THE REFERENCE'S KEPT RUN")
        python = [Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()]  # this test's interpreter
        with mock.patch.dict(os.environ, {"CML_GRADER_SECRET_SEED": "987654321"}):
            res = Executor(sb).run([sys.executable, "-c", PROBE, kit, work, override, own, port, other,
                                    "--secret-seed=918273645", kept], cwd=own, timeout=60, writable=[own],
                                   readable=[own] + python)
        self.assertEqual(res.rc, 0, res.output)
        seen = json.loads(res.stdout.strip().splitlines()[-1])
        self.assertEqual(seen["own"], "ALICE'S CODE", "the student's own tree stays readable")
        self.assertEqual((own / "build.log").read_text(), "built", "and writable")
        for key, secret in (("solution", "THE SOLUTION"), ("other_student", "BOB'S CODE"), ("override", "secret_seed")):
            self.assertNotIn(secret, seen[key], f"{key} is readable from student code")
        self.assertEqual((work / "results" / "alice.json").read_text(), '{"points": 3}',
                         "student code changed the grader's results")
        self.assertTrue(seen["network"].startswith("refused"), seen["network"])
        self.assertEqual(seen["secret_seed_env"], "", "the grader's environment reached student code")
        self.assertNotIn("CHECKOUT", seen["other_checkout"], "a path outside the allow-list is visible")
        self.assertNotIn("KEPT", seen["kept_run"], "the shared reference build is readable from student code")
        self.assertEqual(kept.read_text(), "THE REFERENCE'S KEPT RUN", "student code rewrote a kept reference run")
        self.assertNotIn("grade.py", seen["cmdlines"], "the grader's command line (and its seed) is visible")
        self.assertNotIn("unittest", seen["cmdlines"], "an ancestor's command line is visible")


class LeftoverSweepTests(unittest.TestCase):
    """The grader sweeps up detached leftovers of student processes after
    every run (kill_leftovers), from several threads at once. A process
    another thread has just started, or one re-parented from a run that is
    still going, is not a leftover. (Before the sweep and the start were
    made atomic, 85 of 300 runs below were killed and read as exit 0 with
    no output: a build or a test run that silently did nothing, which made
    a Slurm shard's grades differ from one machine's under load.)"""

    def setUp(self):
        if not become_subreaper():
            self.skipTest("prctl(PR_SET_CHILD_SUBREAPER) is not available: there is no sweep to race with")
        self.stop = threading.Event()
        self.swept = []

        def sweep():
            # a sweep every millisecond or so, between the runs' starts and ends; without the pause it holds the
            # lock the runs start under almost all the time (7 s a run instead of 5 ms: 300 runs took 270 s)
            while not self.stop.wait(0.001):
                self.swept.append(kill_leftovers())
        self.sweeper = threading.Thread(target=sweep, daemon=True)
        self.sweeper.start()
        self.addCleanup(self.sweeper.join)
        self.addCleanup(self.stop.set)

    def test_a_run_started_during_a_sweep_is_not_killed(self):
        wrong = []

        def runs(n):
            for i in range(n):
                r = run_process(["sh", "-c", f"echo run {i}; exit 3"], timeout=30)
                if (r.rc, r.stdout) != (3, f"run {i}\n"):
                    wrong.append((i, r.rc, r.stdout, r.stderr[-200:]))
        workers = [threading.Thread(target=runs, args=(150,)) for _ in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        self.assertEqual(wrong, [], f"{len(wrong)} of 300 runs were cut short by another thread's sweep")
        self.assertEqual(sum(self.swept), 0, "the sweep killed processes that were no leftovers")

    def test_a_process_re_parented_from_a_live_run_finishes(self):
        # the subshell exits at once: its child comes back to the grader (the subreaper) in the run's
        # session, and the run waits (up to 10 s) for what that child writes
        d = Path(tempfile.mkdtemp(prefix="cmlgrade-sweep-"))
        self.addCleanup(shutil.rmtree, d, True)
        script = (f"(bash -c 'sleep 0.3; echo inner > {d}/f.tmp; mv {d}/f.tmp {d}/f' &); "
                  f"for i in $(seq 100); do [ -e {d}/f ] && break; sleep 0.1; done; cat {d}/f; echo outer")
        r = run_process(["bash", "-c", script], timeout=30)
        self.assertEqual((r.rc, r.stdout.split()), (0, ["inner", "outer"]), r.stderr)

    def started_leftover(self, detach: str) -> int:
        """Runs a program that leaves one process behind (`detach` puts it in
        its own process group or session) and ends once that process has
        written its pid: no sleeps, so a loaded or many-core machine cannot
        change the outcome. Returns the leftover's pid. The class's
        background sweeper stops first: a leftover in a session of its own
        is fair game for any sweep, so one running beside the start could
        kill it before it writes its pid (the run then waits out its time
        limit); this checks the sweep at the end of the run."""
        self.stop.set()
        self.sweeper.join()
        d = Path(tempfile.mkdtemp(prefix="cmlgrade-sweep-"))
        self.addCleanup(shutil.rmtree, d, True)
        pid = d / "pid"
        left = f"echo $$ > {d}/pid.tmp && mv {d}/pid.tmp {pid} && exec sleep 600"
        script = f"({detach} bash -c '{left}' &); while [ ! -e {pid} ]; do sleep 0.01; done; exit 0"
        r = run_process(["bash", "-c", script], timeout=120)
        self.assertEqual(r.rc, 0, r.stderr)
        return int(pid.read_text())

    def assertGone(self, pid: int, what: str) -> None:
        # swept before run_process returned: gone, or a zombie not yet reaped
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return
        state = stat[stat.rindex(")") + 2:].split()
        if state[0] not in ("Z", "X"):
            os.kill(pid, 9)
            self.fail(f"{what} outlived its run: pid {pid} state {state[0]}, ppid {state[1]}, session {state[3]}")

    def test_a_leftover_in_the_runs_session_dies_when_the_run_ends(self):
        # spared while its run goes on (its session is live), but it left the run's process group, so the
        # group kill at the end misses it: the sweep after the run must not
        pid = self.started_leftover(f"{sys.executable} -c 'import os, sys; os.setpgid(0, 0); "
                                    f"os.execvp(sys.argv[1], sys.argv[1:])'")
        self.assertGone(pid, "a child in the run's session, own process group,")

    def test_a_detached_leftover_is_still_killed(self):
        pid = self.started_leftover("setsid")
        self.assertGone(pid, "a detached child (own session)")


class NoGpuReasonTests(unittest.TestCase):
    def test_no_driver_is_not_an_old_driver(self):
        from cmlgrade.run import no_gpu_reason
        raw = "no CUDA device: cudaGetDeviceCount failed (CUDA driver version is insufficient for CUDA runtime version)"
        empty = tmpdir(self)
        said = no_gpu_reason(raw, dev=empty, smi=None)
        self.assertNotIn("insufficient", said)
        self.assertIn("no NVIDIA GPU or driver", said)
        (empty / "nvidiactl").write_text("")   # a driver is there: then it may well be too old
        self.assertEqual(no_gpu_reason(raw, dev=empty, smi=None), raw)
        self.assertEqual(no_gpu_reason("no CUDA device: busy", dev=tmpdir(self), smi=None), "no CUDA device: busy")


if __name__ == "__main__":
    unittest.main()


FAKE_CRITERION = r'''#!/usr/bin/env python3
# A stand-in Criterion test program: suites step1..step3, one test each
# (step3's fails); "hang" in its folder names a suite whose test never
# ends; every run appends what it ran ("all" or the suite) to "calls".
import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
report = next(a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--json="))
only = next((a.split("=", 1)[1][:-2] for a in sys.argv[1:] if a.startswith("--filter=")), None)
with open(os.path.join(here, "calls"), "a") as f:
    f.write((only or "all") + "\n")
hang = open(os.path.join(here, "hang")).read().strip() if os.path.exists(os.path.join(here, "hang")) else ""
suites = []
for s in ("step1", "step2", "step3"):
    if only and s != only:
        continue
    while s == hang:
        time.sleep(1)
    suites.append({"name": s, "tests": [{"name": "t", "status": "FAILED" if s == "step3" else "PASSED",
                                         "messages": []}]})
with open(report, "w") as f:
    json.dump({"test_suites": suites}, f)
'''


class TestsByStepTests(unittest.TestCase):
    """run_tests_by_step: every step's tests in one run when that run ends,
    each step on its own (a hang costs that step only) when it does not."""

    def setUp(self):
        from cmlgrade.results import BinaryRun, TestOutcome
        self.dir = tmpdir(self)
        self.fake = self.dir / "bin" / "test_fake"
        self.fake.parent.mkdir()
        self.fake.write_text(FAKE_CRITERION.replace("/usr/bin/env python3", sys.executable, 1))
        self.fake.chmod(0o755)
        self.ref = BinaryRun("test_fake", True, {f"step{n}::t": TestOutcome(f"step{n}", "t", "PASSED")
                                                 for n in (1, 2, 3)})

    def run_steps(self, step_limit: float):
        from cmlgrade.run import Deadline, run_tests_by_step
        from cmlgrade.sandbox import Sandbox
        out = self.dir / "out"
        return run_tests_by_step(Executor(Sandbox(None, "")), self.fake, out, "public", 1, self.ref, step_limit,
                                 Deadline(3600), {}, [self.dir])

    def calls(self) -> list[str]:
        return (self.fake.parent / "calls").read_text().split()

    def statuses(self, br) -> dict[str, str]:
        return {k: o.status for k, o in br.outcomes.items()}

    def test_every_step_in_one_run(self):
        br, late = self.run_steps(600)
        self.assertEqual(self.calls(), ["all"])
        self.assertEqual(self.statuses(br), {"step1::t": "PASSED", "step2::t": "PASSED", "step3::t": "FAILED"})
        self.assertEqual((late, br.problem), ([], ""))

    def test_a_step_that_never_ends_costs_that_step_only(self):
        (self.fake.parent / "hang").write_text("step2")
        br, late = self.run_steps(8)   # the run of all three ends at 3 x 8 s; then each step on its own
        self.assertEqual(self.calls(), ["all", "step1", "step2", "step3"])
        self.assertEqual(self.statuses(br), {"step1::t": "PASSED", "step2::t": "TIMEOUT", "step3::t": "FAILED"})
        self.assertEqual(late, ["step2"])


class SideBySideTests(unittest.TestCase):
    """run.side_by_side: the calls run at once, their results come back in
    the calls' order, and a call's exception reaches the caller."""

    def test_at_once_and_in_order(self):
        from cmlgrade.run import side_by_side
        meet = threading.Barrier(3)   # only three calls running at the same time get past it

        def call(k: int) -> int:
            meet.wait()
            time.sleep(0.05 * (3 - k))   # the first call ends last
            return k
        self.assertEqual(side_by_side([lambda k=k: call(k) for k in range(3)], 3), [0, 1, 2])

    def test_one_at_a_time_and_errors(self):
        from cmlgrade.run import side_by_side
        seen = []
        self.assertEqual(side_by_side([lambda k=k: seen.append(k) or k for k in range(3)], 1), [0, 1, 2])
        self.assertEqual(seen, [0, 1, 2])

        def bad():
            raise ValueError("a grader bug")
        with self.assertRaises(ValueError):
            side_by_side([lambda: 1, bad], 2)


class ProcessLogTests(unittest.TestCase):
    """CMLGRADE_PROCESS_LOG: a line per process, and under a harness's line
    its trace (harness.h hn_trace, asked for with HN_TRACE only then)."""

    def _run(self, log: str | None):
        from cmlgrade.process import ProcResult
        from cmlgrade.sandbox import Sandbox
        seen = {}

        def runner(argv, cwd, env, timeout):
            seen.update(env)
            trace = "harness:    0.412 s  case 0: the CUDA context made\nharness:    1.250 s  case 1: timed\n"
            return ProcResult(argv, 0, "", "a student's own line\n" + trace + "harness: not a trace line\n", False,
                              1.5)
        with mock.patch.dict(os.environ, {"CMLGRADE_PROCESS_LOG": log} if log else {}, clear=False):
            if not log:
                os.environ.pop("CMLGRADE_PROCESS_LOG", None)
            Executor(Sandbox(None, ""), runner).run(["./x_harness", "in.bin", "out.bin"], cwd=Path("/w"),
                                                    timeout=5, writable=[])
        return seen

    def test_a_harness_trace_goes_under_its_process_line(self):
        log = tmpdir(self) / "processes.log"
        env = self._run(str(log))
        self.assertEqual(env.get("HN_TRACE"), "1")
        self.assertEqual(log.read_text().splitlines(), [
            "    1.50 s  rc 0  /w: ./x_harness in.bin out.bin",
            "          harness:    0.412 s  case 0: the CUDA context made",
            "          harness:    1.250 s  case 1: timed"])

    def test_without_the_log_no_trace_is_asked_for(self):
        self.assertNotIn("HN_TRACE", self._run(None))

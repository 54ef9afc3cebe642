"""gpuhold.held_alone: while the grader times a step it holds every slot
lock of that GPU, the same lock files the kit's GPU test binaries take
(common/test/criterion_main.c), so none of them runs there meanwhile; it
waits for a binary that holds a slot to end, and never outwaits the lab's
deadline. Other processes stand in for the test binaries (flock on the
same files); no GPU is needed."""
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest
from pathlib import Path
from unittest import mock

import helpers  # noqa: F401  (import path)
from cmlgrade import gpuhold, gpushare
from cmlgrade.run import Deadline

UUID = "gpu-0a1b2c3d-0000-1111-2222-333344445555"

# a stand-in for a kit test binary (or, with "lockf" / "lockf-shared", an ncu's POSIX locks): locks the file (blocking),
# says "held", keeps it until stdin closes
HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)
how = sys.argv[2] if sys.argv[2:] else "flock"
(fcntl.flock if how == "flock" else fcntl.lockf)(fd, fcntl.LOCK_SH if how == "lockf-shared" else fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


def start_holder(test, path, how="flock"):
    """A HOLDER process on `path`, once it holds the lock; ended with the test."""
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), how], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    test.addCleanup(p.stdout.close)
    test.addCleanup(p.wait)
    test.addCleanup(lambda: p.stdin.closed or p.stdin.close())
    test.assertEqual(p.stdout.readline().strip(), "held")   # ready: it holds the lock now
    return p

# tries every slot without waiting: prints how many it could take
PROBE = """
import fcntl, os, sys
got = 0
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        got += 1
    except OSError:
        pass
print(got)
"""


def waits_for_holder(test, holder, hold, message):
    """hold() (a context manager) entered in a thread waits while `holder`
    (a process holding the lock) runs, and gets in once it ends."""
    entered = threading.Event()

    def take():
        with hold():
            entered.set()
    t = threading.Thread(target=take)
    t.start()
    test.assertFalse(entered.wait(0.5), message)
    holder.stdin.close()   # the holder ends
    test.assertTrue(entered.wait(60), "never got in after the holder ended")
    t.join()


class HeldAlone(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cml-gpuhold-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        env = mock.patch.dict(os.environ, {"TMPDIR": self.dir, "CML_GPU_SLOTS": "3"})
        env.start()
        self.addCleanup(env.stop)

    def slot(self, k):
        return str(Path(self.dir) / f"cml-gpu-{UUID}-slot{k}.lock")

    def free_slots(self):
        r = subprocess.run([sys.executable, "-c", PROBE] + [self.slot(k) for k in range(3)],
                           capture_output=True, text=True, check=True)
        return int(r.stdout)

    def holder(self, k):
        return start_holder(self, self.slot(k))

    def test_every_slot_is_held_while_timing_and_freed_after(self):
        self.assertEqual(self.free_slots(), 3)
        with gpuhold.held_alone(UUID) as why:
            self.assertEqual(why, "")
            self.assertEqual(self.free_slots(), 0)   # no test binary can start on this GPU
        self.assertEqual(self.free_slots(), 3)

    def test_timing_waits_for_a_running_test_binary_to_end(self):
        waits_for_holder(self, self.holder(1), lambda: gpuhold.held_alone(UUID, Deadline(600)),
                         "timed while a test binary still held a slot of the GPU")

    def test_a_deadline_that_runs_out_while_waiting_holds_nothing(self):
        p = self.holder(2)
        with gpuhold.held_alone(UUID, Deadline(1.5)) as why:
            self.assertIn("time limit ran out", why)
            p.stdin.close()
            p.wait()
            self.assertEqual(self.free_slots(), 3)   # the slots it had taken were let go

    def test_the_lock_files_are_the_kit_test_binaries_own(self):
        """The slot count and the lock file's name are criterion_main.c's
        (C there, Python here): a change on one side fails here."""
        import re
        c = (helpers.KIT / "common" / "test" / "criterion_main.c").read_text()
        self.assertEqual(int(re.search(r"#define DEFAULT_SLOTS (\d+)", c).group(1)), gpuhold.DEFAULT_SLOTS)
        self.assertIn('"%s/cml-gpu-%s-slot%d.lock"', c)
        self.assertIn('getenv("CML_GPU_SLOTS")', c)
        self.assertEqual(gpuhold.lock_path(UUID, 1), Path(self.slot(1)))   # the path the C side's format gives
        with mock.patch.dict(os.environ, {"CML_GPU_SLOTS": "x"}):
            self.assertEqual(gpuhold.slots(), gpuhold.DEFAULT_SLOTS)

    def test_a_gpu_without_a_known_uuid_is_timed_unheld_and_says_so(self):
        with mock.patch("shutil.which", return_value=None):
            gpuhold._UUIDS.pop("7", None)
            uuid = gpuhold.gpu_uuid("7")
        self.assertIsNone(uuid)
        with gpuhold.held_alone(uuid) as why:
            self.assertIn("UUID is not known", why)
        self.assertEqual(gpuhold.gpu_uuid("GPU-0A1B2C3D-0000-1111-2222-333344445555"), UUID)


class Sharing(unittest.TestCase):
    """GpuShare: the grader's workers on one GPU (--per-gpu) share it for
    tests, checks and sanitizers; Nsight Compute and the timing have it
    alone. Threads signal each other with events: no timing margins."""

    def run_in(self, fn):
        t = threading.Thread(target=fn, daemon=True)
        t.start()
        self.addCleanup(t.join, 60)
        return t

    def hold_a_share(self, share, held, leave):
        """A thread holding a share of `share` from `held` until `leave`."""
        def first():
            with share.shared():
                held.set()
                leave.wait(60)
        return self.run_in(first)

    def test_shares_run_together_and_alone_waits_for_them(self):
        share = gpushare.GpuShare()
        in_a, in_b, leave, alone = threading.Event(), threading.Event(), threading.Event(), threading.Event()

        def sharer(mark):
            with share.shared():
                mark.set()
                leave.wait(60)

        self.run_in(lambda: sharer(in_a))
        self.run_in(lambda: sharer(in_b))
        self.assertTrue(in_a.wait(60) and in_b.wait(60), "two shares were not held at once")

        def timer():
            with share.alone():
                alone.set()
        self.run_in(timer)
        self.assertFalse(alone.wait(0.3), "alone while others shared the GPU")
        leave.set()
        self.assertTrue(alone.wait(60))

    def test_a_waiting_alone_goes_before_new_shares(self):
        share = gpushare.GpuShare()
        held, leave, waiting_alone, late_in, alone_done = (threading.Event() for _ in range(5))
        order = []

        def timer():
            waiting_alone.set()
            with share.alone():
                order.append("alone")
            alone_done.set()

        def late():
            with share.shared():
                order.append("late share")
                late_in.set()

        self.hold_a_share(share, held, leave)
        self.assertTrue(held.wait(60))
        self.run_in(timer)
        self.assertTrue(waiting_alone.wait(60))
        while not share._waiting:   # the timer is queued (it waits on the condition, not on a clock)
            threading.Event().wait(0.01)
        self.run_in(late)
        self.assertFalse(late_in.wait(0.3), "a new share started while the timing waited")
        leave.set()
        self.assertTrue(alone_done.wait(60) and late_in.wait(60))
        self.assertEqual(order, ["alone", "late share"])

    def test_the_wait_for_alone_is_counted_for_the_thread_that_waited(self):
        """take_waited(): the seconds a thread's alone() waited for the
        shares to end (the bench's 'waited for the GPU alone'), once; a
        lower bound only, from the time the share was still held after the
        alone() queued: no upper margin to miss on a loaded machine."""
        share = gpushare.GpuShare()
        held, leave = threading.Event(), threading.Event()
        got = []

        def timer():
            gpushare.take_waited()
            with share.alone():
                pass
            got.append(gpushare.take_waited())
            got.append(gpushare.take_waited())   # taken: nothing left

        self.hold_a_share(share, held, leave)
        self.assertTrue(held.wait(60))
        t = self.run_in(timer)
        while not share._waiting:
            threading.Event().wait(0.01)
        threading.Event().wait(0.25)   # the share held 0.25 s more while the timer waited
        leave.set()
        t.join(60)
        self.assertGreaterEqual(got[0], 0.25)
        self.assertEqual(got[1], 0.0)

    def test_alone_inside_a_share_lets_it_go_and_takes_it_back(self):
        share = gpushare.GpuShare()
        with share.shared():
            with share.alone():   # no deadlock with itself
                self.assertEqual(share._sharing, 0)
                with share.shared():   # a process the timing starts: inside alone, nothing more
                    self.assertEqual(share._sharing, 0)
            self.assertEqual(share._sharing, 1)
        self.assertEqual(share._sharing, 0)

    def test_each_process_on_a_gpu_holds_a_share_while_it_runs(self):
        from cmlgrade.sandbox import Executor, ProcResult, Sandbox
        seen = []

        def runner(argv, cwd, env, timeout):
            seen.append(gpushare.share_of("7")._sharing)
            return ProcResult(argv, 0, "", "", False, 0.0)
        exe = Executor(Sandbox(None, ""), runner)
        exe.run(["x"], cwd=Path("."), timeout=1, writable=[], env={"CUDA_VISIBLE_DEVICES": "7"})
        exe.run(["x"], cwd=Path("."), timeout=1, writable=[], env={})   # no GPU named: no share
        with gpushare.share_of("7").alone():
            exe.run(["x"], cwd=Path("."), timeout=1, writable=[], env={"CUDA_VISIBLE_DEVICES": "7"})
        self.assertEqual(seen, [1, 0, 0])
        self.assertEqual(gpushare.share_of("7")._sharing, 0)

    def test_the_reference_runs_once_per_gpu_model_however_many_workers(self):
        """GPUs of one model share the reference's run (its lists, traces
        and counters are the model's); another model, or a GPU whose model
        cannot be told, has its own."""
        from helpers import labs
        from cmlgrade.pipeline import Options, Pipeline
        from cmlgrade.results import LabRun
        lab = labs()["04_reduction"]
        listed = [("0", "GPU-a", "NVIDIA H200"), ("1", "GPU-b", "NVIDIA H200"), ("2", "GPU-c", "NVIDIA H100 80GB HBM3")]
        for gpus, runs in ((("0", "0", "1", "0", "1", "2"), [{"0", "1"}, {"2"}]),
                           (("0", "0", "3"), [{"0"}, {"3"}])):   # "3": not listed, its model unknown
            pipe = Pipeline(Options(kit=helpers.KIT), [lab])
            started, release, calls = threading.Event(), threading.Event(), []

            def run_reference(lab_, gpu, key):
                calls.append(gpu)
                started.set()
                release.wait(60)
                ref = LabRun(lab_.name, gpu=gpu)
                with pipe.ref_lock:
                    pipe.refs[key] = ref
                return ref
            got = []
            with mock.patch.object(pipe, "_run_reference", run_reference), \
                    mock.patch.object(gpuhold, "_smi_gpus", return_value=listed):
                threads = [self.run_in(lambda g=g: got.append((g, pipe.reference(lab, g)))) for g in gpus]
                self.assertTrue(started.wait(60))
                release.set()
                for t in threads:
                    t.join(60)
            self.assertEqual(len(calls), len(runs), calls)
            for group in runs:   # one run for the group, on one of its GPUs, and every worker of it gets that run
                self.assertEqual(len([c for c in calls if c in group]), 1, calls)
                self.assertEqual(len({id(r) for g, r in got if g in group}), 1)

    def test_a_gpus_model_is_nvidia_smis_name_for_it(self):
        from cmlgrade.sandbox import ProcResult
        out = ("0, GPU-0a1b-11, NVIDIA H200\n1, GPU-0a1b-22, NVIDIA H100 80GB HBM3\n")
        with mock.patch("shutil.which", return_value="/usr/bin/nvidia-smi"), \
                mock.patch.object(gpuhold, "run_process", return_value=ProcResult([], 0, out, "", False, 0.0)), \
                mock.patch.object(gpuhold, "_LISTED", None):
            self.assertEqual(gpuhold.gpu_model("0"), "NVIDIA H200")
            self.assertEqual(gpuhold.gpu_model("GPU-0A1B-22"), "NVIDIA H100 80GB HBM3")
            self.assertIsNone(gpuhold.gpu_model("5"))
            self.assertIsNone(gpuhold.gpu_model("MIG-0a1b"))
        with mock.patch("shutil.which", return_value=None), mock.patch.object(gpuhold, "_LISTED", None):
            self.assertIsNone(gpuhold.gpu_model("0"))


# an ncu outside that would start now: for each file, "ex" or "sh" where it got that POSIX lock without waiting
# (exclusive tried first), else "-"
NCU_PROBE = """
import fcntl, os, sys
got = []
for path in sys.argv[1:]:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    for name, how in (("ex", fcntl.LOCK_EX), ("sh", fcntl.LOCK_SH)):
        try:
            fcntl.lockf(fd, how | fcntl.LOCK_NB)
            got.append(name)
            break
        except OSError:
            pass
    else:
        got.append("-")
    os.close(fd)
print(" ".join(got))
"""
GPU_ID = UUID[4:]                               # as Nsight Compute names its file: no "gpu-"
OTHER = "gpu-99999999-8888-7777-6666-555544443333"


class _Exe:
    """An executor as far as profiling_on looks: its sandbox, and a run that
    reports what an ncu outside could lock while the 'ncu' runs."""

    def __init__(self, sandboxed: bool, files: list[Path]):
        self.sandbox = mock.Mock(active=sandboxed)
        self.files, self.seen = files, []

    def run(self, argv, **_kw):
        from cmlgrade.sandbox import ProcResult
        r = subprocess.run([sys.executable, "-c", NCU_PROBE, *map(str, self.files)], capture_output=True, text=True,
                           check=True)
        self.seen.append(r.stdout.strip())
        return ProcResult(list(argv), 0, "", "", False, 0.0)


REAL_LOCK_DIRS = gpuhold.nsight_lock_dirs   # NsightLock's tests patch it to a folder of their own


class NsightLock(unittest.TestCase):
    """gpuhold.nsight_held / profiling_on: Nsight Compute lets one profiling
    session at a time use a GPU: the profiled process holds a POSIX lock on
    $TMPDIR/nvidia/nsight_compute/lock.<UUID>, and a shared one on `lock`
    there, which a sandboxed ncu cannot see (its /tmp is its own). The
    grader holds the host's files the same way around each sandboxed ncu
    run, and never around an unsandboxed one (that ncu takes them itself).
    Other processes stand in for ncu; no GPU is needed."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cml-nsight-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.folder = Path(self.dir) / "nvidia" / "nsight_compute"
        self.host, self.gpu = self.folder / "lock", self.folder / f"lock.{GPU_ID}"
        self.other = self.folder / f"lock.{OTHER[4:]}"
        dirs = mock.patch.object(gpuhold, "nsight_lock_dirs", return_value=[self.folder])
        dirs.start()
        self.addCleanup(dirs.stop)

    def probe(self, *files):
        return subprocess.run([sys.executable, "-c", NCU_PROBE, *map(str, files or (self.host, self.gpu))],
                              capture_output=True, text=True, check=True).stdout.strip()

    def ncu_elsewhere(self, path, how="lockf"):
        """An ncu outside the sandbox holding a file, exclusively or shared."""
        self.folder.mkdir(parents=True, exist_ok=True)
        return start_holder(self, path, how)

    def test_a_sandboxed_run_holds_its_gpus_file_and_shares_the_hosts(self):
        with gpuhold.nsight_held(True, UUID) as why:
            self.assertEqual(why, "")
            # no ncu outside may profile this GPU; one on another GPU may (it shares `lock`)
            self.assertEqual(self.probe(self.host, self.gpu, self.other), "sh - ex")
        self.assertEqual(self.probe(), "ex ex")

    def test_an_unsandboxed_run_holds_nothing(self):
        """Its ncu locks the host's files itself: held by the grader, it would wait forever."""
        with gpuhold.nsight_held(False, UUID) as why:
            self.assertEqual(why, "")
            self.assertEqual(self.probe(), "ex ex")

    def test_it_waits_for_an_ncu_outside_on_the_same_gpu(self):
        waits_for_holder(self, self.ncu_elsewhere(self.gpu), lambda: gpuhold.nsight_held(True, UUID, Deadline(600)),
                         "profiled while another ncu profiled the same GPU")

    def test_it_does_not_wait_for_an_ncu_on_another_gpu(self):
        self.ncu_elsewhere(self.other)
        self.ncu_elsewhere(self.host, "lockf-shared")   # that ncu's share of `lock`
        with gpuhold.nsight_held(True, UUID, Deadline(600)) as why:
            self.assertEqual(why, "")

    def test_without_the_gpus_uuid_it_holds_the_host_alone(self):
        """No UUID (no nvidia-smi, a MIG instance): `lock` exclusively, so no
        ncu outside profiles anything meanwhile, and it waits for one that does."""
        with gpuhold.nsight_held(True, None) as why:
            self.assertEqual(why, "")
            self.assertEqual(self.probe(self.host), "-")
        waits_for_holder(self, self.ncu_elsewhere(self.host, "lockf-shared"),
                         lambda: gpuhold.nsight_held(True, "MIG-1234", Deadline(600)),
                         "profiled while another ncu profiled, the GPU unknown")

    def test_the_wait_is_counted_as_waiting_for_the_bench(self):
        """The seconds a thread waited for another profiler are the bench's
        'waiting', not work (gpushare.take_waited), as alone()'s are."""
        p = self.ncu_elsewhere(self.gpu)
        polling = threading.Event()
        real_sleep = gpuhold.time.sleep

        def sleep(s):
            polling.set()   # it found the lock taken and waits
            real_sleep(s)
        got = []

        def profile():
            gpushare.take_waited()
            with mock.patch.object(gpuhold.time, "sleep", sleep):
                with gpuhold.nsight_held(True, UUID, Deadline(600)):
                    pass
            got.append(gpushare.take_waited())
        t = threading.Thread(target=profile)
        t.start()
        self.assertTrue(polling.wait(60))
        real_sleep(0.2)   # it has waited at least this long when the other ends
        p.stdin.close()
        t.join(60)
        self.assertGreaterEqual(got[0], 0.2)

    def _two_threads(self, first_uuid, second_uuid):
        """Whether a second thread got in while a first one held its GPU's files."""
        inside, go, second = threading.Event(), threading.Event(), threading.Event()

        def first():
            with gpuhold.nsight_held(True, first_uuid):
                inside.set()
                go.wait(60)

        def other():
            with gpuhold.nsight_held(True, second_uuid):
                second.set()
        a = threading.Thread(target=first)
        a.start()
        self.assertTrue(inside.wait(60))
        b = threading.Thread(target=other)
        b.start()
        together = second.wait(0.5)
        if together:   # the first still holds its GPU and the host's share though the second let go
            self.assertEqual(self.probe(self.host, self.gpu), "sh -")
        go.set()
        self.assertTrue(second.wait(60))
        a.join()
        b.join()
        self.assertEqual(self.probe(self.host, self.gpu, self.other), "ex ex ex")
        return together

    def test_the_graders_threads_take_turns_on_a_gpu(self):
        """POSIX locks are the process's: two threads must not both think they hold a GPU."""
        self.assertFalse(self._two_threads(UUID, UUID), "two of the grader's threads profiled one GPU at once")

    def test_the_graders_threads_profile_two_gpus_at_once(self):
        self.assertTrue(self._two_threads(UUID, OTHER), "profiling one GPU kept the grader off another")

    def test_a_deadline_that_runs_out_holds_nothing_and_says_why(self):
        p = self.ncu_elsewhere(self.gpu)
        with gpuhold.nsight_held(True, UUID, Deadline(1.5)) as why:
            self.assertIn("another Nsight Compute run", why)
            self.assertEqual(self.probe(self.host), "ex")   # not even the host's share
        p.stdin.close()
        p.wait()
        self.assertEqual(self.probe(), "ex ex")

    def test_the_files_it_makes_are_open_to_every_user(self):
        """Made under a umask of 022 they would be 0o644 (the folders 0o755),
        and another user's ncu (or kit test binary, for the slots) could not
        lock them or make its own."""
        old = os.umask(0o022)
        try:
            with gpuhold.nsight_held(True, UUID) as why, mock.patch.dict(os.environ, {"TMPDIR": self.dir}):
                self.assertEqual(why, "")
                with gpuhold.held_alone(UUID) as held:
                    self.assertEqual(held, "")
                slot = gpuhold.lock_path(UUID, 0)
        finally:
            os.umask(old)
        for f in (self.host, self.gpu):
            self.assertEqual(f.stat().st_mode & 0o777, 0o666, f)
        for d in (self.folder, self.folder.parent):
            self.assertEqual(d.stat().st_mode & 0o7777, 0o1777, d)
        self.assertTrue(slot.is_relative_to(self.dir))
        self.assertEqual(slot.stat().st_mode & 0o777, 0o666)

    def test_a_lock_file_that_cannot_be_opened_is_said(self):
        Path(self.dir, "nvidia").write_text("a file where the folder would be")
        with gpuhold.nsight_held(True, UUID) as why:
            self.assertIn("cannot open", why)

    def test_the_folders_are_tmps_and_tmpdirs(self):
        """Where an ncu outside the sandbox locks: /tmp's folder, and $TMPDIR's where that is set elsewhere."""
        tmp = Path("/tmp/nvidia/nsight_compute")
        with mock.patch.dict(os.environ, {"TMPDIR": self.dir}):
            self.assertEqual(REAL_LOCK_DIRS(), [tmp, self.folder])
        with mock.patch.dict(os.environ, {"TMPDIR": "/tmp"}):
            self.assertEqual(REAL_LOCK_DIRS(), [tmp])
        link = Path(self.dir) / "tmp-link"
        link.symlink_to("/tmp")
        with mock.patch.dict(os.environ, {"TMPDIR": str(link)}):   # /tmp by another name: held once, not twice
            self.assertEqual(REAL_LOCK_DIRS(), [tmp])
        self.assertEqual(gpuhold.nsight_lock_files(UUID), [(self.host, False), (self.gpu, True)])
        self.assertEqual(gpuhold.nsight_lock_files(None), [(self.host, True)])

    def test_the_graders_ncu_runs_hold_it_when_sandboxed(self):
        """Every place the grader starts Nsight Compute (the runner's
        --counters, the harness's counters, the marked runs, the shared-memory
        trace) runs inside profiling_on: the 'ncu' of a sandboxed executor
        runs while no ncu outside can profile its GPU; an unsandboxed one
        while the files are free. The GPU is the one CUDA_VISIBLE_DEVICES names."""
        from cmlgrade import runmeasure
        for sandboxed, want in ((True, "sh -"), (False, "ex ex")):
            exe = _Exe(sandboxed, [self.host, self.gpu])
            with mock.patch.object(gpuhold, "_UUIDS", {"3": UUID}):
                runmeasure.run_counters(exe, Path("/x/runner"), [1], 60, Path(self.dir), {"CUDA_VISIBLE_DEVICES": "3"},
                                        [])
            self.assertEqual(exe.seen, [want])
        src = {f: (helpers.KIT / "grader" / "cmlgrade" / f).read_text() for f in
               ("checkcount.py", "checkmarks.py", "checktrace.py", "runmeasure.py")}
        for f, text in src.items():
            self.assertIn("profiling_on(exe", text, f)
            self.assertNotIn("alone_on(", text, f"{f} starts ncu with the GPU alone but not the host's lock")


if __name__ == "__main__":
    unittest.main()

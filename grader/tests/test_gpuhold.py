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
import time
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
(fcntl.flock if how.startswith("flock") else fcntl.lockf)(fd, fcntl.LOCK_SH if how.endswith("-shared") else fcntl.LOCK_EX)
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


def kit_lock_folder(test) -> None:
    """The C side's lock files are `<$TMPDIR, else /tmp>/<name>`
    (common/include/cml/cml_lock_file.h), as gpuhold.lock_dir() has them."""
    h = (helpers.KIT / "common" / "include" / "cml" / "cml_lock_file.h").read_text()
    test.assertIn('getenv("TMPDIR")', h)
    test.assertIn('"/tmp"', h)
    test.assertIn('"%s/%s", cml_lock_dir(), name', h)


class HeldAlone(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cml-gpuhold-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        env = mock.patch.dict(os.environ, {"TMPDIR": self.dir, "CML_GPU_SLOTS": "3"})
        env.start()
        self.addCleanup(env.stop)

    def slot(self, k):
        """The file a kit test binary locks: the UUID as gpu_lease.c writes it."""
        return str(Path(self.dir) / f"cml-gpu-GPU-{UUID[4:]}-slot{k}.lock")

    def free_slots(self):
        r = subprocess.run([sys.executable, "-c", PROBE] + [self.slot(k) for k in range(3)],
                           capture_output=True, text=True, check=True)
        return int(r.stdout)

    def holder(self, k):
        return start_holder(self, self.slot(k))

    def kit_files_free(self):
        """How many of the kit's gate and use files another process could take."""
        r = subprocess.run([sys.executable, "-c", PROBE] + [str(f) for f in gpuhold.kit_gpu_files(UUID)],
                           capture_output=True, text=True, check=True)
        return int(r.stdout)

    def test_every_slot_is_held_while_timing_and_freed_after(self):
        self.assertEqual(self.free_slots(), 3)
        with gpuhold.held_alone(UUID) as why:
            self.assertEqual(why, "")
            self.assertEqual(self.free_slots(), 0)   # no test binary can start on this GPU
            self.assertEqual(self.kit_files_free(), 0)   # nor any runner (cml_gpu_turn.h)
        self.assertEqual(self.free_slots(), 3)
        self.assertEqual(self.kit_files_free(), 2)

    def test_timing_waits_for_a_runner_sharing_the_gpu(self):
        """A runner (a ctest sanitizer test's, say) shares the GPU through
        its `.use` file: timing waits for it to end."""
        use = gpuhold.kit_gpu_files(UUID)[1]
        waits_for_holder(self, start_holder(self, use, "flock-shared"), lambda: gpuhold.held_alone(UUID, Deadline(600)),
                         "timed while a runner still shared the GPU")

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
        self.assertIn('"cml-gpu-%.47s-slot%d.lock"', c)
        kit_lock_folder(self)
        lease = (helpers.KIT / "common" / "test" / "gpu_lease.c").read_text()   # its UUIDs: cml_gpu_uuid_text's
        self.assertIn("cml_gpu_uuid_text(", lease)
        turn = (helpers.KIT / "common" / "src" / "gpu_turn.c").read_text()
        self.assertIn('"GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x"', turn)
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

    def test_an_alone_that_times_out_lets_the_shares_behind_it_go_and_runs_nothing(self):
        """alone(timeout): TimeoutError where the shares outlast it; a
        share that queued behind it goes on, and the thread's own share is
        its again. The timeout is short and the share outlasts it by an
        event, not by a clock: no margin to miss on a loaded machine."""
        share = gpushare.GpuShare()
        held, leave, late_in = threading.Event(), threading.Event(), threading.Event()
        self.hold_a_share(share, held, leave)
        self.assertTrue(held.wait(60))
        ran = []
        with share.shared():   # this thread's own share, given back after
            with self.assertRaises(TimeoutError):
                with share.alone(timeout=0.05):
                    ran.append("alone")
            self.assertEqual(share._sharing, 2)   # the other thread's and this one's again
        self.assertEqual(ran, [])
        self.assertEqual(share._waiting, 0)

        def late():
            with share.shared():
                late_in.set()
        self.run_in(late)
        self.assertTrue(late_in.wait(60), "a share waited behind an alone() that had given up")
        leave.set()

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

    def test_per_gpu_auto_counts_the_fullest_gpus_free_memory(self):
        """--per-gpu auto: one submission for every AUTO_GIB_EACH GiB free,
        at most AUTO_MOST, by the GPU with the least free; 1 where a GPU's
        free memory cannot be told (a MIG instance, nvidia-smi failing or
        missing), and never 0 on a nearly full GPU."""
        from cmlgrade.sandbox import ProcResult
        listed = "0, GPU-0a1b-11, NVIDIA H200\n1, GPU-0a1b-22, NVIDIA H100 80GB HBM3\n2, GPU-0a1b-33, NVIDIA A10\n"
        free = {"0": "143171", "1": "81008", "2": "40000"}

        def smi(argv, **kw):
            if "--query-gpu=index,uuid,name" in argv:
                return ProcResult(argv, 0, listed, "", False, 0.0)
            i = argv[argv.index("-i") + 1]
            if i not in free or free[i] == "fail":
                return ProcResult(argv, 9, "", "No devices were found", False, 0.0)
            return ProcResult(argv, 0, free[i] + "\n", "", False, 0.0)

        def auto(gpus, **frees):
            free.update(frees)
            return gpuhold.auto_per_gpu(gpus)

        with mock.patch("shutil.which", return_value="/usr/bin/nvidia-smi"), \
                mock.patch.object(gpuhold, "run_process", side_effect=smi), \
                mock.patch.object(gpuhold, "_LISTED", None):
            self.assertEqual(auto(["0"])[0], 4)                      # 139.8 GiB: capped at 4
            self.assertEqual(auto(["1"])[0], 4)                      # an idle 80 GB card: 79.1 GiB
            self.assertEqual(auto(["2"])[0], 2)                      # 39 GiB
            self.assertEqual(auto(["0", "2"])[0], 2)                 # the fullest GPU decides
            self.assertEqual(auto(["GPU-0A1B-22"])[0], 4)           # named by UUID (CUDA_VISIBLE_DEVICES)
            self.assertEqual(auto(["1"], **{"1": "30000"})[0], 1)    # 29 GiB free: another user's work on it
            self.assertEqual(auto(["1"], **{"1": "900"})[0], 1)      # nearly full: still 1, never 0
            n, why = auto(["0", "1"], **{"1": "81008"})
            self.assertEqual(n, 4)
            self.assertIn("79 GiB free on the fullest", why)
            self.assertIn("4 at once on each GPU", why)
            for gpus in (["1", "MIG-0a1b"], ["7"], [], ["1", "2"]):
                if gpus == ["1", "2"]:
                    free["2"] = "fail"
                with self.subTest(gpus=gpus):
                    n, why = gpuhold.auto_per_gpu(gpus)
                    self.assertEqual(n, 1)
                    self.assertIn("cannot be told", why)
            free["2"] = "not a number"
            self.assertEqual(gpuhold.auto_per_gpu(["2"])[0], 1)
        with mock.patch("shutil.which", return_value=None), mock.patch.object(gpuhold, "_LISTED", None):
            self.assertEqual(gpuhold.auto_per_gpu(["0"])[0], 1)

    def test_per_gpu_is_1_to_16_or_auto(self):
        import argparse
        from cmlgrade.stagebase import per_gpu_arg
        self.assertEqual([per_gpu_arg(t) for t in ("1", "4", "16", "auto", "AUTO")], [1, 4, 16, 0, 0])
        for bad in ("0", "17", "-1", "lots", ""):
            with self.subTest(bad=bad), self.assertRaises(argparse.ArgumentTypeError):
                per_gpu_arg(bad)


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
# an ncu outside that profiles in turns: waits for the GPU's file (POSIX, blocking), holds it 0.2 s, lets go
# and queues again 20 ms later (as ncu does between two kernels' profiles). Linux hands a released lock to no
# one: every waiter is woken and races for it. A process that queued again at once would win nearly every
# race (it is running; they are waking), and who got in was a matter of luck: this test took 1 to 83 s.
TURNS = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)
print("queued", flush=True)
while True:
    fcntl.lockf(fd, fcntl.LOCK_EX)
    time.sleep(0.2)
    fcntl.lockf(fd, fcntl.LOCK_UN)
    time.sleep(0.02)
"""
# the same with flock(2): the kit's own files (kit_gpu_files)
FLOCK_PROBE = NCU_PROBE.replace("fcntl.lockf", "fcntl.flock")
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
        env = mock.patch.dict(os.environ, {"TMPDIR": self.dir})   # the kit's own files (kit_gpu_files)
        env.start()
        self.addCleanup(env.stop)
        self.kit_gate, self.kit_use = (Path(self.dir) / f"cml-gpu-GPU-{GPU_ID}.{k}" for k in ("gate", "use"))
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

    def kit_probe(self, *files):
        return subprocess.run([sys.executable, "-c", FLOCK_PROBE, *map(str, files or (self.kit_gate, self.kit_use))],
                              capture_output=True, text=True, check=True).stdout.strip()

    def test_every_run_has_the_gpu_alone_among_the_kits_processes(self):
        """The kit's runners and GPU tests share a GPU through flock files
        (cml_gpu_turn.h: `.use` shared while they run, after a moment's
        share of `.gate`); two ncu on one GPU at once, or one beside the
        kit's other GPU work, failed ("LaunchFailed", an H200, ctest -j 8).
        Every ncu run of the grader, sandboxed or not, holds both exclusive:
        none of them runs there meanwhile, and none starts. Where the GPU is
        not known, nothing (as held_alone)."""
        for sandboxed in (True, False):
            with self.subTest(sandboxed=sandboxed), gpuhold.nsight_held(sandboxed, UUID) as why:
                self.assertEqual(why, "")
                self.assertEqual(self.kit_probe(), "- -")
            self.assertEqual(self.kit_probe(), "ex ex")
        with gpuhold.nsight_held(False, None) as why:
            self.assertEqual(why, "")

    def test_it_waits_for_a_kit_process_sharing_the_gpu(self):
        waits_for_holder(self, start_holder(self, self.kit_use, "flock-shared"),
                         lambda: gpuhold.nsight_held(False, UUID, Deadline(600)),
                         "profiled while one of the kit's processes ran on the same GPU")

    def test_the_kits_gpu_files_are_gpu_turn_cs_own(self):
        """The names are common/src/gpu_turn.c's (C there, Python here): a change on one side fails here."""
        c = (helpers.KIT / "common" / "src" / "gpu_turn.c").read_text()
        self.assertIn('"cml-gpu-%s.%s"', c)
        kit_lock_folder(self)
        self.assertIn('"gate"', c)
        self.assertIn('"use"', c)
        self.assertEqual(gpuhold.kit_gpu_files(UUID), [self.kit_gate, self.kit_use])
        self.assertEqual(gpuhold.kit_gpu_files(None), [])
        self.assertEqual(gpuhold.kit_gpu_files("MIG-1234"), [])

    def test_the_graders_processes_take_no_share(self):
        """Every process the grader starts has CML_GPU_HELD=1 (the grader
        shares the GPU for them): one that took a share while the grader
        held the GPU alone, unsandboxed, would wait for it for ever."""
        from cmlgrade.sandbox import scrubbed_env
        self.assertEqual(scrubbed_env()["CML_GPU_HELD"], "1")
        self.assertEqual(scrubbed_env({"CUDA_VISIBLE_DEVICES": "0"})["CML_GPU_HELD"], "1")

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
        got = []

        def profile():
            gpushare.take_waited()
            with gpuhold.nsight_held(True, UUID, Deadline(600)):
                pass
            got.append(gpushare.take_waited())
        t = threading.Thread(target=profile)
        t.start()
        deadline = time.monotonic() + 60
        while not any(x.name == f"lock lock.{GPU_ID}" for x in threading.enumerate()):   # it waits in the queue
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        time.sleep(0.2)   # it has waited at least this long when the other ends
        p.stdin.close()
        t.join(60)
        self.assertGreaterEqual(got[0], 0.2)

    def kernel_waiters(self, path):
        """How many open-file-description locks wait in the kernel's queue
        for `path` (/proc/locks: a "->" line of type OFDLCK on its inode)."""
        st = os.stat(path)
        where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        lines = Path("/proc/locks").read_text().splitlines()
        return sum(1 for x in lines if "-> OFDLCK" in x and where in x.split())

    def test_it_waits_in_the_kernels_queue_not_by_polling(self):
        """While an ncu outside holds the GPU's file, the grader's request is
        queued in the kernel (F_OFD_SETLKW: /proc/locks lists it as blocked),
        so the release wakes it at once; a poll every 50 ms, as before, found
        the file free only by chance where ncu processes queue for it (seen as
        minutes of waiting on an H200). No clock is read: it waits until the
        kernel lists the request, then until it gets in, each with a hang
        guard only."""
        p = self.ncu_elsewhere(self.gpu)
        entered = threading.Event()

        def profile():
            with gpuhold.nsight_held(True, UUID, Deadline(600)) as why:
                self.assertEqual(why, "")
                entered.set()
        t = threading.Thread(target=profile)
        t.start()
        guard = time.monotonic() + 120
        while self.kernel_waiters(self.gpu) != 1:
            self.assertLess(time.monotonic(), guard, "the grader's request never showed in /proc/locks as queued")
            time.sleep(0.01)
        self.assertFalse(entered.is_set(), "profiled while another ncu held the GPU's file")
        p.stdin.close()
        self.assertTrue(entered.wait(120), "never got in after the other ncu let the file go")
        t.join(120)
        self.assertEqual(self.kernel_waiters(self.gpu), 0)

    def test_it_gets_its_turn_among_ncu_processes_queued_for_the_gpu(self):
        """Two ncu outside take the GPU's file in turns, each waiting in the
        kernel's queue for it (POSIX F_SETLKW) while the other profiles, so
        the file is never free for longer than a hand-over: the grader's
        request, in the same queue, gets in and no ncu profiles meanwhile.
        How soon depends on the scheduler (under 1 s on 2 idle cores, in
        five runs), so the deadline is a hang guard, not a margin."""
        self.folder.mkdir(parents=True, exist_ok=True)
        turns = [subprocess.Popen([sys.executable, "-c", TURNS, str(self.gpu)], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, text=True) for _ in range(2)]
        for q in turns:
            self.addCleanup(q.wait)
            self.addCleanup(q.kill)
            self.addCleanup(q.stdout.close)
            self.assertEqual(q.stdout.readline().strip(), "queued")
        with gpuhold.nsight_held(True, UUID, Deadline(600)) as why:
            self.assertEqual(why, "")
            self.assertEqual(self.probe(self.gpu), "-")   # neither of them profiles meanwhile

    def test_past_the_deadline_it_lets_the_file_go_when_its_turn_comes(self):
        p = self.ncu_elsewhere(self.gpu)
        with gpuhold.nsight_held(True, UUID, Deadline(0.3)) as why:
            self.assertEqual(why, gpuhold.NSIGHT_BUSY)
        p.stdin.close()
        p.wait(60)
        deadline = time.monotonic() + 60
        while self.probe(self.gpu) != "ex":   # the thread that still waited took the file and let it go
            self.assertLess(time.monotonic(), deadline, "the file stayed held after the grader gave up on it")
            time.sleep(0.05)
        self.assertFalse(any(x.name == f"lock lock.{GPU_ID}" for x in threading.enumerate()))

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
            with gpuhold.held_alone(UUID) as held:   # after: both have the GPU alone (one thread never nests them)
                self.assertEqual(held, "")
            slot = gpuhold.lock_path(UUID, 0)
        finally:
            os.umask(old)
        for f in (self.host, self.gpu, self.kit_gate, self.kit_use):
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
        from cmlgrade import profrun, runmeasure
        for sandboxed, want in ((True, "sh -"), (False, "ex ex")):
            exe = _Exe(sandboxed, [self.host, self.gpu])
            with mock.patch.object(gpuhold, "_UUIDS", {"3": UUID}):
                runmeasure.run_counters(exe, Path("/x/runner"), [1], 60, Path(self.dir), {"CUDA_VISIBLE_DEVICES": "3"},
                                        [])
                # a harness run under ncu (that one never opens its gate: its result stands)
                profrun.profiled_run(exe, ["ncu", "/x/harness", "in", "out"], Path(self.dir), 60,
                                     {"CUDA_VISIBLE_DEVICES": "3"}, [])
            self.assertEqual(exe.seen, [want, want])
        src = {f: (helpers.KIT / "grader" / "cmlgrade" / f).read_text() for f in
               ("checkcount.py", "checkmarks.py", "checktrace.py", "runmeasure.py", "profrun.py")}
        for f, text in src.items():
            self.assertIn({"runmeasure.py": "profiling_on(exe", "profrun.py": "nsight_on(exe"}.get(f, "profiled_run(exe"),
                          text, f)
            self.assertNotIn("alone_on(", text, f"{f} starts ncu with the GPU alone but not the host's lock")


# A stand-in for `ncu ... HARNESS IN OUT GATE warm` (profrun.profiled_run): appends what it does to $CML_CALLS
# ("start", "at gate", then "ran" after a 'g' or "stopped" after anything else), like the harness
# (harness.h: its context and warm-up launch, then the gate); CML_NO_GATE: it ends at once, status 77.
# CML_NCU_LOCK: first it locks that file, as an unsandboxed ncu its host's lock ("locked"), held to its end;
# CML_HOLD: it opens its gate only once that file exists.
GATED_NCU = """
import fcntl, os, sys, time
say = lambda w: open(os.environ["CML_CALLS"], "a").write(w + "\\n")
say("start")
if os.environ.get("CML_NO_GATE"):
    sys.exit(77)
assert sys.argv[-1] == "warm", sys.argv
if os.environ.get("CML_NCU_LOCK"):
    lock = os.open(os.environ["CML_NCU_LOCK"], os.O_RDWR | os.O_CREAT)
    fcntl.lockf(lock, fcntl.LOCK_EX)
    say("locked")
while os.environ.get("CML_HOLD") and not os.path.exists(os.environ["CML_HOLD"]):
    time.sleep(0.01)
with open(sys.argv[-2], "rb") as g:
    say("at gate")
    go = g.read(1)
say("ran" if go == b"g" else "stopped")
sys.exit(0 if go == b"g" else 3)
"""


class ProfiledRun(unittest.TestCase):
    """profrun.profiled_run: an Nsight Compute run of a harness starts with a
    share of its GPU (its context and the profiler's warm-up beside the other
    submissions' work), waits at its gate, and goes only once the GPU is the
    grader's alone; a wait past its time limit stops it, and it runs again
    the way it did before, the GPU held first. A Python stand-in plays ncu
    and the harness; events and the calls file order things, no clocks."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cml-profrun-"))
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.calls = self.dir / "calls"
        self.calls.write_text("")
        self.gpu = f"profrun-{self.dir.name}"   # a GPU of this test's own (gpushare.share_of)
        self.env = {"CUDA_VISIBLE_DEVICES": self.gpu}

    def said(self):
        return self.calls.read_text().splitlines()

    def wait_said(self, words):
        for _ in range(6000):   # up to a minute: readiness, not a margin
            if self.said() == words:
                return
            threading.Event().wait(0.01)
        self.fail(f"the stand-in said {self.said()}, not {words}")

    def profile(self, timeout=60, work="", **env):
        from cmlgrade import profrun
        from cmlgrade.sandbox import Executor, Sandbox
        got = {}
        folder = self.dir / work   # the run's own folder (its gate)
        folder.mkdir(exist_ok=True)

        # the stand-in's settings in its own environment, not os.environ (two profiles at once would mix them)
        run_env = dict(os.environ, CML_CALLS=str(self.calls), **env, **self.env)

        def run():
            got["r"] = profrun.profiled_run(Executor(Sandbox(None, "")),
                                            [sys.executable, "-c", GATED_NCU, "harness", "in", "out"],
                                            folder, timeout, run_env, [])
        t = threading.Thread(target=run, daemon=True)
        t.start()
        self.addCleanup(t.join, 60)
        return t, got

    def hold_a_share(self):
        held, leave = threading.Event(), threading.Event()

        def hold():
            with gpushare.share_of(self.gpu).shared():
                held.set()
                leave.wait(120)
        threading.Thread(target=hold, daemon=True).start()
        self.assertTrue(held.wait(60))
        self.addCleanup(leave.set)
        return leave

    def test_it_starts_beside_other_work_and_goes_once_the_gpu_is_alone(self):
        share = gpushare.share_of(self.gpu)
        leave = self.hold_a_share()   # another submission's test program on the GPU
        t, got = self.profile()
        self.wait_said(["start", "at gate"])   # its context and warm-up made while the other's ran
        self.assertTrue(t.is_alive())
        self.assertEqual(share._sharing, 2)   # its share kept while it waits at its gate

        def timer():   # another submission's timing, asking for the GPU now
            with share.alone():
                with open(self.calls, "a") as f:
                    f.write("timed\n")
        waiting = threading.Thread(target=timer, daemon=True)
        waiting.start()
        self.addCleanup(waiting.join, 60)
        while share._waiting < 2:   # both queued (on the condition, not on a clock)
            threading.Event().wait(0.01)
        leave.set()
        t.join(60)
        waiting.join(60)
        # the profile went first: the timing never had the GPU while the profiled process existed
        self.assertEqual(self.said(), ["start", "at gate", "ran", "timed"])
        self.assertEqual(got["r"].rc, 0)
        self.assertEqual(share._sharing, 0)
        self.assertFalse((self.dir / "gate").exists())

    def test_a_wait_past_its_time_limit_stops_it_and_it_runs_again_with_the_gpu_held_first(self):
        leave = self.hold_a_share()
        t, got = self.profile(timeout=10)   # the share outlasts it; the stand-in's runs take far less
        self.wait_said(["start", "at gate", "stopped"])   # the share outlasted its limit: stopped unrun
        self.assertTrue(t.is_alive())   # and waiting for the GPU alone, as before the gate
        leave.set()
        t.join(60)
        self.assertEqual(self.said(), ["start", "at gate", "stopped", "start", "at gate", "ran"])
        self.assertEqual(got["r"].rc, 0)

    def test_two_profiles_of_one_gpu_take_turns_unsandboxed_too(self):
        """The GPU's Nsight Compute turn is taken for an unsandboxed run as
        well (the reference's): two profiles gated at once on one GPU, each
        holding a share while it waits for the other's ncu, would wait for
        each other for ever (seen on an H200: two reference profiles, both
        ncu spinning for minutes)."""
        leave = self.hold_a_share()
        lock, hold = str(self.dir / "ncu.lock"), self.dir / "hold"
        first, _ = self.profile(work="first", CML_NCU_LOCK=lock, CML_HOLD=str(hold))
        self.wait_said(["start", "locked"])   # ncu's own lock held, its harness not yet at its gate
        second, got = self.profile(work="second", CML_NCU_LOCK=lock)
        threading.Event().wait(0.3)   # a second profile that did not wait would have started by now
        hold.touch()
        self.wait_said(["start", "locked", "at gate"])
        leave.set()
        first.join(60)
        second.join(60)
        self.assertEqual(self.said(), ["start", "locked", "at gate", "ran", "start", "locked", "at gate", "ran"])
        self.assertEqual(got["r"].rc, 0)

    def test_without_a_fifo_it_runs_with_the_gpu_held_first(self):
        """A file system that cannot hold the gate: the run is made as
        before, the GPU held alone first, its gate a file that says go."""
        from cmlgrade import harnessio
        leave = self.hold_a_share()
        with mock.patch.object(harnessio.os, "mkfifo", side_effect=OSError(1, "Operation not permitted")):
            t, got = self.profile()
            threading.Event().wait(0.3)   # a run that did not wait for the GPU would have started by now
            self.assertEqual(self.said(), [])
            leave.set()
            t.join(60)
        self.assertEqual(self.said(), ["start", "at gate", "ran"])
        self.assertEqual(got["r"].rc, 0)
        self.assertFalse((self.dir / "go").exists())

    def test_a_run_that_ends_before_its_gate_is_its_own_result(self):
        t, got = self.profile(CML_NO_GATE="1")
        t.join(60)
        self.assertEqual(self.said(), ["start"])
        self.assertEqual(got["r"].rc, 77)


class ReadProfile(unittest.TestCase):
    """profrun.read_profile: the warm-up launch (ncu's ID 0, the kit's
    cml_hn_warm, launched before the gate) is no step's, and a profile whose
    first launch is anything else counts for nothing."""
    HEAD = '"ID","Process ID","Process Name","Host Name","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'

    def row(self, ident, name, v):
        return f'"{ident}","7","h","x","{name}","smsp__x.sum","","{v}"\n'

    def read(self, text):
        from cmlgrade import profrun
        d = Path(tempfile.mkdtemp(prefix="cml-profile-"))
        self.addCleanup(shutil.rmtree, d, True)
        (d / "ncu.csv").write_text(text)
        return profrun.read_profile(d / "ncu.csv", 1 << 20)

    def test_the_warm_up_launch_is_dropped(self):
        text, why = self.read("==PROF== x\n" + self.HEAD + self.row(0, "cml_hn_warm", 0) + self.row(1, "cml_hn_mark", 0)
                              + self.row(2, "_Z1kPf", 5))
        self.assertEqual(why, "")
        self.assertNotIn("cml_hn_warm", text)
        self.assertIn('"1","7","h","x","cml_hn_mark"', text)
        self.assertIn('"2","7","h","x","_Z1kPf","smsp__x.sum","","5"', text)

    def test_a_first_launch_that_is_not_the_warm_up_counts_for_nothing(self):
        from cmlgrade import profrun
        text, why = self.read(self.HEAD + self.row(0, "_Z1kPf", 5) + self.row(1, "cml_hn_warm", 0))
        self.assertEqual((text, why), ("", profrun.NOT_WARM))

    def test_no_launch_at_all_is_left_to_the_caller(self):
        self.assertEqual(self.read("==ERROR== no kernels were profiled\n"),
                         ("==ERROR== no kernels were profiled\n", ""))
        self.assertEqual(self.read(self.HEAD), (self.HEAD, ""))


if __name__ == "__main__":
    unittest.main()

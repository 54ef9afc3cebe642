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
from cmlgrade import gpuhold
from cmlgrade.run import Deadline

UUID = "gpu-0a1b2c3d-0000-1111-2222-333344445555"

# a stand-in for a kit test binary: takes slot K (blocking), says "held", keeps it until stdin closes
HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""

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
        p = subprocess.Popen([sys.executable, "-c", HOLDER, self.slot(k)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        self.addCleanup(p.stdout.close)
        self.addCleanup(p.wait)
        self.addCleanup(lambda: p.stdin.closed or p.stdin.close())
        self.assertEqual(p.stdout.readline().strip(), "held")   # ready: it holds the slot now
        return p

    def test_every_slot_is_held_while_timing_and_freed_after(self):
        self.assertEqual(self.free_slots(), 3)
        with gpuhold.held_alone(UUID) as why:
            self.assertEqual(why, "")
            self.assertEqual(self.free_slots(), 0)   # no test binary can start on this GPU
        self.assertEqual(self.free_slots(), 3)

    def test_timing_waits_for_a_running_test_binary_to_end(self):
        p = self.holder(1)
        entered = threading.Event()

        def time_it():
            with gpuhold.held_alone(UUID, Deadline(600)):
                entered.set()
        t = threading.Thread(target=time_it)
        t.start()
        self.assertFalse(entered.wait(0.5), "timed while a test binary still held a slot of the GPU")
        p.stdin.close()   # the binary ends
        self.assertTrue(entered.wait(60), "never took the GPU after the binary ended")
        t.join()

    def test_a_deadline_that_runs_out_while_waiting_holds_nothing(self):
        p = self.holder(2)
        with gpuhold.held_alone(UUID, Deadline(1.5)) as why:
            self.assertIn("time limit ran out", why)
            p.stdin.close()
            p.wait()
            self.assertEqual(self.free_slots(), 3)   # the slots it had taken were let go

    def test_a_gpu_without_a_known_uuid_is_timed_unheld_and_says_so(self):
        with mock.patch("shutil.which", return_value=None):
            gpuhold._UUIDS.pop("7", None)
            uuid = gpuhold.gpu_uuid("7")
        self.assertIsNone(uuid)
        with gpuhold.held_alone(uuid) as why:
            self.assertIn("UUID is not known", why)
        self.assertEqual(gpuhold.gpu_uuid("GPU-0A1B2C3D-0000-1111-2222-333344445555"), UUID)


if __name__ == "__main__":
    unittest.main()

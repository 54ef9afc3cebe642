"""Sharing a GPU among the grader's workers (`--per-gpu N`: N submissions
graded at once on each GPU; docs/grading.md §9).

Every process the grader starts on a GPU (sandbox.Executor: its
environment names the GPU) holds a share of it while it runs: tests,
kit-only checks and sanitizers of several submissions run side by side.
Nsight Compute's runs (traces, counters) and the timing take the GPU
alone(): they wait for the processes running there to end, new ones wait
for them, and the processes they start themselves run inside it. Shares
are held by processes, not by a submission's whole lab, so an alone()
waits only for what is running."""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager, nullcontext

_WAITED = threading.local()   # this thread's seconds in alone() before it had the GPU (take_waited)


def take_waited() -> float:
    """The wall seconds this thread has spent waiting in alone() for the
    GPU's other processes to end, and for another Nsight Compute run on the
    host (gpuhold.nsight_held), since the last call (the benchmark's split
    of the counters' and the timing's seconds: waiting, not work)."""
    got = getattr(_WAITED, "s", 0.0)
    _WAITED.s = 0.0
    return got


def add_waited(seconds: float) -> None:
    """Counts `seconds` of waiting for this thread (take_waited)."""
    _WAITED.s = getattr(_WAITED, "s", 0.0) + seconds


class GpuShare:
    """One GPU's sharing among the grader's workers: shared() for work that
    may run beside other submissions' work, alone() for work that must not
    (a waiting alone() goes before new shared() ones). A thread inside
    shared() that asks for alone() lets go of its share meanwhile and takes
    it back after; inside alone(), shared() is nothing more."""

    def __init__(self) -> None:
        self._c = threading.Condition()
        self._sharing = 0
        self._alone = False
        self._waiting = 0
        self._mine = threading.local()   # this thread's shares, and whether it has the GPU alone

    def _take_share(self, n: int) -> None:
        with self._c:
            while self._alone or self._waiting:
                self._c.wait()
            self._sharing += n

    def _drop_share(self, n: int) -> None:
        with self._c:
            self._sharing -= n
            self._c.notify_all()

    @contextmanager
    def shared(self):
        if getattr(self._mine, "alone", False):   # inside this thread's alone(): it has the GPU already
            yield
            return
        self._take_share(1)
        self._mine.n = getattr(self._mine, "n", 0) + 1
        try:
            yield
        finally:
            self._mine.n -= 1
            self._drop_share(1)

    @contextmanager
    def alone(self, timeout: float | None = None, upgrade: bool = False):
        """The GPU alone for the block; with `timeout`, TimeoutError where
        the others' processes still hold it after that many seconds (the
        block then never runs, and this thread's shares are its again).
        With `upgrade`, this thread's shares stay held until the GPU is its
        alone, so no other alone() comes between (profrun.py: a student's
        process waiting at its gate never outlives the share it was started
        with), and are its again at once after; only one thread of a GPU may
        upgrade at a time (there, the Nsight Compute turn of the GPU)."""
        mine = getattr(self._mine, "n", 0)
        if mine and not upgrade:
            self._drop_share(mine)
        kept = mine if upgrade else 0   # this thread's own, in _sharing while it waits
        t0 = time.monotonic()
        got = True
        with self._c:
            self._waiting += 1
            while self._alone or self._sharing > kept:
                left = None if timeout is None else t0 + timeout - time.monotonic()
                if left is not None and left <= 0:
                    got = False
                    break
                self._c.wait(left)
            self._waiting -= 1
            if got:
                self._sharing -= kept
                self._alone = True
            self._c.notify_all()   # given up: a shared() that waited behind this alone() goes on
        add_waited(time.monotonic() - t0)
        if not got:
            if mine and not upgrade:
                self._take_share(mine)
            raise TimeoutError(f"other processes held the GPU for {timeout:.0f} s")
        self._mine.alone = True
        try:
            yield
        finally:
            self._mine.alone = False
            with self._c:
                self._alone = False
                self._sharing += kept   # an upgrade's shares are its again at once (its caller lets them go next)
                self._c.notify_all()
            if mine and not upgrade:
                self._take_share(mine)


_SHARES: dict[str, GpuShare] = {}
_SHARES_LOCK = threading.Lock()


def share_of(gpu: str | None) -> GpuShare:
    """The GpuShare of a GPU (by the CUDA_VISIBLE_DEVICES entry the grader
    gives its processes; None: the CPU path or no GPU, one share for all)."""
    with _SHARES_LOCK:
        return _SHARES.setdefault(gpu or "", GpuShare())


def alone_on(env: dict[str, str]):
    """alone() of the GPU a process with this environment runs on."""
    return share_of(env.get("CUDA_VISIBLE_DEVICES")).alone()


def shared_on(env: dict[str, str] | None):
    """What a process the grader starts holds while it runs (sandbox.Executor):
    a share of its GPU where its environment names one, else nothing."""
    gpu = (env or {}).get("CUDA_VISIBLE_DEVICES")
    return share_of(gpu).shared() if gpu else nullcontext()

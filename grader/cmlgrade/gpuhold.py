"""Sharing a GPU: held alone while a submission is timed or its counters
read (docs/grading.md §9), shared by several submissions otherwise.

Within the grader (GpuShare): `--per-gpu N` workers grade N submissions at
once on each GPU. Their tests, kit-only checks and sanitizers share it;
Nsight Compute's runs (traces, counters) and the timing each have it alone:
they wait for the others' processes to end, and the others wait for them.

The kit's GPU test binaries share a host's GPUs through lock files, one per
GPU and slot (common/test/criterion_main.c: `cml-gpu-<uuid>-slot<k>.lock`
in $TMPDIR or /tmp, CML_GPU_SLOTS slots a GPU, default 2): a binary runs
only while it holds a slot. While the grader times a step it holds every
slot of that GPU, so no kit test binary (and no other grader's timing) runs
on it then: it waits for the binaries already running there to end, and
new ones go to another GPU or wait. The slots are taken in order, one at a
time, so two holders never deadlock."""
from __future__ import annotations

import errno
import fcntl
import os
import re
import shutil
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from .sandbox import run_process, scrubbed_env

DEFAULT_SLOTS = 2   # criterion_main.c's DEFAULT_SLOTS
_UUIDS: dict[str, str | None] = {}


def lock_dir() -> Path:
    return Path(os.environ.get("TMPDIR") or "/tmp")


def slots() -> int:
    try:
        n = int(os.environ.get("CML_GPU_SLOTS", ""))
    except ValueError:
        n = 0
    return n if n > 0 else DEFAULT_SLOTS


def gpu_uuid(gpu: str) -> str | None:
    """The UUID of a GPU the grader names by CUDA_VISIBLE_DEVICES entry (an
    index as nvidia-smi counts them, or already a UUID); None where it
    cannot be told (then nothing is held)."""
    if re.fullmatch(r"GPU-[0-9a-fA-F-]+", gpu):
        return gpu.lower()
    if gpu not in _UUIDS:
        smi = shutil.which("nvidia-smi")
        uuid = None
        if smi and gpu.isdigit():
            r = run_process([smi, "--query-gpu=index,uuid", "--format=csv,noheader"], timeout=30,
                            env=scrubbed_env())
            for line in r.stdout.splitlines() if r.rc == 0 else []:
                idx, _, u = line.partition(",")
                if idx.strip() == gpu:
                    uuid = u.strip().lower()
        _UUIDS[gpu] = uuid
    return _UUIDS[gpu]


@contextmanager
def held_alone(uuid: str | None, deadline=None, poll: float = 0.05):
    """Holds every slot of the GPU (lowest first) for the block's duration.
    Yields "" once held, or why it is not (no UUID; the lock folder not
    writable; the lab's deadline ran out while waiting): the block then
    runs unheld and can say so."""
    if uuid is None:
        yield "the GPU's UUID is not known here"
        return
    fds: list[int] = []
    why = ""
    try:
        for k in range(slots()):
            path = lock_dir() / f"cml-gpu-{uuid}-slot{k}.lock"
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
            except OSError as e:
                why = f"cannot open {path} ({e.strerror})"
                break
            fds.append(fd)
            while True:   # a slot frees when the binary holding it ends: wait for that, up to the deadline
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as e:
                    if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EINTR):
                        why = f"cannot lock {path} ({e.strerror})"
                        break
                if deadline is not None and deadline.expired():
                    why = "the lab's time limit ran out while other work held the GPU"
                    break
                time.sleep(poll)
            if why:
                break
        if why:   # not alone: let go of what was taken, time without it
            for fd in reversed(fds):
                os.close(fd)
            fds = []
        yield why
    finally:
        for fd in reversed(fds):
            os.close(fd)   # closing the descriptor releases its lock


class GpuShare:
    """One GPU's sharing among the grader's workers: shared() for work that
    may run beside other submissions' work, alone() for work that must not
    (a waiting alone() goes before new shared() ones). A thread inside
    shared() that asks for alone() lets go of its share meanwhile and takes
    it back after."""

    def __init__(self) -> None:
        self._c = threading.Condition()
        self._sharing = 0
        self._alone = False
        self._waiting = 0
        self._mine = threading.local()

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
        self._take_share(1)
        self._mine.n = getattr(self._mine, "n", 0) + 1
        try:
            yield
        finally:
            self._mine.n -= 1
            self._drop_share(1)

    @contextmanager
    def alone(self):
        mine = getattr(self._mine, "n", 0)
        if mine:
            self._drop_share(mine)
        with self._c:
            self._waiting += 1
            while self._alone or self._sharing:
                self._c.wait()
            self._waiting -= 1
            self._alone = True
        try:
            yield
        finally:
            with self._c:
                self._alone = False
                self._c.notify_all()
            if mine:
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

"""The GPU held alone while a submission is timed (docs/grading.md §9),
against the kit's own test binaries (within the grader: gpushare.py).

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

from .gpushare import add_waited, alone_on
from .sandbox import run_process, scrubbed_env

DEFAULT_SLOTS = 2   # criterion_main.c's DEFAULT_SLOTS
_UUIDS: dict[str, str | None] = {}
_LISTED: list[tuple[str, str, str]] | None = None


def lock_dir() -> Path:
    return Path(os.environ.get("TMPDIR") or "/tmp")


def lock_path(uuid: str, slot: int) -> Path:
    """criterion_main.c's lock file of a GPU's slot."""
    return lock_dir() / f"cml-gpu-{uuid}-slot{slot}.lock"


def slots() -> int:
    try:
        n = int(os.environ.get("CML_GPU_SLOTS", ""))
    except ValueError:
        n = 0
    return n if n > 0 else DEFAULT_SLOTS


def _smi_gpus() -> list[tuple[str, str, str]]:
    """(index, uuid, name) of each GPU nvidia-smi lists (asked once)."""
    global _LISTED
    if _LISTED is None:
        smi = shutil.which("nvidia-smi")
        r = run_process([smi, "--query-gpu=index,uuid,name", "--format=csv,noheader"], timeout=30,
                        env=scrubbed_env()) if smi else None
        _LISTED = [tuple(x.strip() for x in line.split(",", 2)) for line in (r.stdout.splitlines() if r and r.rc == 0
                                                                               else []) if line.count(",") >= 2]
    return _LISTED


def _listed(gpu: str) -> tuple[str, str, str] | None:
    """nvidia-smi's line of a GPU the grader names by CUDA_VISIBLE_DEVICES
    entry (an index as nvidia-smi counts them, or a UUID)."""
    if not (gpu.isdigit() or re.fullmatch(r"GPU-[0-9a-fA-F-]+", gpu)):
        return None
    return next((g for g in _smi_gpus() if gpu == g[0] or gpu.lower() == g[1].lower()), None)


def gpu_uuid(gpu: str) -> str | None:
    """The UUID of a GPU the grader names by CUDA_VISIBLE_DEVICES entry (an
    index as nvidia-smi counts them, or already a UUID); None where it
    cannot be told (then nothing is held)."""
    if re.fullmatch(r"GPU-[0-9a-fA-F-]+", gpu):
        return gpu.lower()
    if gpu not in _UUIDS:
        g = _listed(gpu)
        _UUIDS[gpu] = g[1].lower() if g else None
    return _UUIDS[gpu]


def gpu_model(gpu: str) -> str | None:
    """The model of a GPU (nvidia-smi's name, e.g. "NVIDIA H200"); None
    where it cannot be told (a MIG instance, no nvidia-smi)."""
    g = _listed(gpu)
    return g[2] if g else None


_TAKEN = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EINTR)   # a lock another holds (or a signal): try again


def _try_flock(fd: int) -> bool:
    """flock without waiting: False if another holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as e:
        if e.errno in _TAKEN:
            return False
        raise


def _open_to_all(fd: int) -> None:
    """A lock file this user owns, readable and writable by every user (the
    umask took that from os.open's 0o666): the kit's test binaries and ncu
    of other users on the host lock the same file."""
    try:
        if os.fstat(fd).st_uid == os.getuid():
            os.fchmod(fd, 0o666)
    except OSError:
        pass   # not ours to change: theirs already decides


def _take_files(paths: list[Path], try_lock, deadline, poll: float, busy: str) -> tuple[list[int], str]:
    """Opens and locks each file in order (try_lock(fd): False while another
    holds it; then it waits, up to the deadline). Returns the descriptors,
    which hold the locks until closed, and ""; or no descriptors (what was
    taken let go) and why: a file that cannot be opened or locked, or
    `busy` when the deadline ran out while waiting."""
    fds: list[int] = []
    why = ""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError as e:
            why = f"cannot open {path} ({e.strerror})"
            break
        fds.append(fd)
        _open_to_all(fd)
        try:
            while not try_lock(fd):   # frees when its holder ends: wait for that, up to the deadline
                if deadline is not None and deadline.expired():
                    why = busy
                    break
                time.sleep(poll)
        except OSError as e:
            why = f"cannot lock {path} ({e.strerror})"
        if why:
            break
    if why:
        for fd in reversed(fds):
            os.close(fd)
        fds = []
    return fds, why


@contextmanager
def held_alone(uuid: str | None, deadline=None, poll: float = 0.05):
    """Holds every slot of the GPU (lowest first) for the block's duration.
    Yields "" once held, or why it is not (no UUID; the lock folder not
    writable; the lab's deadline ran out while waiting): the block then
    runs unheld and can say so."""
    if uuid is None:
        yield "the GPU's UUID is not known here"
        return
    fds, why = _take_files([lock_path(uuid, k) for k in range(slots())], _try_flock, deadline, poll,
                           "the lab's time limit ran out while other work held the GPU")
    try:
        yield why
    finally:
        for fd in reversed(fds):
            os.close(fd)   # closing the descriptor releases its lock


# ------------------------------------------------------------ Nsight Compute's host-wide lock

# Nsight Compute lets one profiling session run on a host at a time: each ncu
# waits on a lock file, $TMPDIR/nsight-compute-lock (/tmp without TMPDIR),
# for the others to end. In the sandbox /tmp is a tmpfs of its own, so a
# sandboxed ncu locks a file no other ncu sees: it profiled beside the kit's
# own ncu runs (ctest's sectors_agree) and beside other graders' ones, and
# both failed ("Failed to prepare kernel for profiling"; seen on an H200
# host, ctest -L gpu beside a batch of ten). So the grader takes the host's
# lock itself, outside the sandbox, around every sandboxed ncu run. Not an
# unsandboxed one: that ncu locks the host's file itself, and would wait for
# the grader that started it forever. The file is never handed to student
# code. Whether ncu locks it with flock or with a POSIX lock is not
# documented: the grader holds both. POSIX locks belong to the process (a
# thread's close would drop another's), so the grader's threads take turns
# on _NSIGHT_TURN first.
NSIGHT_LOCK = "nsight-compute-lock"
_NSIGHT_TURN = threading.Lock()


def nsight_lock_paths() -> list[Path]:
    """The lock files an ncu outside the sandbox would use: /tmp's, and
    $TMPDIR's where that is set elsewhere."""
    paths = [Path("/tmp") / NSIGHT_LOCK]
    if os.path.realpath(lock_dir()) != os.path.realpath("/tmp"):   # one file twice would wait on itself (flock)
        paths.append(lock_dir() / NSIGHT_LOCK)
    return paths


def _lock_both(fd: int) -> bool:
    """flock and a POSIX lock on fd, without waiting; False (neither held) if one is taken."""
    if not _try_flock(fd):
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as e:
        fcntl.flock(fd, fcntl.LOCK_UN)
        if e.errno in _TAKEN + (errno.EACCES,):   # a POSIX lock another holds: EACCES or EAGAIN
            return False
        raise


@contextmanager
def nsight_held(sandboxed: bool, deadline=None, poll: float = 0.05):
    """Holds Nsight Compute's host-wide lock for a sandboxed ncu run (above).
    Yields "" once held (or when nothing need be held: an unsandboxed run),
    else why not (a lock file this user cannot open or lock; the deadline ran
    out while another profiler held it): the block then runs unheld."""
    if not sandboxed:
        yield ""
        return
    t0 = time.monotonic()
    with _NSIGHT_TURN:
        fds, why = _take_files(nsight_lock_paths(), _lock_both, deadline, poll,
                               "the lab's time limit ran out while another Nsight Compute run held the host")
        add_waited(time.monotonic() - t0)   # waiting for the other profilers: the bench counts it apart
        try:
            yield why
        finally:
            for fd in reversed(fds):
                os.close(fd)   # closing releases both locks


@contextmanager
def profiling_on(exe, env: dict[str, str], deadline=None):
    """Where the grader runs Nsight Compute: the GPU alone among the
    grader's own workers (gpushare.alone_on), and the host's Nsight Compute
    lock for a sandboxed run (nsight_held). Yields nsight_held's answer."""
    with alone_on(env), nsight_held(exe.sandbox.active, deadline) as why:
        yield why

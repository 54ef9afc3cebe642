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
import time
from contextlib import contextmanager
from pathlib import Path

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
            path = lock_path(uuid, k)
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


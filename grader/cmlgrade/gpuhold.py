"""The GPU held alone while a submission is timed (docs/grading.md §9),
against the kit's own test binaries (within the grader: gpushare.py).

The kit's GPU test binaries share a host's GPUs through lock files, one per
GPU and slot (common/test/criterion_main.c: `cml-gpu-<uuid>-slot<k>.lock`
in $TMPDIR or /tmp, CML_GPU_SLOTS slots a GPU, default 2): a binary runs
only while it holds a slot. While the grader times a step it holds every
slot of that GPU, so no kit test binary (and no other grader's timing) runs
on it then: it waits for the binaries already running there to end, and
new ones go to another GPU or wait. The slots are taken in order, one at a
time, so two holders never deadlock. Then it takes the kit's `.gate` and
`.use` files of the GPU (kit_gpu_files), which the kit's runners share
while they run, and holds them around every Nsight Compute run of its own
too."""
from __future__ import annotations

import errno
import fcntl
import os
import re
import shutil
import struct
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


def kit_gpu_name(uuid: str) -> str:
    """A GPU as the kit's C code names it in lock files: the CUDA UUID with
    "GPU-" upper case and the hex lower (cml_gpu_uuid_text, common/src/gpu_turn.c); gpu_uuid
    gives all of it lower case. Before this, the grader's slot files were
    cml-gpu-gpu-<hex>-slot<k>.lock and the test binaries' cml-gpu-GPU-...:
    held alone, a step was timed beside the kit's test binaries all the same."""
    return "GPU-" + uuid[4:] if uuid.lower().startswith("gpu-") else uuid


def lock_path(uuid: str, slot: int) -> Path:
    """criterion_main.c's lock file of a GPU's slot."""
    return lock_dir() / f"cml-gpu-{kit_gpu_name(uuid)}-slot{slot}.lock"


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


def free_gib(gpu: str) -> float | None:
    """The GPU's free memory now, in GiB, by nvidia-smi (asked each time: it
    changes); None where it cannot be told (a MIG instance, no nvidia-smi)."""
    g = _listed(gpu)
    smi = shutil.which("nvidia-smi")
    if g is None or not smi:
        return None
    r = run_process([smi, "--query-gpu=memory.free", "--format=csv,noheader,nounits", "-i", g[0]], timeout=30,
                    env=scrubbed_env())
    try:
        return int(r.stdout.strip()) / 1024.0 if r.rc == 0 else None
    except ValueError:
        return None


# --per-gpu auto: one submission a GPU for every AUTO_GIB_EACH GiB free on it
# (its test program's parallel tests, lab 04's 8 GiB case beside another,
# and its kit-only checks' harness processes stay below that), at most
# AUTO_MOST: the figure the grader's speed was measured at (docs/grading.md
# §9). An 80 GB card idle gets 4, a 40 GB one 2, a smaller one 1.
AUTO_GIB_EACH = 16
AUTO_MOST = 4


def auto_per_gpu(gpus: list[str]) -> tuple[int, str]:
    """--per-gpu auto on these GPUs: the count for the GPU with the least
    memory free now (1 where any cannot be told), and the reason in words."""
    free = [free_gib(g) for g in gpus]
    if not gpus or any(f is None for f in free):
        return 1, "--per-gpu auto: the GPUs' free memory cannot be told (nvidia-smi), so one at a time"
    least = min(free)
    n = max(1, min(AUTO_MOST, int(least // AUTO_GIB_EACH)))
    where = "on each GPU" if len(gpus) > 1 else "on the GPU"
    return n, (f"--per-gpu auto: {least:.0f} GiB free{' on the fullest' if len(gpus) > 1 else ''}, "
               f"{AUTO_GIB_EACH} GiB a submission, at most {AUTO_MOST}; {n} at once {where}")


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


def _let_go(fds: list[int]) -> None:
    """Closes the descriptors, last taken first: closing one releases its lock."""
    for fd in reversed(fds):
        os.close(fd)


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
        _let_go(fds)
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
    busy = "the lab's time limit ran out while other work held the GPU"
    fds, why = _take_files([lock_path(uuid, k) for k in range(slots())], _try_flock, deadline, poll, busy)
    if not why:   # and the kit's other processes there (its runners, under ctest's sanitizers say) end first
        kit, why = _kit_gpu_alone(uuid, deadline, busy)
        fds += kit
        if why:
            _let_go(fds)
            fds = []
    try:
        yield why
    finally:
        _let_go(fds)


# ------------------------------------------------------------ Nsight Compute's host-wide locks

# Nsight Compute lets one profiling session at a time use a GPU of a host.
# The process it profiles holds POSIX locks on files in
# $TMPDIR/nvidia/nsight_compute/ (/tmp without TMPDIR): a shared one on
# `lock`, and an exclusive one on `lock.<UUID>` for its GPU (nvidia-smi's
# UUID without "GPU-"); another profiled process waits for them. (Not
# documented: read from /proc/locks while ncu 2025.3 profiled on an H200.)
# In the sandbox /tmp is a tmpfs of its own, so a sandboxed ncu locks files
# no other ncu sees, and profiles beside them: both failed ("An error was
# reported by the driver"), seen with ctest's sectors_agree beside a batch,
# and with four ncu on one H200, two with a TMPDIR of their own. So the
# grader takes the host's locks itself, outside the sandbox, around every
# sandboxed ncu run: with them held the same four all profiled. A GPU's
# file it waits for in the kernel's queue with the ncu processes there
# (_queued), not by polling. Not around
# an unsandboxed run: that ncu takes them itself, and would wait for the
# grader that started it forever. Where the GPU's UUID is not known, the
# grader holds `lock` exclusively: no other profiling on the host at all.
# The files are never handed to student code. POSIX locks belong to the
# process, not the thread: the grader's threads take turns a GPU
# (_NSIGHT_TURN), and hold the shared `lock` through one descriptor
# (_SHARED), which closes when the last of them lets go.
NSIGHT_DIR = Path("nvidia") / "nsight_compute"
_NSIGHT_STATE = threading.Lock()
_NSIGHT_TURN: dict[str, threading.Lock] = {}   # per GPU UUID ("" where it is not known)
_SHARED: dict[Path, list[int]] = {}            # `lock` held shared: [descriptor, holders]


def kit_gpu_files(uuid: str | None) -> list[Path]:
    """The files through which the kit's processes share a GPU, and one has
    it alone (common/include/cml/cml_gpu_turn.h): `cml-gpu-GPU-<hex>.gate`
    and `cml-gpu-GPU-<hex>.use`, flock(2) files of $TMPDIR (else /tmp). The
    runners and the labs' GPU tests hold `.use` shared while they run,
    after a moment's share of `.gate`; the grader takes both exclusive, in
    that order, around its Nsight Compute runs (nsight_held) and while it
    times (held_alone): no process of the kit's tests runs on that GPU
    meanwhile. Two ncu runs at once on one GPU, or one beside the kit's
    other GPU work, failed on an H200 ("LaunchFailed", 2026-12-01). None
    where the GPU is not known. The grader's own processes take nothing
    (scrubbed_env: CML_GPU_HELD=1); its workers share through gpushare."""
    if not uuid or not uuid.lower().startswith("gpu-"):
        return []
    return [lock_dir() / f"cml-gpu-{kit_gpu_name(uuid)}.{kind}" for kind in ("gate", "use")]


def _kit_gpu_alone(uuid: str | None, deadline, busy: str) -> tuple[list[int], str]:
    """kit_gpu_files, each exclusive in turn, waited for in the kernel's
    queue up to the deadline. Returns the descriptors (closing them lets
    go) and "" or why not (nothing then held)."""
    fds: list[int] = []
    for path in kit_gpu_files(uuid):
        fd, why = _queued(path, deadline, busy, _flock_ex)
        if fd is None:
            _let_go(fds)
            return [], why
        fds.append(fd)
    return fds, ""


def nsight_lock_dirs() -> list[Path]:
    """Where an ncu outside the sandbox locks: /tmp's folder, and
    $TMPDIR's where that is set elsewhere."""
    dirs = [Path("/tmp") / NSIGHT_DIR]
    if os.path.realpath(lock_dir()) != os.path.realpath("/tmp"):   # one file twice would wait on itself
        dirs.append(lock_dir() / NSIGHT_DIR)
    return dirs


def _nsight_gpu(uuid: str | None) -> str:
    """A GPU as Nsight Compute names its lock file (gpu_uuid's form without
    "gpu-"); "" where the UUID is not a GPU's (not known, a MIG instance)."""
    return uuid[4:] if uuid and re.fullmatch(r"gpu-[0-9a-f-]+", uuid) else ""


def nsight_lock_files(uuid: str | None) -> list[tuple[Path, bool]]:
    """The files the grader locks for a sandboxed ncu on the GPU with this
    UUID (gpu_uuid's form), each with True where the lock is exclusive."""
    gpu = _nsight_gpu(uuid)
    files: list[tuple[Path, bool]] = []
    for d in nsight_lock_dirs():
        files += [(d / "lock", False), (d / f"lock.{gpu}", True)] if gpu else [(d / "lock", True)]
    return files


def _folder_open_to_all(d: Path) -> None:
    """The lock files' folder (nvidia/nsight_compute), made where it is not
    there, and where this user made it, open to every user as /tmp is (mode
    1777): another user's ncu makes its own files in it."""
    for f in (d.parent, d):
        try:
            f.mkdir(exist_ok=True)
            if f.stat().st_uid == os.getuid():
                os.chmod(f, 0o1777)
        except OSError:
            pass   # said below, when the file cannot be opened


def _posix_try(exclusive: bool):
    """A try_lock for _take_files: a POSIX lock without waiting."""
    def take(fd: int) -> bool:
        try:
            fcntl.lockf(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
            return True
        except OSError as e:
            if e.errno in _TAKEN + (errno.EACCES,):   # a POSIX lock another holds: EACCES or EAGAIN
                return False
            raise
    return take


def _ofd_lock(fd: int, wait: bool) -> None:
    """An exclusive open file description lock on the whole file (see _queued)."""
    want = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)   # struct flock: the whole file, l_pid 0
    fcntl.fcntl(fd, fcntl.F_OFD_SETLKW if wait else fcntl.F_OFD_SETLK, want)


def _flock_ex(fd: int, wait: bool) -> None:
    """An exclusive flock(2) on the file (the kit's own files, kit_gpu_files)."""
    fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)


def _queued(path: Path, deadline, busy: str, lock=_ofd_lock) -> tuple[int | None, str]:
    """A lock on `path` waited for in the kernel's queue, beside
    ncu processes waiting there too: by default an exclusive open file
    description lock (F_OFD_SETLKW; it conflicts with ncu's POSIX locks, and belongs to its
    descriptor, not the process, so the grader's threads never share it).
    A poll every 50 ms, as before, found the file free only by chance: where
    ncu processes outside queue for it, each release goes to one already
    waiting (the likely cause, not timed, of a self-check on an H200 beside
    a loop of the kit's GPU tests, whose catalogued mistakes run ncu: the
    reference's lab 03 spent 11 minutes in the checks that profile it;
    test_gpuhold lists the request as queued in /proc/locks). The wait runs
    in a thread of its own, so the deadline holds; past it the thread lets
    the lock go as soon as it gets it. `lock` may be another kind (_flock_ex). Returns the
    descriptor, which holds the lock until closed, and ""; or None and why
    (`busy` when the deadline ran out)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError as e:
        return None, f"cannot open {path} ({e.strerror})"
    _open_to_all(fd)
    try:
        lock(fd, False)   # free now: no thread
        return fd, ""
    except OSError as e:
        if e.errno not in _TAKEN + (errno.EACCES,):
            os.close(fd)
            return None, f"cannot lock {path} ({e.strerror})"
    done, guard = threading.Event(), threading.Lock()
    state: dict = {"got": False, "gave_up": False, "error": None}

    def wait() -> None:
        try:
            lock(fd, True)   # EINTR is retried by Python itself
        except OSError as e:
            with guard:
                state["error"] = e
                if state["gave_up"]:
                    os.close(fd)
            done.set()
            return
        with guard:
            if state["gave_up"]:
                os.close(fd)   # nobody waits for it now: let it go at once
            else:
                state["got"] = True
        done.set()
    threading.Thread(target=wait, name=f"lock {path.name}", daemon=True).start()
    done.wait(max(0.0, deadline.left()) if deadline is not None else None)
    with guard:
        if state["got"]:
            return fd, ""
        if state["error"] is not None:
            os.close(fd)
            return None, f"cannot lock {path} ({state['error'].strerror})"
        state["gave_up"] = True
    return None, busy


def _take_nsight(files: list[tuple[Path, bool]], deadline, poll: float, busy: str) -> tuple[list, str]:
    """Locks each file in order; a shared one once for the whole process.
    Returns what to let go (_let_go_nsight) and "" or why not."""
    taken: list = []
    for path, exclusive in files:
        if not exclusive:
            with _NSIGHT_STATE:
                held = _SHARED.get(path)
                if held:
                    held[1] += 1
                    taken.append(path)
                    continue
        _folder_open_to_all(path.parent)
        if exclusive:   # one thread at a time takes a GPU's file (_NSIGHT_TURN); `lock` alone, where none is known
            fd, why = _queued(path, deadline, busy)
            fds = [fd] if fd is not None else []
        else:
            fds, why = _take_files([path], _posix_try(exclusive), deadline, poll, busy)
        if why:
            _let_go_nsight(taken)
            return [], why
        if exclusive:
            taken.append(fds[0])
        else:
            with _NSIGHT_STATE:
                _SHARED[path] = [fds[0], 1]
            taken.append(path)
    return taken, ""


def _let_go_nsight(taken: list) -> None:
    for t in reversed(taken):
        if isinstance(t, Path):
            with _NSIGHT_STATE:
                held = _SHARED[t]
                held[1] -= 1
                if held[1] == 0:
                    os.close(held[0])   # closing releases the process's lock on it
                    del _SHARED[t]
        else:
            os.close(t)


NSIGHT_BUSY = "the lab's time limit ran out while another Nsight Compute run held the GPU"


@contextmanager
def nsight_held(sandboxed: bool, uuid: str | None = None, deadline=None, poll: float = 0.05):
    """Holds Nsight Compute's host-wide locks for a sandboxed ncu run on the
    GPU with this UUID (above), and the grader's turn of that GPU for any
    ncu run (an unsandboxed one takes the files itself): one profile at a
    time a GPU among the grader's threads (profrun.py relies on it), and
    the GPU alone among the kit's processes (kit_gpu_files, taken first). Yields
    "" once held, else why not (NSIGHT_BUSY: the deadline ran out while
    another profiler held the GPU, turn and files unheld; a lock file this
    user cannot open or lock, the turn held): the block then runs unheld."""
    t0 = time.monotonic()
    with _NSIGHT_STATE:
        turn = _NSIGHT_TURN.setdefault(_nsight_gpu(uuid), threading.Lock())
    if not turn.acquire(timeout=deadline.left() if deadline is not None else -1):
        add_waited(time.monotonic() - t0)
        yield NSIGHT_BUSY
        return
    kit: list[int] = []
    try:
        kit, why = _kit_gpu_alone(uuid, deadline, NSIGHT_BUSY)   # the GPU alone first, sandboxed or not
        if why or not sandboxed:
            add_waited(time.monotonic() - t0)
            yield why
            return
        taken, why = _take_nsight(nsight_lock_files(uuid), deadline, poll, NSIGHT_BUSY)
        add_waited(time.monotonic() - t0)   # waiting for the other profilers: the bench counts it apart
        try:
            yield why
        finally:
            _let_go_nsight(taken)
    finally:
        _let_go(kit)
        turn.release()


@contextmanager
def profiling_on(exe, env: dict[str, str], deadline=None):
    """Where the grader runs Nsight Compute: the host's Nsight Compute lock
    for a sandboxed run (nsight_held), then the GPU alone among the
    grader's own workers (gpushare.alone_on). Yields nsight_held's answer.
    In that order everywhere (profrun.profiled_run too): a worker that
    holds the GPU alone never waits for the lock."""
    with nsight_on(exe, env, deadline) as why, alone_on(env):
        yield why


def nsight_on(exe, env: dict[str, str], deadline=None):
    """nsight_held for a process with this environment (its GPU's UUID)."""
    gpu = (env or {}).get("CUDA_VISIBLE_DEVICES", "").split(",")[0]
    return nsight_held(exe.sandbox.active, gpu_uuid(gpu) if gpu else None, deadline)

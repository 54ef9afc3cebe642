"""Running one process (sandbox.Executor runs every command through it):
in its own session, under resource limits (prlimit, where it is
installed), its output read into bounded buffers, and its whole process group killed when it exits or its
time runs out. The grader can become the subreaper of what student
processes leave behind, and kills those leftovers (kill_leftovers) and,
when it stops, everything it started (kill_all). Nothing here decides what
a process may see: that is sandbox.py's."""
from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class ProcResult:
    argv: list[str]
    rc: int | None          # None: killed on the timeout
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


# Limits of every student process (prlimit): address space is left alone for
# CUDA (it reserves far more than it uses); data segment, file size and core.
DATA_LIMIT = 16 << 30
FSIZE_LIMIT = 4 << 30
GRACE_S = 0.5   # after the main process exits, how long its output may still drain

_LIVE: set[int] = set()        # the processes run_process is waiting for (all threads)
_LIVE_LOCK = threading.Lock()
_SUBREAPER = False


def become_subreaper() -> bool:
    """Orphans of student processes (a child that detached with setsid)
    are re-parented to the grader instead of init, so it can kill them
    (prctl PR_SET_CHILD_SUBREAPER, Linux)."""
    global _SUBREAPER
    if _SUBREAPER:
        return True
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        _SUBREAPER = libc.prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        _SUBREAPER = False
    return _SUBREAPER


def kill_all() -> None:
    """The grader is stopping: every process run_process started (its whole
    session: a build's compilers too) and every leftover re-parented to the
    grader, killed, so nothing writes into a folder about to be removed."""
    for pid in list(_LIVE):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    kill_leftovers()


def kill_leftovers() -> int:
    """Kills every process re-parented to the grader that no run_process
    call is waiting for, that is not in the grader's own session and not in
    the session of a run still going: the detached leftovers of student
    processes. Returns how many.

    The scan holds _LIVE_LOCK, which run_process holds from before its
    fork until the new pid is in _LIVE: a child another thread has just
    started (its own session already, not yet registered) is never taken
    for a leftover, killed and reaped under that thread's feet (which read
    as a build or test run that exited 0 having done nothing)."""
    if not _SUBREAPER:
        return 0
    me, my_sid = os.getpid(), os.getsid(0)
    victims = []
    with _LIVE_LOCK:
        for d in Path("/proc").iterdir():
            if not d.name.isdigit() or int(d.name) in _LIVE:
                continue
            try:
                stat = (d / "stat").read_text()
                fields = stat[stat.rindex(")") + 2:].split()
                ppid, sid = int(fields[1]), int(fields[3])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == me and sid != my_sid and sid not in _LIVE:   # a live run's session leader is its pid
                try:
                    os.kill(int(d.name), signal.SIGKILL)
                    victims.append(int(d.name))
                except (ProcessLookupError, PermissionError):
                    pass
    for pid in victims:
        for _ in range(50):  # reap it: only that pid, never another thread's child
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
            except ChildProcessError:
                break
            time.sleep(0.01)
    return len(victims)


def _limited(argv: list[str]) -> list[str]:
    prl = shutil.which("prlimit")
    if not prl:
        return argv
    return [prl, f"--data={DATA_LIMIT}", f"--fsize={FSIZE_LIMIT}", "--core=0", "--"] + argv


def run_process(argv: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
                timeout: float | None = None, max_output: int = 4 << 20, limits: bool = True) -> ProcResult:
    """Runs argv in its own session with resource limits. Output is read
    into bounded buffers (max_output bytes each; the rest is read and
    dropped). When the main process exits, or the time limit passes, its
    whole process group is killed and reading stops within GRACE_S even if
    a detached child still holds the pipes."""
    start = time.monotonic()
    full = _limited(list(argv)) if limits else list(argv)
    with _LIVE_LOCK:   # registered before any other thread's kill_leftovers can see it
        try:
            proc = subprocess.Popen(full, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True)
        except OSError as e:
            return ProcResult(argv, 127, "", f"cannot run {argv[0]}: {e.strerror}\n", False, 0.0)
        _LIVE.add(proc.pid)
    bufs = [bytearray(), bytearray()]
    sel = selectors.DefaultSelector()
    for i, f in enumerate((proc.stdout, proc.stderr)):
        os.set_blocking(f.fileno(), False)
        sel.register(f, selectors.EVENT_READ, i)
    end = None if timeout is None else start + timeout
    timed_out, exited_at = False, None
    try:
        while sel.get_map():
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > GRACE_S:
                break  # the program is gone; a detached child holding its output is not waited for
            if end is not None and now >= end:
                timed_out = proc.poll() is None
                break
            wait = 0.1 if end is None else max(0.0, min(0.1, end - now))
            for key, _ in sel.select(wait):
                try:
                    chunk = os.read(key.fd, 1 << 16)
                except (BlockingIOError, InterruptedError):
                    continue
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                buf = bufs[key.data]
                room = max_output - len(buf)
                if room > 0:
                    buf += chunk[:room]
        if proc.poll() is None:
            left = None if end is None else end - time.monotonic()
            try:
                proc.wait(timeout=None if left is None else max(0.0, left))
            except subprocess.TimeoutExpired:
                timed_out = True
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of its group dies with it
        except (ProcessLookupError, PermissionError):
            pass
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        sel.close()
        for f in (proc.stdout, proc.stderr):
            f.close()
        with _LIVE_LOCK:
            _LIVE.discard(proc.pid)
        kill_leftovers()
    dec = lambda b: bytes(b).decode("utf-8", "replace")  # noqa: E731
    return ProcResult(argv, None if timed_out else proc.returncode, dec(bufs[0]), dec(bufs[1]), timed_out,
                      time.monotonic() - start)

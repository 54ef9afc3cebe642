"""Running student code: every command goes through an Executor, which
scrubs the environment, puts the process in its own group (killed whole on
a timeout) and, when bubblewrap (`bwrap`) works here, wraps it in a sandbox:
the file system read-only, the student's own tree and one output folder
writable, the kit's solutions/, other students' trees, the submissions and
the rubric override hidden, no network, GPU device nodes passed through.
Without bwrap the run is "not sandboxed" and the reports say so."""
from __future__ import annotations

import glob
import os
import selectors
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .gpushare import shared_on

# What a student process may see of the environment.
ENV_KEEP = ("PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "LD_LIBRARY_PATH",
            "CML_NCU", "CMAKE_PREFIX_PATH", "PKG_CONFIG_PATH", "LANG", "TERM")
# (not CUDAARCHS: the grader's builds take their architecture from --cuda-arch or the GPU, never the shell's)

_LOG_LOCK = threading.Lock()   # CMLGRADE_PROCESS_LOG's lines, one at a time


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


def scrubbed_env(extra: dict[str, str] | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    base = os.environ if base is None else base
    env = {k: base[k] for k in ENV_KEEP if k in base}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env["HOME"] = "/tmp"
    env["LC_ALL"] = "C"
    env.update(extra or {})
    return env


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


# What of the file system a student process sees: the system (read-only),
# the toolchain wherever it lives, nothing else (an allow-list: the kit, other
# checkouts, other students, the grader's work and output folders are simply
# not there). Symbolic links at the top (merged /usr) are recreated as links.
SYSTEM_RO = ("usr", "etc", "bin", "sbin", "lib", "lib64", "lib32", "libx32", "sys")
TOOLS = ("cmake", "nvcc", "cc", "c++", "gcc", "g++", "ld", "make", "ninja", "pkg-config", "compute-sanitizer", "ncu",
         "prlimit")


def tool_roots() -> list[Path]:
    """Install prefixes of the toolchain that are outside the system
    folders (a CUDA toolkit in /opt, a cmake from pip): bound read-only."""
    roots = []
    cands = [shutil.which(t) for t in TOOLS]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            cands.append(os.path.join(os.environ[var], "bin", "nvcc"))
    for c in filter(None, cands):
        for q in {Path(c).absolute(), Path(c).resolve()}:
            if q.exists() and not any(q.is_relative_to("/" + s) for s in SYSTEM_RO):
                roots.append(q.parent.parent)  # <prefix>/bin/tool -> <prefix>
    # Nsight Compute: CUDA's bin/ncu is a script that runs the tool from <cuda>/nsight-compute-* or
    # /opt/nvidia/nsight-compute/<version> (outside the system folders on NVIDIA's machine images)
    roots += [Path(p) for p in sorted(glob.glob("/opt/nvidia/nsight-compute*")) if Path(p).is_dir()]
    # libraries the kit's build and programs use from outside the system folders (Criterion staged
    # in a prefix of its own): the CMAKE_PREFIX_PATH prefixes, the LD_LIBRARY_PATH folders and the
    # prefixes of the PKG_CONFIG_PATH folders, which student processes keep, read-only
    dirs = [(d, 0) for d in os.environ.get("CMAKE_PREFIX_PATH", "").split(os.pathsep)]
    dirs += [(d, 0) for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep)]
    dirs += [(d, 2) for d in os.environ.get("PKG_CONFIG_PATH", "").split(os.pathsep)]   # <prefix>/lib/pkgconfig
    for d, up in dirs:
        q = Path(d)
        if not d or not q.is_absolute() or not q.is_dir():
            continue
        q = q.resolve()
        for _ in range(up):
            q = q.parent
        if not any(q.is_relative_to("/" + s) for s in SYSTEM_RO) and q != Path("/"):
            roots.append(q)
    return sorted(set(roots))


@dataclass
class Sandbox:
    """Describes what a student process may see: the system read-only, the
    toolchain, `readable` paths read-only and `writable` ones read-write
    (the student's own tree and output folder); nothing else. `hide` paths
    are covered as well when they lie inside what is shown (e.g. a kit
    installed under /usr/local)."""
    bwrap: str | None
    note: str                       # shown in every report
    hide: list[Path] = field(default_factory=list)
    extra_ro: list[Path] = field(default_factory=list)   # toolchain prefixes outside the system folders

    @property
    def active(self) -> bool:
        return self.bwrap is not None

    def prefix(self, writable: list[Path], readable: list[Path] = ()) -> list[str]:
        if not self.bwrap:
            return []
        args = [self.bwrap, "--unshare-net", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try",
                "--die-with-parent", "--new-session", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        for top in SYSTEM_RO:
            host = Path("/" + top)
            if host.is_symlink():
                args += ["--symlink", os.readlink(host), str(host)]
            elif host.is_dir():
                args += ["--ro-bind", str(host), str(host)]
        for r in self.extra_ro:
            args += ["--ro-bind-try", str(r), str(r)]
        for dev in sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri/*")):
            args += ["--dev-bind", dev, dev]
        for h in self.hide:  # only matters inside the system folders or the toolchain
            if any(h.is_relative_to("/" + s) for s in SYSTEM_RO) or any(h.is_relative_to(r) for r in self.extra_ro):
                if h.is_dir():
                    args += ["--tmpfs", str(h)]
                elif h.exists():
                    args += ["--ro-bind", "/dev/null", str(h)]
        for r in readable:
            args += ["--ro-bind", str(r), str(r)]
        for w in writable:
            args += ["--bind", str(w), str(w)]
        return args + ["--"]


UNSAFE_NOTE = ("NOT ISOLATED (--unsafe-no-sandbox): student code ran as the grader's user with a scrubbed "
               "environment only; it could read what that user reads and outlive its limits")


def detect_sandbox(hide: list[Path], want: bool = True, probe: list[str] | None = None,
                   extra_ro: list[Path] = ()) -> Sandbox:
    """bwrap when present and working here (a trial run of `true`, and of
    `probe` if given, e.g. a runner's --probe to see the GPU still works in
    it); else a Sandbox with no bwrap whose note says why (the caller
    refuses to run student code with it unless told it is unsafe)."""
    if not want:
        return Sandbox(None, UNSAFE_NOTE)
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return Sandbox(None, "no isolation: bubblewrap (bwrap) is not installed")
    sb = Sandbox(bwrap, "sandboxed with bubblewrap: only the system, the toolchain and the student's own tree are "
                        "visible; no network; own PID namespace", hide=[h for h in hide if h.exists()],
                 extra_ro=tool_roots() + [Path(p) for p in extra_ro])
    trial = run_process(sb.prefix([]) + ["true"], timeout=30, env=scrubbed_env())
    if trial.rc != 0:
        why = (trial.stderr.strip().splitlines() or ["no message"])[-1]
        return Sandbox(None, f"no isolation: bwrap is installed but cannot run here ({why})")
    if probe:
        plain = run_process(probe, timeout=60, env=scrubbed_env())
        boxed = run_process(sb.prefix([], [Path(probe[0]).parent]) + probe, timeout=60, env=scrubbed_env())
        if plain.rc == 0 and boxed.rc != 0:
            return Sandbox(None, "no isolation: the GPU is not usable inside bwrap here")
    return sb


class Executor:
    """Runs commands for one submission (or the reference) under a sandbox.
    `runner` is injectable so tests can fake any command."""

    def __init__(self, sandbox: Sandbox, runner=run_process):
        self.sandbox = sandbox
        self.runner = runner

    def run(self, argv: list[str], *, cwd: Path, timeout: float | None, writable: list[Path],
            readable: list[Path] = (), env: dict[str, str] | None = None) -> ProcResult:
        full = self.sandbox.prefix(writable, readable) + [str(a) for a in argv]
        with shared_on(env):   # a share of the GPU it runs on, while it runs (gpushare.py, --per-gpu)
            r = self.runner(full, cwd=cwd, env=scrubbed_env(env), timeout=timeout)
        log = os.environ.get("CMLGRADE_PROCESS_LOG")
        if log:   # where a stage's time goes (docs/grading.md, "Grading a large class")
            line = f"{r.seconds:8.2f} s  rc {r.rc}  {cwd}: {' '.join(map(str, argv))[:400]}\n"
            with _LOG_LOCK, open(log, "a", encoding="utf-8") as f:
                f.write(line)
        return r

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
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

# What a student process may see of the environment.
ENV_KEEP = ("PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "LD_LIBRARY_PATH",
            "CML_NCU", "CUDAARCHS", "CMAKE_PREFIX_PATH", "PKG_CONFIG_PATH", "LANG", "TERM")


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


def run_process(argv: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
                timeout: float | None = None, max_output: int = 4 << 20) -> ProcResult:
    """Runs argv in its own session; on timeout kills the whole process
    group. Output is decoded leniently and cut at max_output bytes."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as e:
        return ProcResult(argv, 127, "", f"cannot run {argv[0]}: {e.strerror}\n", False, 0.0)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        out, err = proc.communicate()
    dec = lambda b: b[:max_output].decode("utf-8", "replace")  # noqa: E731
    return ProcResult(argv, None if timed_out else proc.returncode, dec(out), dec(err), timed_out,
                      time.monotonic() - start)


@dataclass
class Sandbox:
    """Describes what a student process may see. `hide` paths are covered by
    empty folders (or /dev/null for files); `writable` are bound read-write;
    everything else is read-only."""
    bwrap: str | None
    note: str                       # shown in every report
    hide: list[Path] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return self.bwrap is not None

    def prefix(self, writable: list[Path], readable: list[Path] = ()) -> list[str]:
        if not self.bwrap:
            return []
        args = [self.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                "--unshare-net", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--die-with-parent",
                "--new-session"]
        for dev in sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri/*")):
            args += ["--dev-bind", dev, dev]
        for h in self.hide:
            if h.is_dir():
                args += ["--tmpfs", str(h)]
            elif h.exists():
                args += ["--ro-bind", "/dev/null", str(h)]
        for r in readable:  # re-exposed inside a hidden folder (the student's own tree)
            args += ["--ro-bind", str(r), str(r)]
        for w in writable:
            args += ["--bind", str(w), str(w)]
        return args + ["--"]


def detect_sandbox(hide: list[Path], want: bool = True, probe: list[str] | None = None) -> Sandbox:
    """bwrap when present and working here (a trial run of `true`, and of
    `probe` if given, e.g. a runner's --probe to see the GPU still works in
    it); else the reason it is not used."""
    if not want:
        return Sandbox(None, "not sandboxed: turned off with --no-sandbox")
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return Sandbox(None, "not sandboxed: bubblewrap (bwrap) is not installed; student code ran with a "
                             "scrubbed environment only")
    sb = Sandbox(bwrap, "sandboxed with bubblewrap: no network, read-only system, solutions/ and other "
                        "students' files hidden", hide=[h for h in hide if h.exists()])
    trial = run_process(sb.prefix([]) + ["true"], timeout=30, env=scrubbed_env())
    if trial.rc != 0:
        why = (trial.stderr.strip().splitlines() or ["no message"])[-1]
        return Sandbox(None, f"not sandboxed: bwrap is installed but cannot run here ({why})")
    if probe:
        plain = run_process(probe, timeout=60, env=scrubbed_env())
        boxed = run_process(sb.prefix([]) + probe, timeout=60, env=scrubbed_env())
        if plain.rc == 0 and boxed.rc != 0:
            return Sandbox(None, "not sandboxed: the GPU is not usable inside bwrap here")
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
        return self.runner(full, cwd=cwd, env=scrubbed_env(env), timeout=timeout)

"""Running student code: every command goes through an Executor, which
scrubs the environment, puts the process in its own group (killed whole on
a timeout) and, when bubblewrap (`bwrap`) works here, wraps it in a sandbox:
the file system read-only, the student's own tree and one output folder
writable, the kit's solutions/, other students' trees, the submissions and
the rubric override hidden, no network, GPU device nodes passed through.
Without bwrap the run is "not sandboxed" and the reports say so.

This module is what a student process may see (the environment, the
sandbox) and the Executor; running the process itself (limits, output,
timeout, leftovers) is process.py's."""
from __future__ import annotations

import glob
import os
import re
import shutil
import threading
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from .gpushare import shared_on
from .process import ProcResult, run_process

# names this module defined before process.py was split from it: importable from here still
from .process import DATA_LIMIT, FSIZE_LIMIT, GRACE_S, become_subreaper, kill_all, kill_leftovers  # noqa: F401

# What a student process may see of the environment.
ENV_KEEP = ("PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "LD_LIBRARY_PATH",
            "CML_NCU", "CMAKE_PREFIX_PATH", "PKG_CONFIG_PATH", "LANG", "TERM")
# (not CUDAARCHS: the grader's builds take their architecture from --cuda-arch or the GPU, never the shell's)

_LOG_LOCK = threading.Lock()   # CMLGRADE_PROCESS_LOG's lines, one at a time
TRACE_LINE = re.compile(r"harness: +[0-9.]+ s  case [0-9]+: ")   # harness.h's hn_trace lines


def scrubbed_env(extra: dict[str, str] | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    base = os.environ if base is None else base
    env = {k: base[k] for k in ENV_KEEP if k in base}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env["HOME"] = "/tmp"
    env["LC_ALL"] = "C"
    env["CML_GPU_HELD"] = "1"   # the kit's programs take no share of the GPU: the grader shares it (gpuhold.py)
    env.update(extra or {})
    return env


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
            readable: list[Path] = (), env: dict[str, str] | None = None, shared: bool = True) -> ProcResult:
        """argv in the sandbox. While it runs it holds a share of its GPU
        (gpushare.py), unless `shared` is False: a reference's timing run
        started before its caller holds the GPU alone, that waits at its
        gate until then (reftime.LabTiming)."""
        full = self.sandbox.prefix(writable, readable) + [str(a) for a in argv]
        log = os.environ.get("CMLGRADE_PROCESS_LOG")
        run_env = scrubbed_env(env)
        if log:   # a harness then says when each part of each case ended (harness.h, hn_trace)
            run_env["HN_TRACE"] = "1"
        with shared_on(env) if shared else nullcontext():   # a share of its GPU while it runs (--per-gpu)
            r = self.runner(full, cwd=cwd, env=run_env, timeout=timeout)
        if log:   # where a stage's time goes (docs/grading.md, "Grading a large class")
            trace = "".join(f"          {t}\n" for t in (r.stderr or "").splitlines() if TRACE_LINE.match(t))
            line = f"{r.seconds:8.2f} s  rc {r.rc}  {cwd}: {' '.join(map(str, argv))[:400]}\n{trace}"
            with _LOG_LOCK, open(log, "a", encoding="utf-8") as f:
                f.write(line)
        return r

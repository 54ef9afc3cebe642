"""CMake: configure a tree once, then build one named target at a time, so
that a compile error costs only the targets that need the broken file.
Commands go through an Executor (sandboxed, injectable for tests)."""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .sandbox import Executor

MAX_MESSAGE_LINES = 40
_CLOCK = [time.monotonic]


def clock() -> float:
    """What the grader's stage seconds are measured with: wall time, or for
    the benchmark on a shared machine the CPU seconds of this thread's
    child processes (bench.py sets it)."""
    return _CLOCK[0]()


def set_clock(fn) -> None:
    _CLOCK[0] = fn


@contextmanager
def shared_lock(folder: Path | None):
    """An exclusive lock beside `folder` (FOLDER.lock, flock) while a build
    folder shared by several grader runs (a Slurm array's tasks) is built;
    nothing when folder is None."""
    if folder is None:
        yield
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.with_name(folder.name + ".lock"), "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@dataclass
class TargetBuild:
    target: str
    ok: bool
    seconds: float
    errors: list[str] = field(default_factory=list)   # the compiler's error lines, paths made relative
    log_tail: str = ""
    timed_out: bool = False


@dataclass
class TreeBuild:
    configured: bool
    configure_log: str = ""
    targets: dict[str, TargetBuild] = field(default_factory=dict)
    seconds: float = 0.0

    def ok(self, target: str) -> bool:
        t = self.targets.get(target)
        return bool(t and t.ok)


_ERROR_LINE = re.compile(r"(error|Error \d|undefined reference|fatal)", re.I)
# make's and ninja's own lines about a failed command (ninja's FAILED: line is followed by the command itself)
_NOISE = re.compile(r"^(gmake|make)(\[\d+\])?: \*\*\*|^\s*$|Error \d+$|^FAILED: |^ninja: (build stopped|error)")


def compiler_errors(log: str, tree: Path) -> list[str]:
    """The lines a student needs: the compiler's errors with a little context,
    tree paths shown relative to the kit root."""
    root = str(tree).rstrip("/") + "/"
    raw = log.splitlines()
    # ninja prints the failed command after its FAILED: line: the student's flags are the kit's, not news
    raw = [ln for i, ln in enumerate(raw) if not (i and raw[i - 1].startswith("FAILED: "))]
    lines = [ln.replace(root, "") for ln in raw]
    out: list[str] = []
    for i, ln in enumerate(lines):
        if _ERROR_LINE.search(ln) and not _NOISE.search(ln):
            for extra in lines[i:i + 3]:
                if extra not in out and not _NOISE.search(extra):
                    out.append(extra)
        if len(out) >= MAX_MESSAGE_LINES:
            break
    if not out:
        out = [ln for ln in lines if ln.strip()][-15:]
    return out[:MAX_MESSAGE_LINES]


def generator() -> str:
    """The build system the grader's trees use: Ninja where `ninja` is on
    the PATH (Debian's ninja-build; the GPU hosts' images have it), else
    make. Measured on 2 cores (nvcc 13, lab 06's reference file rebuilt in
    a configured grading tree, its three targets): 2.1 to 2.4 CPU seconds
    with make, 1.4 with Ninja, the same compiler commands; make's recursion
    (33 makes and 52 cmakes a build) is the difference.
    CMLGRADE_GENERATOR=make keeps make."""
    if os.environ.get("CMLGRADE_GENERATOR", "").strip().lower() == "make":
        return "Unix Makefiles"
    return "Ninja" if shutil.which("ninja") else "Unix Makefiles"


def _cached(build: Path, key: str) -> str | None:
    """A CMakeCache.txt entry's value (KEY:TYPE=value); None without it."""
    m = re.search(rf"^{re.escape(key)}:\w+=(.*)$", _cache(build), re.M)
    return m.group(1) if m else None


def native_args(build: Path) -> list[str]:
    """What `cmake --build` passes on to the build tool: to Ninja, keep each
    compile's depfile (-d keepdepfile). Ninja reads a depfile into its own
    log and deletes it; the object checks read it (trust.py: which headers
    the compiler read), as they do make's."""
    return ["--", "-d", "keepdepfile"] if _cached(build, "CMAKE_GENERATOR") == "Ninja" else []


def _forget_other_source(src: Path, build: Path) -> None:
    """A build folder made from another source tree (a reused --work folder),
    or by another build system (a --reference-build folder of an older
    grader: make's), would stop cmake: start it afresh."""
    if not (build / "CMakeCache.txt").is_file():
        return
    home, gen = _cached(build, "CMAKE_HOME_DIRECTORY"), _cached(build, "CMAKE_GENERATOR")
    if (home is not None and Path(home).resolve() != src.resolve()) or (gen is not None and gen != generator()):
        shutil.rmtree(build, ignore_errors=True)


def configure(exe: Executor, src: Path, build: Path, arch: str, timeout: float, writable: list[Path],
              edition: str = "") -> tuple[bool, str]:
    """cmake's configure; `edition`: the kit's KIT_EDITION ("grading" for a
    submission's tree, buildtree.make_student_tree; "": the kit's own, as
    its CMakeLists.txt says: the repository's developer kit, a release's
    student one)."""
    _forget_other_source(src, build)
    argv = ["cmake", "-S", str(src), "-B", str(build), "-G", generator(), "-DCMAKE_BUILD_TYPE=Release"]
    if edition:
        argv.append(f"-DKIT_EDITION={edition}")
    if arch:
        argv.append(f"-DCMAKE_CUDA_ARCHITECTURES={arch}")
    r = exe.run(argv, cwd=src, timeout=timeout, writable=writable)
    if r.timed_out:
        return False, f"cmake configure timed out after {timeout:.0f} s"
    return r.rc == 0, r.output


def build_target(exe: Executor, src: Path, build: Path, target: str | list[str], jobs: int, timeout: float,
                 writable: list[Path], shown_as=None) -> TargetBuild:
    """One target (or several, in one build: kitslots.build_lab). shown_as:
    (text -> text, tree): the build's output as if it had run in that tree
    (a slot of the prebuilt kit shows the submission's own paths)."""
    names = [target] if isinstance(target, str) else list(target)
    target = " ".join(names)
    r = exe.run(["cmake", "--build", str(build), "--target", *names, "-j", str(max(1, jobs)), *native_args(build)],
                cwd=src, timeout=timeout, writable=writable)
    if r.timed_out:
        return TargetBuild(target, False, r.seconds, [f"the build of {target} timed out after {timeout:.0f} s"],
                           timed_out=True)
    if r.rc == 0:
        return TargetBuild(target, True, r.seconds)
    out, shown = (shown_as[0](r.output), shown_as[1]) if shown_as else (r.output, src)
    return TargetBuild(target, False, r.seconds, compiler_errors(out, shown), out[-4000:])


def build_tree(exe: Executor, src: Path, build: Path, targets: list[str], *, arch: str, jobs: int,
               timeout: float, writable: list[Path], configured: bool = False, on_target=None,
               edition: str = "") -> TreeBuild:
    """Configures (unless already done) and builds each target in order.
    Never raises for a failed build: the result says what failed."""
    tb = TreeBuild(configured=configured)
    if not configured:
        ok, log = configure(exe, src, build, arch, timeout, writable, edition)
        tb.configured, tb.configure_log = ok, log[-6000:]
        if not ok:
            return tb
    for i, t in enumerate(targets, 1):
        if on_target:
            on_target(i, t)
        tb.targets[t] = build_target(exe, src, build, t, jobs, timeout, writable)
        tb.seconds += tb.targets[t].seconds
    return tb



def _cache(build: Path) -> str:
    cache = build / "CMakeCache.txt"
    return cache.read_text(encoding="utf-8", errors="replace") if cache.is_file() else ""


def builds_cuda(build: Path) -> bool:
    """The configured tree builds the labs with nvcc (check_language(CUDA)
    leaves CMAKE_CUDA_COMPILER=NOTFOUND in the cache where none is found;
    KIT_CUDA=OFF leaves it out)."""
    m = re.search(r"^CMAKE_CUDA_COMPILER:\w+=(\S+)", _cache(build), re.M)
    return m is not None and not m.group(1).endswith("NOTFOUND")


def builds_cpu_path(build: Path) -> bool:
    """The configured tree builds the labs on the CPU path (common/cpu)."""
    return "KIT_CPU:BOOL=ON" in _cache(build)


NO_CUDA_COMPILER = ("the CPU path (GPUs are listed here, but no CUDA compiler (nvcc) is on the PATH to build the "
                    "labs for them): the tests, the kit-only checks and the CPU path's bounds and race checks ran on "
                    "the CPU; compute-sanitizer, Nsight Compute counters and timings need the CUDA build")


def cpu_path_instead(exe: Executor, src: Path, build: Path, arch: str, timeout: float) -> str:
    """Where GPUs are listed (CUDA_VISIBLE_DEVICES: a Slurm task's --gres)
    but the kit configures without a CUDA compiler, nothing can be built for
    them: the labs' CUDA targets do not exist in that tree ("No rule to make
    target 'test_banks_ref'"), and the CPU path is the only way to grade.
    Configures `build` and returns why the CPU path is taken (a note for
    every report), or "" where the CUDA build is there (or the kit has no
    CPU path, or does not configure: the build that follows says why)."""
    ok, _ = configure(exe, src, build, arch, timeout, [])
    return NO_CUDA_COMPILER if ok and not builds_cuda(build) and builds_cpu_path(build) else ""

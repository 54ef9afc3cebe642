"""Checks on what a student's file compiled to, before any of it runs.

A student object is linked into the kit's test binaries and runners, so
anything it defines or references becomes part of processes the grader
starts. This module reads the compiled objects (readelf, objdump; cuobjdump
for the device code of the CUDA build) and refuses only what could forge a
verdict or leave the student's role (docs/grading.md §8); everything else a
student may write is accepted: the C and C++ standard libraries' computing
functions, helpers of their own, templates, lambdas, device printf.

- defined symbols: refused are main; a name of the kit's own code (common/'s
  cml_*, Criterion's criterion_*/cr_*, or any global the kit's archives
  define); a global function or variable of the C or C++ runtime libraries
  (a definition would replace the real one for the whole program); operator
  new/delete; anything in the cub:: or thrust:: namespaces. A student's own
  global helpers and variables under other names are theirs.
- sections: no constructors or destructors (.ctors, .dtors, .fini_array,
  .preinit_array; .init_array may hold the CUDA compiler's registration
  function only).
- undefined references: refused are the capabilities in REFUSED_CALLS (files,
  processes and threads, signals, sockets and shared memory, loading code,
  changing the environment, leaving the program, raw system calls), the
  kit's own functions, libraries a lab forbids (cuBLAS, CUB, Thrust, ...),
  the CUDA driver's entry points, __managed__ memory, and, in labs whose
  kit-only checker judges the outputs, copies to or from the host in a
  launcher; everything the C and C++ runtime libraries or the CUDA runtime
  export is accepted (the set is read from the libraries the build links,
  not kept by hand); a name from anywhere else is refused.
- includes (the compiler's dependency file): only the student's lab, the
  kit's public headers, the build's generated headers and system or CUDA
  headers.
- device code (CUDA build with cuobjdump): no kernel of CUB or Thrust; the
  SASS of every kernel is kept for the rubric's instruction checks.

Each refusal is said once (the CUDA build's and the CPU path's objects of a
file give the same lines), names the symbol and the function that uses it,
and says what to change. Nothing here runs student code; the tools only
read files."""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

# What the C and C++ runtime libraries export (runtime_exports) is allowed unless it matches one of these:
# (regex over the plain or mangled name, what it is, what to do instead). An optional leading __ and the
# fortified _chk/_2 forms are covered.
_C = r"^_*(?:{})(?:64)?(?:_chk|_2|_unlocked)?$"
REFUSED_CALLS: list[tuple[re.Pattern, str, str]] = [(re.compile(p), what, fix) for p, what, fix in [
    (_C.format("dlopen|dlmopen|dlsym|dlvsym|dlinfo|dladdr1?|dl_iterate_phdr|libc_dlopen_mode|libc_dlsym"),
     "loads other code", "link nothing at run time: write the step's code in your file"),
    (_C.format("open|openat|creat|fopen|freopen|fdopen|fmemopen|open_memstream|tmpfile|tmpnam(?:_r)?|tempnam|"
               "mkstemps?|mkostemps?|mkdtemp|opendir|fdopendir|readdir(?:_r)?|scandir(?:at)?|glob|nftw|ftw|"
               "x?stat|lstat|fstat|fstatat|[fl]?xstat|statx|statv?fs|fstatv?fs|access|faccessat|euidaccess|eaccess|"
               "unlink|unlinkat|remove|rename|renameat2?|mkdir|mkdirat|rmdir|chdir|fchdir|chroot|chmod|fchmod|"
               "fchmodat|chown|fchown|lchown|fchownat|link|linkat|symlink|symlinkat|readlink|readlinkat|realpath|"
               "truncate|ftruncate|read|pread|readv|preadv2?|write|pwrite|writev|pwritev2?|lseek|dup[23]?|"
               "close|close_range|fcntl|ioctl|pipe2?|mkfifo|mkfifoat|mknod|mknodat|mmap|munmap|mremap|mprotect|"
               "pkey_mprotect|memfd_create|sendfile|splice|vmsplice|tee|copy_file_range|fsync|fdatasync|sync|"
               "syncfs|flock|lockf|utimes?|futimens|utimensat|inotify_\\w+|fanotify_\\w+|posix_fadvise|"
               "fallocate|posix_fallocate|mount|umount2?|setmntent|getmntent|shm_open|shm_unlink|shmget|shmat|"
               "shmdt|shmctl|mq_\\w+|semget|semop|semctl|msgget|msgsnd|msgrcv|msgctl|process_vm_\\w+"),
     "file or shared-memory access",
     "student code reads its inputs from the arguments and leaves its results in device memory; print with "
     "printf to see values"),
    (r"St1[34]basic_[io]?fstream|St13basic_filebuf|St10filesystem|St25__basic_file",
     "file access through C++ file streams or std::filesystem",
     "student code reads its inputs from the arguments; print with printf or std::cout to see values"),
    (_C.format("fork|vfork|_Fork|clone3?|execve|execveat|execv|execvp|execvpe|execl|execlp|execle|fexecve|"
               "system|popen|pclose|posix_spawnp?|wait|waitpid|waitid|wait[34]|kill|killpg|tgkill|tkill|"
               "sigqueue|raise|ptrace|setsid|setpgid|setpgrp|daemon|prctl|arch_prctl|setrlimit|prlimit|"
               "setpriority|nice|unshare|setns|personality|seccomp|set[res]*[ug]id|setgroups|capset|"
               "pthread_create|pthread_atfork|pthread_kill|pthread_sigqueue|pthread_detach|thrd_create|"
               "signal|sigaction|sigset|sysv_signal|bsd_signal|ssignal|sigprocmask|pthread_sigmask|alarm|"
               "ualarm|setitimer|timer_create|timer_settime|timerfd_\\w+|signalfd|eventfd|syscall|"
               "setcontext|swapcontext"),
     "process, thread or signal control",
     "student code runs only inside the launch it was called for: no processes, threads or signals"),
    (r"St6thread|St6system|NSt3jthread", "a thread of its own (std::thread)",
     "student code runs only inside the launch it was called for: no threads"),
    (_C.format("socket|socketpair|connect|bind|listen|accept4?|send|sendto|sendmsg|sendmmsg|recv|recvfrom|"
               "recvmsg|recvmmsg|getaddrinfo|gethostbyname\\w*|getsockopt|setsockopt|shutdown"),
     "network access", "student code talks to no other process"),
    (_C.format("setenv|unsetenv|putenv|clearenv"),
     "changes the environment", "the kit reads its settings from the environment: leave it as it is"),
    (_C.format("exit|_exit|_Exit|quick_exit|at_quick_exit|on_exit"),
     "leaves the program", "return an error code (cudaError_t) from the interface's function instead"),
]]
# Plain names that resolve outside the libraries read by runtime_exports: the linker's and the start files'.
LINKER_NAMES = frozenset("_GLOBAL_OFFSET_TABLE_ __dso_handle __tls_get_addr _DYNAMIC __ehdr_start".split())
# Data of the C library a student's global variable must not replace (runtime_exports lists its functions
# and variables too; these are also refused where that list cannot be read).
LIBC_DATA = frozenset("""stdin stdout stderr environ __environ optarg optind opterr optopt errno
program_invocation_name program_invocation_short_name timezone daylight tzname signgam""".split())
# CUDA runtime functions that hand out other code (driver entry points).
REFUSED_CUDA = re.compile(r"^cuda(GetDriverEntryPoint\w*|GetExportTable|GetProcAddress)$")
# Memory the host can read, declared by the student's file: a __managed__ variable (registered by the CUDA
# compiler's code; on the CPU path cuda_runtime.h puts it in a section of its own).
MANAGED_REGISTRATION = "__cudaRegisterManagedVar"
MANAGED_SECTION = ".cml_cpu_managed"
# A launcher works on device data and leaves it there: a copy to or from the
# host, or memory the host can read, is how a sum or a transpose would be done
# on the CPU instead (no reference uses them; lab 02 fills __constant__ with
# cudaMemcpyToSymbol, which stays allowed).
HOST_DATA = re.compile(r"^cuda(Memcpy|MemcpyAsync|Memcpy2D\w*|Memcpy3D\w*|MemcpyFromSymbol\w*|MemcpyPeer\w*|"
                       r"MemcpyFromArray\w*|MemcpyToArray\w*|MemcpyBatch\w*|MallocManaged|MallocHost|HostAlloc|"
                       r"HostRegister|HostGetDevicePointer|LaunchHostFunc|StreamAddCallback|MemPrefetchAsync)$")
# What a compiler's own load-time function may refer to: <iostream>'s std::ios_base::Init object (GCC < 13
# makes one per file that includes it), the CPU path's race-check start, the file's own static data.
BENIGN_INIT_REFS = frozenset("""_ZNSt8ios_base4InitC1Ev _ZNSt8ios_base4InitD1Ev __cxa_atexit __dso_handle
__tsan_init .bss .data""".split())
# Only the CUDA compiler's registration function may run at load time and
# register an exit handler.
REGISTRATION = re.compile(r"__sti____cudaRegisterAll|__nv_cudaEntityRegisterCallback|__cudaUnregisterBinaryUtil")
KIT_PREFIX = re.compile(r"^(cml_|criterion_|cr_|__wrap_|__real_)")
# The CPU path's runtime (cml_cpu_*) is what translated student code calls (launches, barriers, warp
# operations), except these, refused with why: the bank counts a lab's counters read, and the doors that lift
# the runtime's guard on device memory for its own copies (host code calling them would read a kernel's
# data on the host: the CPU path's __managed__).
_DOOR = ("opens device memory to host code: the CPU path's runtime does that for its own copies only",
         "read and write device memory in kernels")
_OWN = ("the kit's own code", "write the step yourself")
# (the runtime's bank model is lab 01's steps 1-3 written by the kit: a model file may not answer with it)
CPU_RUNTIME_REFUSED = {"cml_cpu_bank_totals": _OWN, "cml_cpu_conflict_degree": _OWN, "cml_cpu_set_bank_model": _OWN,
                       "cml_cpu_device_open": _DOOR, "cml_cpu_device_close": _DOOR}
CTOR_SECTIONS = (".ctors", ".dtors", ".fini_array", ".preinit_array")
LIBRARY_NAMESPACE = re.compile(r"^_ZN\d*(3cub|6thrust)|CUB_\d+_|THRUST_\d+_")
# Libraries a lab's student code must not call (the technique is the lab's to write), by their symbols;
# NVTX comes in with CUB and Thrust.
LIBRARY_CALL = re.compile(r"^(cublas|cusparse|cufft|curand|cusolver|cutensor|nvtx|_ZN\d*(3cub|6thrust|4nvtx3))",
                          re.I)
NEW_DELETE = re.compile(r"^_Z(nw|na|dl|da)")
# placement new and delete: inline in <new>, emitted (weak) by some compilers; the standard lets no one replace them
PLACEMENT_NEW = frozenset("_ZnwmPv _ZnamPv _ZdlPvS_ _ZdaPvS_".split())
# Headers of the libraries a lab's student code must not use (CUB, Thrust, cuBLAS ...), as compiled.
LIBRARY_HEADER = re.compile(r"/(cub|thrust|cublas\w*|cusparse\w*|cufft\w*|cutlass|cute)(/|\.h)")
# An instruction that enters the kernel without the C library (inline assembly).
SYSCALL = re.compile(r"^(syscall|sysenter|int\s+\$0x80)\b")


@dataclass
class ObjectReport:
    checked: bool = False               # an object was found and read
    refused: list[str] = field(default_factory=list)   # why the object may not run (empty: fine)
    note: str = ""                      # why it was not checked
    sass: dict[str, str] = field(default_factory=dict)  # device function (mangled) -> its SASS
    sass_note: str = ""                 # "" when SASS was read, else why not (e.g. no CUDA build)

    def summary(self) -> str:
        return "; ".join(self.refused[:4]) + (f" (and {len(self.refused) - 4} more)" if len(self.refused) > 4 else "")


def _run(argv: list[str], timeout: float = 60) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ObjectToolError(f"{argv[0]}: {e}") from e
    if r.returncode != 0:
        raise ObjectToolError(f"{Path(argv[0]).name} {argv[-1]}: exit {r.returncode}: "
                              f"{r.stderr.decode('utf-8', 'replace')[-300:]}")
    return r.stdout.decode("utf-8", "replace")


class ObjectToolError(Exception):
    pass


def find_binutils() -> dict[str, str] | None:
    tools = {t: shutil.which(t) for t in ("readelf", "objdump")}
    return tools if all(tools.values()) else None


def find_cuobjdump() -> str | None:
    """cuobjdump from the PATH, the CUDA toolkit, or the pip packages
    nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm (it needs nvdisasm)."""
    cands = [shutil.which("cuobjdump")]
    for base in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if base:
            cands.append(str(Path(base) / "bin" / "cuobjdump"))
    for sp in sys.path:
        cands += [str(p) for p in Path(sp).glob("nvidia/cu*/bin/cuobjdump")] if sp and Path(sp).is_dir() else []
    for c in cands:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            nvdis = Path(c).parent / "nvdisasm"
            if shutil.which("nvdisasm") or nvdis.is_file():
                return c
    return None


def demangle(names: list[str]) -> dict[str, str]:
    filt = shutil.which("c++filt")
    if not filt or not names:
        return {n: n for n in names}
    try:
        r = subprocess.run([filt], input="\n".join(names).encode(), capture_output=True, timeout=30)
        out = r.stdout.decode("utf-8", "replace").splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return {n: n for n in names}
    return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}


@dataclass
class _Sym:
    name: str
    kind: str      # FUNC, OBJECT, NOTYPE, SECTION ...
    bind: str      # LOCAL, GLOBAL, WEAK, UNIQUE
    ndx: str       # section index or UND/ABS/COM
    value: int


def read_symbols(readelf: str, obj: Path) -> list[_Sym]:
    syms = []
    for ln in _run([readelf, "-s", "-W", str(obj)]).splitlines():
        f = ln.split()
        if len(f) < 8 or not f[0].rstrip(":").isdigit():
            continue
        try:
            value = int(f[1], 16)
        except ValueError:
            continue
        syms.append(_Sym(f[7], f[3], f[4], f[6], value))
    return syms


def read_sections(readelf: str, obj: Path) -> dict[str, str]:
    """section name -> index"""
    out = {}
    for m in re.finditer(r"^\s*\[\s*(\d+)\]\s+(\S+)", _run([readelf, "-S", "-W", str(obj)]), re.M):
        out[m.group(2)] = m.group(1)
    return out


def init_targets(readelf: str, obj: Path, sections: dict[str, str], syms: list[_Sym]) -> list[str]:
    """The functions .init_array* entries point at (a section-relative
    relocation is resolved to the function at that offset)."""
    text = _run([readelf, "-r", "-W", str(obj)])
    out = []
    for block in re.split(r"\n(?=Relocation section)", text):
        m = re.match(r"Relocation section '\.rela?(\.init_array[^']*)'", block)
        if not m:
            continue
        for ln in block.splitlines()[2:]:
            f = ln.split()
            if len(f) < 5:
                continue
            target, addend = f[4], int(f[6], 16) if len(f) > 6 and f[5] == "+" else 0
            if target in sections:
                idx = sections[target]
                named = [s.name for s in syms if s.ndx == idx and s.kind == "FUNC" and s.value == addend]
                out.append(named[0] if named else f"{target}+{addend:#x}")
            else:
                out.append(target)
    return out


@dataclass
class Disassembly:
    refs: dict[str, set[str]]               # function -> the symbols its code refers to
    code: dict[str, list[str]]              # function -> its instructions
    calls: dict[str, list[tuple[str, list[str]]]]   # function -> (callee, the instructions before the call)


def disassemble(objdump: str, obj: Path) -> Disassembly:
    """Which function refers to which symbol (the relocations objdump shows
    inside each function's code), each function's instructions, and each
    call to a symbol with the instructions that set up its arguments."""
    dis = Disassembly({}, {}, {})
    here = "?"
    for ln in _run([objdump, "-dr", "-w", "--no-show-raw-insn", str(obj)], timeout=120).splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", ln)
        if m:
            here = m.group(1)
            continue
        targets = [r.group(1) for r in re.finditer(r"R_X86_64_\w+\s+([^\s+-]+)", ln)]
        dis.refs.setdefault(here, set()).update(targets) if targets else None
        ins = re.match(r"^\s+[0-9a-f]+:\s+(\S.*?)(\s+#.*)?$", ln.split("\t")[0] + " " + " ".join(ln.split("\t")[1:2]))
        if ins and "nop" not in ins.group(1):
            body = dis.code.setdefault(here, [])
            if targets and ins.group(1).startswith(("call", "jmp")):
                dis.calls.setdefault(here, []).append((targets[0], body[-12:]))
            body.append(ins.group(1))
    return dis


# cudaMemcpy(dst, src, bytes, kind) and cudaMemcpyAsync(..., kind, stream): the kind is the 4th argument (%ecx)
DEVICE_COPIES = frozenset({"cudaMemcpy", "cudaMemcpyAsync"})
KIND_DEVICE_TO_DEVICE = 3


def device_to_device(before: list[str]) -> bool:
    """Whether the instructions before a cudaMemcpy call set its kind
    (%ecx, the 4th argument on x86-64) to cudaMemcpyDeviceToDevice: the
    last instruction that writes %ecx/%rcx must load the constant 3 (any
    other way of setting it, cudaMemcpyDefault included, cannot be told
    and counts as a copy to or from the host)."""
    for ins in reversed(before):
        op, _, args = ins.partition(" ")
        dest = args.strip().rsplit(",", 1)[-1].strip()
        if dest in ("%ecx", "%rcx", "%cx", "%cl"):
            return op.startswith("mov") and args.strip().startswith(f"${KIND_DEVICE_TO_DEVICE:#x},")
        if op.startswith("call"):
            return False   # %ecx does not survive a call
    return False


def _device_stub(code: list[str]) -> bool:
    """The host body the CUDA compiler gives a __device__ function: exit(1)
    and nothing else."""
    # host compilers that default to -fcf-protection (Ubuntu's gcc) open it with endbr64, and some
    # align the stack with a push/pop pair: up to 8 instructions, one call, the last
    body = [c for c in code if not c.startswith(("endbr64", "nop"))]
    return (2 <= len(body) <= 8 and any("$0x1," in c for c in body) and body[-1].startswith("call")
            and sum(c.startswith("call") for c in body) == 1
            and not any(c.startswith(("jmp", "ret", "j")) for c in body))


@functools.lru_cache(maxsize=None)
def runtime_exports() -> tuple[frozenset[str], frozenset[str]]:
    """(functions, variables) the C and C++ runtime libraries export: libc,
    libm, libstdc++, libgcc and the dynamic loader as the host compiler finds
    them (its -print-file-name), so the set is the machine's own, not a list
    kept by hand. Empty where no compiler or readelf is found."""
    funcs: set[str] = set()
    data: set[str] = set()
    cc = shutil.which("c++") or shutil.which("g++") or shutil.which("cc")
    readelf, nm = shutil.which("readelf"), shutil.which("nm")
    if not cc or not readelf:
        return frozenset(), frozenset()

    def where(arg: str) -> Path | None:
        try:
            out = subprocess.run([cc, arg], capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return None
        return Path(out) if out and Path(out).is_file() else None

    for lib in ("libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libmvec.so.1",
                "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"):
        path = where(f"-print-file-name={lib}")
        if path is None:
            continue
        try:
            text = _run([readelf, "--dyn-syms", "-W", str(path)])
        except ObjectToolError:
            continue
        for ln in text.splitlines():
            f = ln.split()
            if len(f) >= 8 and f[0].rstrip(":").isdigit() and f[6] != "UND":
                (data if f[3] in ("OBJECT", "TLS") else funcs).add(f[7].split("@")[0])
    libgcc = where("-print-libgcc-file-name")
    if libgcc is not None and nm:
        try:
            for ln in _run([nm, "-g", "--defined-only", str(libgcc)]).splitlines():
                f = ln.split()
                if len(f) == 3:
                    funcs.add(f[2])
        except ObjectToolError:
            pass
    return frozenset(funcs), frozenset(data)


def kit_symbols(build_dir: Path | None) -> frozenset[str]:
    """The globals the kit's own code defines in a build folder (its static
    archives: common/'s cml and the CPU path's runtime, each lab's host code
    and library anchors; the kit-only harnesses' objects). A student object
    may neither define these (it would replace the kit's) nor call them."""
    nm = shutil.which("nm")
    if build_dir is None or nm is None or not build_dir.is_dir():
        return frozenset()
    files = [p for p in build_dir.rglob("*.a") if "CMakeFiles" not in p.parts]
    files += sorted((build_dir / "CMakeFiles").glob("*_harness*.dir/**/*.o"))
    if not files:
        return frozenset()
    out = subprocess.run([nm, "-g", "--defined-only", *map(str, files)], capture_output=True, text=True,
                         timeout=120).stdout
    # strong definitions only: the weak ones are template instantiations any C++ object may share
    return frozenset(f[2] for f in (ln.split() for ln in out.splitlines()) if len(f) == 3 and f[1] in "TDBRGSC")


def _refused_call(name: str) -> tuple[str, str] | None:
    """(what it is, what to do instead) when a referenced name is a
    capability student code may not use, else None."""
    for pat, what, fix in REFUSED_CALLS:
        if pat.search(name):
            return what, fix
    return None


@dataclass
class _Context:
    """What one lab's checks know besides the object: the interface, the
    student's own definitions across the lab's objects, the kit's symbols
    and the runtime libraries' exports."""
    interface: set[str]
    own: frozenset[str] = frozenset()
    kit: frozenset[str] = frozenset()
    lib_funcs: frozenset[str] = frozenset()
    lib_data: frozenset[str] = frozenset()


def check_host_object(obj: Path, interface: set[str], tools: dict[str, str], cpu_path: bool = False,
                      host_data: bool = True, host_copies_in: frozenset[str] = frozenset(),
                      ctx: _Context | None = None) -> list[str]:
    """The reasons to refuse one host object (empty: none), each naming the
    symbol, where it is used and what to change. host_copies_in: the
    interface functions that may copy to or from the host even where
    host_data is False (lab 02's uploads of host tables). ctx: the lab's
    context (check_objects makes it; without one, the runtime libraries'
    exports and no kit symbols)."""
    if ctx is None:
        funcs, data = runtime_exports()
        ctx = _Context(interface, lib_funcs=funcs, lib_data=data)
    name = source_name(obj)
    syms = read_symbols(tools["readelf"], obj)
    sections = read_sections(tools["readelf"], obj)
    why: list[str] = []
    dem = demangle(sorted({s.name for s in syms if s.name.startswith("_Z")}))
    rename = "rename it or make it static"
    for s in syms:
        if s.ndx == "UND" or s.bind == "LOCAL" or s.kind in ("SECTION", "FILE") or not s.name:
            continue
        n = s.name
        d = dem.get(n, n)
        if n == "main" or n.startswith("main@"):
            why.append("defines main (the kit's programs have their own): remove it")
        elif n.startswith(("__cuda", "__nv_", "__fatbin", "DW.ref.")):
            continue   # the CUDA compiler's registration code, the C++ compiler's personality reference
        elif KIT_PREFIX.match(n) or (n in ctx.kit and s.bind == "GLOBAL" and n not in ctx.interface):
            why.append(f"defines {n}, a symbol of the kit or of Criterion (yours would replace it): {rename}")
        elif NEW_DELETE.match(n) and n not in PLACEMENT_NEW:
            why.append(f"defines {d} (replaces the program's allocator): remove it")
        elif LIBRARY_NAMESPACE.search(n):
            why.append(f"defines {short_name(d, 80)} (CUB/Thrust code: write the technique yourself)")
        elif re.match(r"^cuda[A-Z]", n) and n not in ctx.interface:
            why.append(f"defines {n}, a function of the CUDA runtime (yours would replace it): {rename}")
        elif s.kind in ("OBJECT", "TLS") and s.bind != "WEAK":
            if n in LIBC_DATA or n in ctx.lib_data:
                why.append(f"defines {n}, a variable of the C library (yours would replace it): {rename}")
        elif s.bind == "GLOBAL" and n in ctx.lib_funcs and n not in ctx.interface:
            why.append(f"defines {short_name(d, 80)}, a function of the C or C++ library (yours would replace it for the "
                       f"whole program): {rename}")
    for sec in sections:
        if sec.startswith(CTOR_SECTIONS):
            why.append(f"has a {sec} section (code that runs before or after main): remove the constructor, "
                       f"destructor or static object with one")
        elif sec.startswith(MANAGED_SECTION):
            why.append("declares __managed__ memory, which host code can read: keep a step's data in the device "
                       "buffers the launcher is given")
    inits = init_targets(tools["readelf"], obj, sections, syms)
    undefined = sorted({s.name for s in syms if s.ndx == "UND" and s.name})
    dis = disassemble(tools["objdump"], obj)
    refs, code = dis.refs, dis.code
    for f, ins in code.items():
        if any(SYSCALL.match(i) for i in ins):
            why.append(f"makes system calls directly in {short_name(dem.get(f, f))} (inline assembly): remove them")
    def benign_init(f: str) -> bool:
        """A load-time function the compilers make that does nothing of the
        student's: <iostream>'s stream setup (GCC before 13), the CPU path's
        race-check start."""
        return "sub_I_" in f and refs.get(f, set()) <= BENIGN_INIT_REFS

    for t in inits:
        if not REGISTRATION.search(t) and not benign_init(t):
            why.append(f"runs {dem.get(t, t)} at program start (a constructor, or a global object whose "
                       f"constructor calls code): initialize it inside your launcher instead")

    def users_of(u: str, exempt=lambda f: False) -> list[str]:
        return sorted(f for f, rs in refs.items() if u in rs and not exempt(f))

    def where(users: list[str]) -> str:
        shown = [short_name(dem.get(f, f)) for f in users[:2]]
        return f" in {', '.join(shown)}" + (f" (and {len(users) - 2} more)" if len(users) > 2 else "") if users else ""

    for u in undefined:
        d = short_name(dem.get(u, u))
        if u == "exit":  # only the compiler's stub of a __device__ function, exit(1)
            users = users_of(u, lambda f: _device_stub(code.get(f, [])))
            if users or not refs:
                why.append(f"calls exit{where(users) or ' in its data'} (leaves the program): return an error code "
                           f"(cudaError_t) from the interface's function instead")
            continue
        if u in ("atexit", "__cxa_atexit", "__cxa_thread_atexit", "__cxa_thread_atexit_impl"):
            users = users_of(u, lambda f: bool(REGISTRATION.search(f)) or benign_init(f))
            if users or not refs:
                why.append(f"registers an exit handler ({u}){where(users) or ' in its data'} (code that runs after "
                           f"main): remove it, and any static object with a destructor")
            continue
        if u == MANAGED_REGISTRATION:
            why.append("declares __managed__ memory, which host code can read: keep a step's data in the device "
                       "buffers the launcher is given")
            continue
        if cpu_path and u in CPU_RUNTIME_REFUSED:
            what, change = CPU_RUNTIME_REFUSED[u]
            why.append(f"calls {u}{where(users_of(u))} ({what}): {change}")
            continue
        if KIT_PREFIX.match(u) and not (cpu_path and u.startswith("cml_cpu_")):
            why.append(f"calls {u}{where(users_of(u))} (the kit's own code): write the step yourself")
            continue
        if cpu_path and (u.startswith("__tsan_") or u.startswith("cml_cpu_")):
            continue  # the CPU path's runtime: launches, barriers, warp operations, the race check's hooks
        if not host_data and HOST_DATA.match(u):
            # a device-to-device cudaMemcpy (the kind a constant 3 at every call) keeps the work on the device
            d2d = (lambda f: u in DEVICE_COPIES and all(device_to_device(b) for c, b in dis.calls.get(f, []) if c == u)
                   and any(c == u for c, _ in dis.calls.get(f, [])))
            users = users_of(u, lambda f: f in host_copies_in or d2d(f))
            if users or not refs:
                why.append(f"calls {u}{where(users)} (moves data to or from the host: a launcher's work stays on the "
                           f"device" + (f"; only {', '.join(sorted(host_copies_in))} may copy host data"
                                        if host_copies_in else "") + ")")
            continue
        if REFUSED_CUDA.match(u):
            why.append(f"calls {u}{where(users_of(u))} (hands out the CUDA driver's code): use the runtime API")
            continue
        if u.startswith(("cuda", "__cuda")):
            continue   # the CUDA runtime (the CPU path's runtime defines the same names)
        bad = _refused_call(u)
        if bad is not None:
            why.append(f"calls {d}{where(users_of(u))} ({bad[0]}): {bad[1]}")
            continue
        if LIBRARY_CALL.search(u) or LIBRARY_NAMESPACE.search(u):
            why.append(f"calls {d}{where(users_of(u))} (a library the lab asks you not to use: cuBLAS, CUB, "
                       f"Thrust or NVTX): write the technique yourself")
            continue
        if u in ctx.kit and u not in ctx.interface:
            why.append(f"calls {u}{where(users_of(u))} (the kit's own code): write the step yourself")
            continue
        if u in ctx.lib_funcs or u in ctx.lib_data or u in LINKER_NAMES or u in ctx.own or u in ctx.interface:
            continue   # the C and C++ runtime libraries, the student's own code
        why.append(f"calls {d}{where(users_of(u))}, which is neither in the C or C++ standard library nor in "
                   f"the CUDA runtime: write it yourself")
    return [f"{name}: {w}" for w in dict.fromkeys(why)]


def short_name(demangled: str, width: int = 60) -> str:
    """A function's name for a message: without its parameter list, at most
    `width` characters."""
    d = demangled.split("(", 1)[0] if not demangled.startswith("(") else demangled
    return d if len(d) <= width else d[:width - 3] + "..."


def source_name(obj: Path) -> str:
    """The student's file an object was compiled from, as both builds name
    it: reduction.cu for reduction.cu.o and for the CPU path's translation
    (labtool cpu-translate names it reduction_<8 hex digits>.cpp)."""
    return re.sub(r"_[0-9a-f]{8}\.cpp$", ".cu", obj.name.removesuffix(".o"))


def check_includes(depfile: Path, allowed_roots: list[Path]) -> list[str]:
    """Every file the compiler read for the object must be under one of the
    allowed roots (the student's lab, the kit's public headers, the build's
    generated headers, the system's and CUDA's include folders)."""
    if not depfile.is_file():
        return []
    text = depfile.read_text(encoding="utf-8", errors="replace").replace("\\\n", " ")
    _, _, deps = text.partition(": ")
    roots = [str(r.resolve()).rstrip("/") + "/" for r in allowed_roots]
    bad, lib = [], []
    for dep in deps.split():
        p = str(Path(dep).resolve()) if dep.startswith("/") else dep
        if not dep.startswith("/") or not any(p.startswith(r) for r in roots):
            bad.append(dep)
        if LIBRARY_HEADER.search(p):
            lib.append(dep)
    name = source_name(Path(depfile.name.removesuffix(".d")))
    return ([f"{name}: includes {b}, outside the lab and the kit's public headers" for b in bad[:3]]
            + [f"{name}: includes a library's header ({b}): write the technique yourself" for b in lib[:1]])


def read_sass(cuobjdump: str, obj: Path) -> dict[str, str]:
    """Device function name (mangled) -> its SASS text."""
    try:
        text = _run([cuobjdump, "-sass", str(obj)], timeout=120)
    except ObjectToolError as e:
        if "does not contain device code" in str(e):   # a host-only object (lab 01's bank_model.c): no SASS
            return {}
        raise
    out: dict[str, str] = {}
    parts = re.split(r"^\s*Function : (\S+)\s*$", text, flags=re.M)
    for i in range(1, len(parts) - 1, 2):
        out[parts[i]] = out.get(parts[i], "") + parts[i + 1]
    return out


def check_objects(objects: list[Path], depfiles: list[Path], interface: set[str], allowed_roots: list[Path],
                  cpu_objects: set[Path] = frozenset(), host_data: bool = True,
                  host_copies_in: frozenset[str] = frozenset()) -> ObjectReport:
    """cpu_objects: those of `objects` built on the CPU path (no device code);
    host_data False: copies to or from the host are refused (a lab whose
    kit-only checker would otherwise accept work done on the CPU)."""
    rep = ObjectReport()
    tools = find_binutils()
    if tools is None:
        rep.note = "not checked: readelf/objdump (binutils) are not installed"
        return rep
    if not objects:
        rep.note = "not checked: no compiled object of the student's files was found"
        return rep
    try:
        funcs, data = runtime_exports()
        if not funcs:   # nothing to tell the C library from any other code: fail closed, as without binutils
            rep.note = "not checked: the C and C++ runtime libraries' exports could not be read (no host compiler?)"
            return rep
        own = frozenset(s.name for o in objects for s in read_symbols(tools["readelf"], o)
                        if s.ndx != "UND" and s.bind != "LOCAL" and s.name)
        build = next((p.parent for p in objects[0].parents if p.name == "CMakeFiles"), None)
        ctx = _Context(interface, own, kit_symbols(build), funcs, data)
        # the library and include lines first: they say best what a refused file does
        for d in depfiles:
            rep.refused += check_includes(d, allowed_roots)
        for obj in objects:
            rep.refused += check_host_object(obj, interface, tools, obj in cpu_objects, host_data, host_copies_in,
                                             ctx)
    except (ObjectToolError, subprocess.TimeoutExpired) as e:
        rep.refused.append(f"the object could not be read ({e})")
    # the CUDA build's and the CPU path's objects of one file say the same thing once
    rep.refused = list(dict.fromkeys(rep.refused))
    rep.checked = True
    device = [o for o in objects if o not in cpu_objects]
    if not device:
        rep.sass_note = "not checked (no CUDA build: the CPU path)"
        return rep
    cu = find_cuobjdump()
    if cu is None:
        rep.sass_note = "not checked (no cuobjdump: install the CUDA toolkit's cuobjdump and nvdisasm)"
        return rep
    for obj in device:
        try:
            rep.sass.update(read_sass(cu, obj))
        except ObjectToolError as e:
            rep.sass_note = f"not checked (cuobjdump failed: {e})"
            return rep
    lib = [k for k in rep.sass if LIBRARY_NAMESPACE.search(k)]
    if lib:
        rep.refused.insert(0, f"device code holds {len(lib)} CUB/Thrust kernels (e.g. "
                              f"{demangle(lib[:1])[lib[0]][:80]}): write the technique yourself")
    return rep


def interface_names(headers: list[Path]) -> set[str]:
    """Every identifier a lab's public headers declare as a function (the
    student's file defines them)."""
    names = set()
    for h in headers:
        text = h.read_text(encoding="utf-8", errors="replace")
        text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)
        names |= set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", text))
    return names - {"if", "while", "for", "return", "sizeof", "defined"}

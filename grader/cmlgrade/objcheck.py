"""Checks on what a student's file compiled to, before any of it runs.

A student object is linked into the kit's test binaries and runners, so
anything it defines or references becomes part of processes the grader
starts. This module reads the compiled objects (readelf, objdump; cuobjdump
for the device code of the CUDA build) and refuses an object that could
act outside its role:

- defined symbols: the interface's functions (names the lab's header
  declares), C++ names (kernels, their host stubs, templates, helpers) and
  the CUDA compiler's own registration code. Refused: main; symbols of the
  kit's common/ (cml_*), of Criterion (criterion_*, cr_*) or of the C
  library (any plain C name the interface does not declare); operator
  new/delete; anything in the cub:: or thrust:: namespaces.
- sections: no constructors or destructors (.ctors, .dtors, .fini_array,
  .preinit_array; .init_array may hold the CUDA compiler's registration
  function only).
- undefined references from an allow-list (CUDA runtime, math, compiler
  support); atexit only from the CUDA compiler's registration function.
- includes (the compiler's dependency file): only the student's lab, the
  kit's public headers, the build's generated headers and system or CUDA
  headers.
- device code (CUDA build with cuobjdump): no kernel of CUB or Thrust; the
  SASS of every kernel is kept for the rubric's instruction checks.

Nothing here runs student code; the tools only read files."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

# Plain C names a student object may reference (besides the CUDA runtime's
# cuda* functions and the compiler's __cuda* registration calls).
ALLOWED_UNDEFINED = frozenset("""
memset memcpy memmove memcmp
__cxa_guard_acquire __cxa_guard_release __cxa_guard_abort __gxx_personality_v0 _Unwind_Resume
__stack_chk_fail __cxa_begin_catch __cxa_end_catch __cxa_rethrow __cxa_allocate_exception __cxa_throw
__cxa_free_exception __cxa_pure_virtual __cxa_call_unexpected __tls_get_addr _GLOBAL_OFFSET_TABLE_ __dso_handle
__assert_fail abort printf puts putchar fprintf fputs fputc fflush snprintf stderr stdout
_ZSt9terminatev _Znwm _Znam _ZdlPv _ZdaPv _ZdlPvm _ZdaPvm
sqrt sqrtf cbrt cbrtf fabs fabsf floor floorf ceil ceilf round roundf lround lroundf trunc truncf fmod fmodf
log logf log2 log2f log10 log10f exp expf exp2 exp2f pow powf fmin fminf fmax fmaxf frexp frexpf ldexp ldexpf
sin sinf cos cosf tan tanf atan atanf atan2 atan2f hypot hypotf nextafter nextafterf rint rintf nearbyint
""".split())
# CUDA runtime functions that hand out other code (driver entry points).
REFUSED_CUDA = re.compile(r"^cuda(GetDriverEntryPoint\w*|GetExportTable|GetProcAddress)$")
# A launcher works on device data and leaves it there: a copy to or from the
# host, or memory the host can read, is how a sum or a transpose would be done
# on the CPU instead (no reference uses them; lab 02 fills __constant__ with
# cudaMemcpyToSymbol, which stays allowed).
HOST_DATA = re.compile(r"^cuda(Memcpy|MemcpyAsync|Memcpy2D\w*|Memcpy3D\w*|MemcpyFromSymbol\w*|MemcpyPeer\w*|"
                       r"MallocManaged|MallocHost|HostAlloc|HostRegister|HostGetDevicePointer)$")
# Only the CUDA compiler's registration function may run at load time and
# register an exit handler.
REGISTRATION = re.compile(r"__sti____cudaRegisterAll|__nv_cudaEntityRegisterCallback|__cudaUnregisterBinaryUtil")
KIT_PREFIX = re.compile(r"^(cml_|criterion_|cr_|__wrap_|__real_)")
CTOR_SECTIONS = (".ctors", ".dtors", ".fini_array", ".preinit_array")
LIBRARY_NAMESPACE = re.compile(r"^_ZN\d*(3cub|6thrust)|CUB_\d+_|THRUST_\d+_")
NEW_DELETE = re.compile(r"^_Z(nw|na|dl|da)")
# Data a student's global variable (a __device__ or __constant__ array on the
# CPU path: C++ gives variables plain names) must not replace.
LIBC_DATA = frozenset("""stdin stdout stderr environ optarg optind opterr optopt errno program_invocation_name
program_invocation_short_name timezone daylight tzname signgam""".split())
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


def disassemble(objdump: str, obj: Path) -> tuple[dict[str, set[str]], dict[str, list[str]]]:
    """Which function refers to which symbol (the relocations objdump shows
    inside each function's code), and each function's instructions."""
    refs: dict[str, set[str]] = {}
    code: dict[str, list[str]] = {}
    here = "?"
    for ln in _run([objdump, "-dr", "-w", "--no-show-raw-insn", str(obj)], timeout=120).splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", ln)
        if m:
            here = m.group(1)
            continue
        for r in re.finditer(r"R_X86_64_\w+\s+([^\s+-]+)", ln):
            refs.setdefault(here, set()).add(r.group(1))
        ins = re.match(r"^\s+[0-9a-f]+:\s+(\S.*?)(\s+#.*)?$", ln.split("\t")[0] + " " + " ".join(ln.split("\t")[1:2]))
        if ins and "nop" not in ins.group(1):
            code.setdefault(here, []).append(ins.group(1))
    return refs, code


def _device_stub(code: list[str]) -> bool:
    """The host body the CUDA compiler gives a __device__ function: exit(1)
    and nothing else."""
    # host compilers that default to -fcf-protection (Ubuntu's gcc) open it with endbr64, and some
    # align the stack with a push/pop pair: up to 8 instructions, one call, the last
    body = [c for c in code if not c.startswith(("endbr64", "nop"))]
    return (2 <= len(body) <= 8 and any("$0x1," in c for c in body) and body[-1].startswith("call")
            and sum(c.startswith("call") for c in body) == 1
            and not any(c.startswith(("jmp", "ret", "j")) for c in body))


def check_host_object(obj: Path, interface: set[str], tools: dict[str, str], cpu_path: bool = False,
                      host_data: bool = True, host_copies_in: frozenset[str] = frozenset()) -> list[str]:
    """The reasons to refuse one host object (empty: none). host_copies_in:
    the interface functions that may copy to or from the host even where
    host_data is False (lab 02's uploads of host tables)."""
    name = obj.name
    syms = read_symbols(tools["readelf"], obj)
    sections = read_sections(tools["readelf"], obj)
    why: list[str] = []
    dem = demangle(sorted({s.name for s in syms if s.name.startswith("_Z")}))
    for s in syms:
        if s.ndx == "UND" or s.bind == "LOCAL" or s.kind in ("SECTION", "FILE") or not s.name:
            continue
        n = s.name
        if n == "main" or n.startswith("main@"):
            why.append(f"defines main")
        elif KIT_PREFIX.match(n):
            why.append(f"defines {n}, a symbol of the kit or of Criterion")
        elif NEW_DELETE.match(n):
            why.append(f"defines {dem.get(n, n)} (replaces the program's allocator)")
        elif LIBRARY_NAMESPACE.search(n):
            why.append(f"defines {dem.get(n, n)[:80]} (CUB/Thrust code: write the technique yourself)")
        elif (s.kind in ("OBJECT", "TLS") and not n.startswith("_") and n not in LIBC_DATA
              and s.bind != "WEAK"):
            continue   # the student's own global variable (plain name in C++), not one of the C library's
        elif not n.startswith("_Z") and n not in interface and not n.startswith(("__cuda", "__nv_", "__fatbin", "DW.ref.")):
            why.append(f"defines {n}, which the lab's interface does not declare (a C library or kit name "
                       f"would replace the real one)")
    for sec in sections:
        if sec.startswith(CTOR_SECTIONS):
            why.append(f"has a {sec} section (code that runs before or after main)")
    inits = init_targets(tools["readelf"], obj, sections, syms)
    undefined = sorted({s.name for s in syms if s.ndx == "UND" and s.name})
    refs, code = disassemble(tools["objdump"], obj)
    for f, ins in code.items():
        if any(SYSCALL.match(i) for i in ins):
            why.append(f"makes system calls directly in {dem.get(f, f)[:60]} (inline assembly)")
    for t in inits:
        # the CPU path's race-check instrumentation adds a constructor that only calls __tsan_init
        tsan_init = cpu_path and t.startswith("_sub_I_") and refs.get(t, set()) <= {"__tsan_init"}
        if not REGISTRATION.search(t) and not tsan_init:
            why.append(f"runs {dem.get(t, t)} at program start (a constructor)")
    for u in undefined:
        if u == "exit":  # only the compiler's stub of a __device__ function, exit(1)
            users = sorted(f for f, rs in refs.items() if u in rs and not _device_stub(code.get(f, [])))
            if users or not refs:
                why.append(f"calls exit in {', '.join(dem.get(f, f)[:60] for f in users[:2]) or 'its data'}")
            continue
        if u in ("atexit", "__cxa_atexit", "__cxa_thread_atexit"):
            users = sorted(f for f, rs in refs.items() if u in rs and not REGISTRATION.search(f))
            if users or not refs:
                why.append(f"registers an exit handler ({u}) in {', '.join(users[:2]) or 'its data'}")
            continue
        if u in ALLOWED_UNDEFINED or u.startswith("__cuda"):
            continue
        if not host_data and HOST_DATA.match(u):
            users = sorted(f for f, rs in refs.items() if u in rs and f not in host_copies_in)
            if users or not refs:
                where = f" in {', '.join(dem.get(f, f)[:60] for f in users[:2])}" if users else ""
                why.append(f"calls {u}{where} (moves data to or from the host: a launcher's work stays on the device"
                           + (f"; only {', '.join(sorted(host_copies_in))} may copy host data" if host_copies_in
                              else "") + ")")
            continue
        if u.startswith("cuda") and not REFUSED_CUDA.match(u):
            continue
        if cpu_path and (u.startswith("__tsan_") or u.startswith("cml_cpu_") and u != "cml_cpu_bank_totals"):
            continue  # the CPU path's runtime: launches, barriers, warp operations, the race check's hooks
        d = dem.get(u, u)
        what = ("the kit's own code" if u.startswith("cml_") else
                "a library" if re.match(r"^(cublas|cusparse|cufft|curand|cub|thrust|_ZN\d*(3cub|6thrust))", u) else
                "loads other code" if u.startswith("dl") else "not on the allow-list")
        why.append(f"calls {d[:80]} ({what})")
    return [f"{name}: {w}" for w in dict.fromkeys(why)]


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
    name = depfile.name.removesuffix(".o.d")
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
        for obj in objects:
            rep.refused += check_host_object(obj, interface, tools, obj in cpu_objects, host_data, host_copies_in)
        for d in depfiles:
            rep.refused += check_includes(d, allowed_roots)
    except ObjectToolError as e:
        rep.refused.append(f"the object could not be read ({e})")
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
        rep.refused.append(f"device code holds {len(lib)} CUB/Thrust kernels (e.g. {demangle(lib[:1])[lib[0]][:80]})")
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

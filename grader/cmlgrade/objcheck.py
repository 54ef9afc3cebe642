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
read files.

What is refused is objrules.py's and the reading objread.py's; this module
applies the one to the other."""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .objread import (ObjectToolError, demangle, disassemble, find_binutils, find_cuobjdump, init_targets,
                      kit_symbols, read_resources, read_sass, read_sections, read_symbols,
                      runtime_exports)
from .objrules import (BENIGN_INIT_REFS, CPU_ALIGNMENT_HANDLERS, CPU_RUNTIME_REFUSED, CTOR_SECTIONS, DEVICE_COPIES,
                       HOST_DATA, KIT_PREFIX,
                       LIBC_DATA, LIBRARY_CALL, LIBRARY_HEADER, LIBRARY_NAMESPACE, LINKER_NAMES, MANAGED_REGISTRATION,
                       MANAGED_SECTION, NEW_DELETE, PLACEMENT_NEW, REFUSED_CUDA, REGISTRATION, SYSCALL, _device_stub,
                       _refused_call, device_to_device)

# names this module defined before objrules.py and objread.py were split from it: importable from here still
from .objread import Disassembly, interface_names  # noqa: F401
from .objrules import KIND_DEVICE_TO_DEVICE, REFUSED_CALLS  # noqa: F401


@dataclass
class ObjectReport:
    checked: bool = False               # an object was found and read
    refused: list[str] = field(default_factory=list)   # why the object may not run (empty: fine)
    note: str = ""                      # why it was not checked
    sass: dict[str, str] = field(default_factory=dict)  # device function (mangled) -> its SASS
    sass_note: str = ""                 # "" when SASS was read, else why not (e.g. no CUDA build)
    resources: dict = field(default_factory=dict)  # device function (mangled) -> objread.Resources

    def summary(self) -> str:
        return "; ".join(self.refused[:4]) + (f" (and {len(self.refused) - 4} more)" if len(self.refused) > 4 else "")


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
        if cpu_path and (u.startswith("__tsan_") or u.startswith("cml_cpu_") or u in CPU_ALIGNMENT_HANDLERS):
            continue  # the CPU path's runtime: launches, barriers, warp operations, the checks' hooks
        if KIT_PREFIX.match(u):
            why.append(f"calls {u}{where(users_of(u))} (the kit's own code): write the step yourself")
            continue
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


def depfiles_of(obj: Path) -> list[Path]:
    """The compiler's depfiles of an object that are there (CMake's OBJ.d,
    or OBJ with .d for .o)."""
    return [d for d in dict.fromkeys((Path(str(obj) + ".d"), obj.with_suffix(".d"))) if d.is_file()]


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
    # the include checks read what each compile read from its depfile (-MD: CMake 3.25 asks every compiler for
    # one, make and Ninja alike); an object without one would pass them unseen: fail closed
    blind = [o for o in objects if not depfiles_of(o)]
    if blind:
        rep.note = (f"not checked: {blind[0].name} has no depfile ({blind[0].name}.d, the files its compile read), "
                    f"so what it includes cannot be checked")
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
            rep.resources.update(read_resources(cu, obj))
        except ObjectToolError as e:
            rep.sass_note = f"not checked (cuobjdump failed: {e})"
            return rep
    lib = [k for k in rep.sass if LIBRARY_NAMESPACE.search(k)]
    if lib:
        rep.refused.insert(0, f"device code holds {len(lib)} CUB/Thrust kernels (e.g. "
                              f"{demangle(lib[:1])[lib[0]][:80]}): write the technique yourself")
    return rep

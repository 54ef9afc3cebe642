"""Reading what the object checks (objcheck.py) judge: the binutils and
cuobjdump found on this machine, a compiled object's symbols, sections,
load-time functions, disassembly and SASS, the names the C and C++ runtime
libraries export and the kit's own build defines, and the functions a lab's
public headers declare. The tools only read files; nothing here judges what
they find."""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


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


def _cuobjdump(cuobjdump: str, what: str, obj: Path) -> str:
    """cuobjdump's `what` (-sass, -res-usage) of obj; "" for a host-only
    object (lab 01's bank_model.c: no device code)."""
    try:
        return _run([cuobjdump, what, str(obj)], timeout=120)
    except ObjectToolError as e:
        if "does not contain device code" in str(e):
            return ""
        raise


def read_sass(cuobjdump: str, obj: Path) -> dict[str, str]:
    """Device function name (mangled) -> its SASS text."""
    text = _cuobjdump(cuobjdump, "-sass", obj)
    out: dict[str, str] = {}
    parts = re.split(r"^\s*Function : (\S+)\s*$", text, flags=re.M)
    for i in range(1, len(parts) - 1, 2):
        out[parts[i]] = out.get(parts[i], "") + parts[i + 1]
    return out


@dataclass
class Resources:
    """What ptxas gave one device function (cuobjdump -res-usage), the
    largest over the object's architectures: registers per thread, its
    stack frame (spills and local arrays the compiler keeps there) and
    local memory bytes, per thread."""
    regs: int
    stack: int
    local: int

    @property
    def local_bytes(self) -> int:
        return self.stack + self.local


def read_resources(cuobjdump: str, obj: Path) -> dict[str, Resources]:
    """Device function name (mangled) -> its Resources."""
    return parse_resources(_cuobjdump(cuobjdump, "-res-usage", obj))


def parse_resources(text: str) -> dict[str, Resources]:
    """cuobjdump -res-usage's text: a "Function NAME:" line, then a line of
    KEY:VALUE fields (REG, STACK, LOCAL, ...)."""
    out: dict[str, Resources] = {}
    name = None
    for ln in text.splitlines():
        m = re.match(r"\s*Function (\S+?):\s*$", ln)
        if m:
            name = m.group(1)
            continue
        if name is None:
            continue
        fields = dict(re.findall(r"\b([A-Z]+)(?:\[\d+\])?:(\d+)", ln))
        if "REG" in fields:
            r = Resources(int(fields["REG"]), int(fields.get("STACK", 0)), int(fields.get("LOCAL", 0)))
            old = out.get(name)
            out[name] = r if old is None else Resources(max(old.regs, r.regs), max(old.stack, r.stack),
                                                        max(old.local, r.local))
        name = None
    return out


def interface_names(headers: list[Path]) -> set[str]:
    """Every identifier a lab's public headers declare as a function (the
    student's file defines them)."""
    names = set()
    for h in headers:
        text = h.read_text(encoding="utf-8", errors="replace")
        text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)
        names |= set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", text))
    return names - {"if", "while", "for", "return", "sizeof", "defined"}

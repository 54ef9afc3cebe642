"""Static checks. The kit's kind reads what was compiled: instructions in
the SASS of the kernels a step launches (shared loads and stores where a
step must use shared memory, 128-bit loads and shuffles where a step must,
the constant bank where it must or must not be read), never the text of
comments or strings, never a kernel's name. Which kernels are a step's is
seen, not guessed: the grader's trace of the kit-only harness running the
step (checker.trace_step) lists every launch by name, and step_kernels
finds those functions in the CUDA build's SASS, so a kernel may be named
anything, be a template with its parameters in any order, be launched from
a helper, serve several steps, or share its step with another kernel.
Without a CUDA build (or without a trace) they are "not checked", never
passed. A rubric may also name kernels by a regex over their demangled
names (sass_kernel), and an instructor's rubric may hold a regex over the
source text (comments removed first; string literals too unless the check
keeps them)."""
from __future__ import annotations

import re

from .results import StaticResult
from .rubric import StaticCheck


def strip_source(text: str, strip_strings: bool = True) -> str:
    """C/CUDA source without comments (and string/char literals when asked),
    line breaks kept so line numbers stay right."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            while j > 0 and j < n and text[j - 1] == "\\":  # a continued line comment
                k = text.find("\n", j + 1)
                j = n if k < 0 else k
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "/" and nxt == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(" " + "\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(text[i:j] if not strip_strings else c + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def run_static(checks: list[StaticCheck], files: dict[str, str]) -> list[StaticResult]:
    """files: the graded copies (the student's, or the skeleton for a file
    not submitted), name -> text."""
    results = []
    for chk in checks:
        if chk.sass_kernel or chk.steps:
            continue  # on the compiled code: run_sass_checks
        names = sorted(files) if chk.file == "*" else [chk.file]
        pat = re.compile(chk.pattern, re.M)
        hits = []
        for name in names:
            text = strip_source(files.get(name, ""), chk.strings == "strip")
            for m in pat.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                hits.append(f"{name}:{line}: {m.group(0).strip()[:60]}")
        if chk.mode == "require":
            ok = bool(hits)
            detail = "" if ok else f"not found in {', '.join(names)}"
        else:
            ok = not hits
            detail = "" if ok else "; ".join(hits[:3])
        results.append(StaticResult(chk.name, ok, detail))
    return results


NO_TRACE = "not checked (the step's launches were not traced: it did not run to the end with right answers)"


def run_sass_checks(checks: list[StaticCheck], sass: dict[str, str], note: str,
                    launched: dict[int, list[str]] | None = None,
                    resources: dict | None = None) -> list[StaticResult]:
    """The checks on compiled code, on the SASS of each device function
    (mangled name -> text; objcheck.read_sass). A check with `steps` reads
    the kernels each of those steps launched (launched: step -> kernel
    names from its trace, or None for a step whose answers were wrong;
    launched None: not traced yet, each such check is not measured until
    _technique traces the steps); one with `sass_kernel`
    the functions its regex names. Without SASS (note says why) each is not
    measured. resources: mangled name -> objread.Resources, for the checks
    with max_registers or local_memory."""
    from .objcheck import demangle
    names = demangle(sorted(sass))
    results = []
    for chk in checks:
        if not chk.sass_kernel and not chk.steps:
            continue
        if not sass:
            results.append(StaticResult(chk.name, False, note or "not checked (no CUDA build)", measured=False))
            continue
        if chk.steps:
            results.append(_step_check(chk, sass, names, launched or {}, resources))
            continue
        pat = re.compile(chk.sass_kernel)
        kernels = sorted(k for k in sass if pat.search(names[k]))
        if not kernels:
            results.append(StaticResult(chk.name, False, f"no compiled device function matches {chk.sass_kernel}"))
            continue
        bad = []
        for k in kernels:
            body = _instructions(sass[k])
            for ins in chk.patterns:
                found = re.search(ins, body, re.M) is not None
                if found != (chk.mode == "require"):
                    bad.append(f"{names[k][:60]} {'lacks' if chk.mode == 'require' else 'has'} {ins}")
        results.append(_result(chk.name, bad))
    return results


def _result(name: str, bad: list[str], extra: str = "") -> StaticResult:
    detail = "; ".join(bad[:3]) + (f" (and {len(bad) - 3} more)" if len(bad) > 3 else "")
    return StaticResult(name, not bad, "; ".join(x for x in (detail, extra) if x))


def _step_check(chk: StaticCheck, sass: dict[str, str], names: dict[str, str],
                launched: dict[int, list[str]], resources: dict | None = None) -> StaticResult:
    """One check with `steps`: for each traced step, its kernels taken
    together (a step may launch several: a main kernel and a tail, a first
    pass and a second) must hold an instruction matching each `require`
    pattern, and none of them one matching a `forbid` pattern. With scope
    "template" the step's kernels include every other instantiation of
    their templates (a step whose traced cases all take the unaligned
    instantiation still has its aligned one checked)."""
    traced = [s for s in chk.steps if launched.get(s) is not None]
    if not traced:
        wrong = [s for s in chk.steps if s in launched]   # None: the step ran with wrong answers
        if wrong:   # no credit, as for any check of a step that fails (measured: it counts)
            return StaticResult(chk.name, False, f"step {wrong[0]} gives wrong answers: its launches were not traced")
        return StaticResult(chk.name, False, NO_TRACE, measured=False)
    wants_resources = chk.max_registers is not None or bool(chk.local_memory)
    if wants_resources and not resources:
        return StaticResult(chk.name, False, "not checked (the kernels' resource usage was not read: "
                                             "cuobjdump -res-usage)", measured=False)
    bad, unseen, seen = [], [], []
    for s in traced:
        kernels, missing = step_kernels(launched[s], sass, names, chk.scope == "template")
        unseen += [f"step {s}: {m}" for m in missing]
        if not kernels:
            bad.append(f"step {s} launched no kernel found in the compiled code"
                       + (f" ({', '.join(missing[:3])})" if missing else " (it launched none)"))
            continue
        bodies = {k: _instructions(sass[k]) for k in kernels}
        shown = ", ".join(names[k][:60] for k in kernels[:2]) + (f" and {len(kernels) - 2} more" if len(kernels) > 2
                                                                 else "")
        for ins in chk.patterns:
            has = [k for k in kernels if re.search(ins, bodies[k], re.M)]
            if chk.mode == "require" and not has:
                bad.append(f"step {s}'s kernels ({shown}) lack {ins}")
            elif chk.mode == "forbid" and has:
                bad.append(f"step {s}'s kernel {names[has[0]][:60]} has {ins}")
        if wants_resources:
            b, shown_res = _resource_check(chk, s, kernels, sass, names, resources or {})
            bad += b
            seen += shown_res
    left = [s for s in chk.steps if launched.get(s) is None]
    extra = (f"steps {', '.join(map(str, left))} not traced" if left else "")
    if unseen and not bad:
        extra = "; ".join(x for x in (extra, "launches not in the compiled code: " + ", ".join(unseen[:3])) if x)
    if seen and not bad:
        extra = "; ".join(x for x in (", ".join(seen[:3]), extra) if x)
    return _result(chk.name, bad, extra)


def _resource_check(chk: StaticCheck, step: int, kernels: list[str], sass: dict[str, str], names: dict[str, str],
                    resources: dict) -> tuple[list[str], list[str]]:
    """max_registers and local_memory on one step's kernels: every kernel
    within the register limit; "none": no kernel with a stack frame, local
    memory or a local load or store (LDL/STL) in its SASS; "required": at
    least one kernel of the step with local memory (a step that must show
    a spill). Returns (what is wrong, what was read)."""
    bad, seen, local_kernels = [], [], []
    for k in kernels:
        r = resources.get(k)
        if r is None:
            bad.append(f"step {step}: no resource usage was read for {names[k][:60]}")
            continue
        spills = re.search(r"\b(STL|LDL)\b", _instructions(sass.get(k, "")), re.M) is not None
        local = r.local_bytes > 0 or spills
        seen.append(f"step {step}: {names[k][:40]} {r.regs} registers, {r.local_bytes} bytes of local memory"
                    + (" (LDL/STL in its SASS)" if spills else ""))
        if local:
            local_kernels.append(k)
        if chk.max_registers is not None and r.regs > chk.max_registers:
            bad.append(f"step {step}'s kernel {names[k][:60]} uses {r.regs} registers, more than "
                       f"{chk.max_registers}")
        if chk.local_memory == "none" and local:
            bad.append(f"step {step}'s kernel {names[k][:60]} uses local memory ({r.local_bytes} bytes"
                       + (", LDL/STL in its SASS" if spills else "") + "): spills or a local array")
    if chk.local_memory == "required" and kernels and not local_kernels and not bad:
        bad.append(f"step {step}'s kernels ({', '.join(names[k][:60] for k in kernels[:2])}) use no local memory: "
                   "the step must show the spill (its file is compiled with the manifest's register cap)")
    return bad, seen


def kernel_key(name: str) -> str:
    """A kernel's name as both tools can spell it: the demangled name
    without its return type (a template's), parameter list, spaces and
    anonymous namespaces. "void conv_kernel<3, constant_filter>(float
    const*, ...)" and the CPU runtime's "conv_kernel<3,constant_filter>"
    are both "conv_kernel<3,constant_filter>"."""
    s = name.replace("(anonymous namespace)::", "").strip()
    depth, cut = 0, len(s)
    for i, c in enumerate(s):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0:
            cut = i
            break
    s = s[:cut]
    if s.startswith("void "):
        s = s[5:]
    return s.replace(" ", "")


def base_name(name: str) -> str:
    """The kernel's unqualified name without template arguments
    ("lab::tk<3,float>" -> "tk")."""
    k = kernel_key(name)
    depth, out = 0, []
    for c in k:
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif depth == 0:
            out.append(c)
    return "".join(out).rsplit("::", 1)[-1]


def step_kernels(launched: list[str], sass: dict[str, str], names: dict[str, str] | None = None,
                 template: bool = False, groups: list[list[str]] | None = None) -> tuple[list[str], list[str]]:
    """The SASS functions (mangled names) of the kernels a step launched,
    and the launched names found nowhere in the SASS. A launched name is a
    mangled name (ncu's), or a demangled one (the CPU runtime's, without
    parameters); where neither matches one function (the CPU runtime names
    a kernel it cannot find in the debug information by its launch's text)
    every function of that unqualified name is the step's. template: each
    found function's other instantiations too. groups, where given, gets
    each launched name's functions: one where the name was exact, several
    where it stood for every function of a name."""
    if names is None:
        from .objcheck import demangle
        names = demangle(sorted(sass))
    by_key: dict[str, list[str]] = {}
    by_base: dict[str, list[str]] = {}
    for m in sorted(sass):
        by_key.setdefault(kernel_key(names.get(m, m)), []).append(m)
        by_base.setdefault(base_name(names.get(m, m)), []).append(m)
    found: list[str] = []
    missing: list[str] = []
    for n in launched:
        hits = ([n] if n in sass else by_key.get(kernel_key(n)) or by_base.get(base_name(n)) or [])
        if not hits:
            missing.append(n)
        if template:
            hits = [h for x in hits for h in by_base.get(base_name(names.get(x, x)), [x])]
        found += [h for h in hits if h not in found]
        if groups is not None and hits:
            groups.append(list(hits))
    return found, missing


def _instructions(sass: str) -> str:
    """The opcodes and operands of a SASS listing, one per line (the
    encodings and addresses left out)."""
    out = []
    for ln in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", ln)
        if m:
            out.append(m.group(1))
    return "\n".join(out)

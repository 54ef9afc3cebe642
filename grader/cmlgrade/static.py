"""Static checks. The kit's kind reads what was compiled: instructions in
the SASS of named device functions (shared loads and stores where a step
must use shared memory, 128-bit loads and shuffles where a step must),
never the text of comments or strings; without a CUDA build they are "not
checked", never passed. An instructor's rubric may still hold a regex over
the source text (comments removed first; string literals too unless the
check keeps them)."""
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
        if chk.sass_kernel:
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


def run_sass_checks(checks: list[StaticCheck], sass: dict[str, str], note: str) -> list[StaticResult]:
    """The checks with sass_kernel, on the SASS of each device function
    (mangled name -> text; objcheck.read_sass). Without SASS (note says why)
    each is not measured."""
    from .objcheck import demangle
    names = demangle(sorted(sass))
    results = []
    for chk in checks:
        if not chk.sass_kernel:
            continue
        if not sass:
            results.append(StaticResult(chk.name, False, note or "not checked (no CUDA build)", measured=False))
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
        results.append(StaticResult(chk.name, not bad, "; ".join(bad[:3]) + (f" (and {len(bad) - 3} more)"
                                                                              if len(bad) > 3 else "")))
    return results


def _instructions(sass: str) -> str:
    """The opcodes and operands of a SASS listing, one per line (the
    encodings and addresses left out)."""
    out = []
    for ln in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", ln)
        if m:
            out.append(m.group(1))
    return "\n".join(out)

"""Static checks on the student's source: a required construct (the
`__shared__` a step is about) or a forbidden one (calls into cuBLAS, CUB or
Thrust, includes that leave the lab). Comments are always removed first;
string literals too unless the check keeps them (to see include paths)."""
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

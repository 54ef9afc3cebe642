"""The lab registry, made from data only: each rubric file names its lab,
stem and student files; the steps come from the X-macro step table in
labs/<lab>/<stem>.h; the classic mistakes from solutions/<lab>/mistakes.toml.
Nothing here knows a particular lab."""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .rubric import Rubric, RubricError, load_rubric


@dataclass(frozen=True)
class Step:
    num: int
    ident: str
    what: str
    where: str = ""  # the student file of the step, when the table says


@dataclass(frozen=True)
class Mistake:
    name: str
    file: str
    step: int
    summary: str
    caught_by: str
    expect_failing: str = ""
    expect_message: str = ""


@dataclass
class Lab:
    name: str
    stem: str
    title: str
    files: tuple[str, ...]
    model_file: str
    steps: tuple[Step, ...]
    rubric: Rubric
    mistakes: tuple[Mistake, ...] = field(default_factory=tuple)

    @property
    def kernel_file(self) -> str:
        return self.files[0]

    @property
    def runner(self) -> str:
        return f"{self.stem}_run"

    def step(self, num: int) -> Step | None:
        for s in self.steps:
            if s.num == num:
                return s
        return None

    def test_binaries(self) -> tuple[str, ...]:
        return tuple(self.rubric.tests.binaries)

    def student_targets(self) -> list[str]:
        """Build targets, in build order: each is built on its own so that one
        file's compile error costs only what depends on it."""
        return list(self.rubric.tests.binaries) + [self.runner]

    def ref_targets(self) -> list[str]:
        return [t + "_ref" for t in self.student_targets()]


class LabError(Exception):
    pass


def _split_args(text: str) -> list[str]:
    """Split the argument list of one X(...) entry on top-level commas,
    keeping string literals whole."""
    args, cur, depth, i = [], [], 0, 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    if cur and "".join(cur).strip():
        args.append("".join(cur).strip())
    return args


def _c_string(token: str) -> str:
    """The value of one or more adjacent C string literals."""
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', token)
    if not parts:
        return token.strip()
    text = "".join(parts)
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


def parse_step_table(header_text: str, macro: str) -> list[Step]:
    """Steps from `#define MACRO(X) X(num, ident, "what") ...` (3 fields) or
    X(num, ident, "where", "what") (4 fields)."""
    text = header_text.replace("\\\r\n", " ").replace("\\\n", " ")
    m = re.search(r"^[ \t]*#[ \t]*define[ \t]+" + re.escape(macro) + r"\(\s*(\w+)\s*\)(.*)$", text, re.M)
    if not m:
        raise LabError(f"no step table: '#define {macro}(X)' not found")
    xname, body = m.group(1), m.group(2)
    steps, pos = [], 0
    pat = re.compile(r"\b" + re.escape(xname) + r"\s*\(")
    while True:
        hit = pat.search(body, pos)
        if not hit:
            break
        i, depth, in_str = hit.end(), 1, False
        start = i
        while i < len(body) and depth:
            ch = body[i]
            if in_str:
                if ch == "\\":
                    i += 1
                elif ch == '"':
                    in_str = False
            elif ch == '"':
                in_str = True
            elif ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            i += 1
        args = _split_args(body[start:i - 1])
        pos = i
        if len(args) == 3:
            num, ident, what, where = args[0], args[1], args[2], ""
        elif len(args) == 4:
            num, ident, where, what = args
        else:
            raise LabError(f"step table {macro}: an entry has {len(args)} fields, expected 3 or 4")
        try:
            n = int(num, 0)
        except ValueError as e:
            raise LabError(f"step table {macro}: step number '{num}' is not a number") from e
        steps.append(Step(n, ident.strip(), _c_string(what), _c_string(where) if where else ""))
    if not steps:
        raise LabError(f"step table {macro} has no entries")
    nums = [s.num for s in steps]
    if nums != list(range(1, len(nums) + 1)):
        raise LabError(f"step table {macro}: steps are {nums}, expected 1..{len(nums)}")
    return steps


def load_mistakes(path: Path, default_file: str) -> tuple[Mistake, ...]:
    """The catalogue of classic mistakes (instructor side; absent in a
    student's copy of the kit is fine)."""
    if not path.is_file():
        return ()
    with path.open("rb") as f:
        data = tomllib.load(f)
    out = []
    for m in data.get("mistake", []):
        out.append(Mistake(name=m["name"], file=m.get("file", default_file), step=int(m["step"]),
                           summary=m.get("summary", ""), caught_by=m["caught_by"],
                           expect_failing=m.get("expect_failing", ""),
                           expect_message=m.get("expect_message", "")))
    return tuple(out)


def default_rubric_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "rubrics"


def load_labs(kit: Path, rubric_dir: Path | None = None, override: dict | None = None,
              only: list[str] | None = None) -> list[Lab]:
    """Every lab that has a rubric file and a folder in the kit, sorted by
    name. `override` is the parsed instructor file ({lab name: table})."""
    rubric_dir = rubric_dir or default_rubric_dir()
    labs = []
    for path in sorted(rubric_dir.glob("*.toml")):
        lab_name = path.stem
        if only and lab_name not in only:
            continue
        rubric = load_rubric(path, (override or {}).get(lab_name))
        lab_dir = kit / "labs" / rubric.lab.name
        if not lab_dir.is_dir():
            continue
        header = lab_dir / f"{rubric.lab.stem}.h"
        if not header.is_file():
            raise LabError(f"{rubric.lab.name}: no interface header {header}")
        steps = parse_step_table(header.read_text(encoding="utf-8", errors="replace"), rubric.lab.steps_macro)
        rubric.check_steps([s.num for s in steps])
        mistakes = load_mistakes(kit / "solutions" / rubric.lab.name / "mistakes.toml", rubric.lab.files[0])
        unknown = sorted(set(rubric.mistakes) - {m.name for m in mistakes}) if mistakes else []
        if unknown:
            raise RubricError(f"{rubric.lab.name}: feedback for mistakes not in the catalogue: {', '.join(unknown)}")
        labs.append(Lab(name=rubric.lab.name, stem=rubric.lab.stem, title=rubric.lab.title,
                        files=tuple(rubric.lab.files), model_file=rubric.lab.model_file, steps=tuple(steps),
                        rubric=rubric, mistakes=mistakes))
    if only:
        missing = sorted(set(only) - {lab.name for lab in labs})
        if missing:
            raise LabError(f"unknown lab(s): {', '.join(missing)} (known: "
                           f"{', '.join(p.stem for p in sorted(rubric_dir.glob('*.toml')))})")
    return labs

"""One submission in (intake.py reads a batch of them): what it is
(Submission) and which of the members intakeread.py reads are graded. A
lab file's copy under labs/<lab>/ is taken first, never one in the kit's
solutions/, and never one that is empty or not text; the other copies, a
name that looks like a lab file's and a lab with files missing each get a
message."""
from __future__ import annotations

import difflib
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .intakeread import ARCHIVE_SUFFIXES, IGNORED_PARTS, IntakeError, _Member, _read_dir, _read_tar, _read_zip


@dataclass
class Submission:
    student: str
    source: str                                   # what was read (a name, not a path)
    files: dict[str, dict[str, bytes]] = field(default_factory=dict)  # lab -> file -> bytes
    problems: list[str] = field(default_factory=list)   # messages for the student
    ignored: list[str] = field(default_factory=list)    # extra files, listed
    on_roster: bool = True
    missing: bool = False                          # on the roster, nothing submitted

    def labs(self) -> list[str]:
        return sorted(self.files)


def student_id_of(path: Path) -> str:
    name = path.name
    for suf in ARCHIVE_SUFFIXES:
        if name.lower().endswith(suf):
            return name[: -len(suf)]
    return name


def is_archive(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(ARCHIVE_SUFFIXES)


def _binary_reason(data: bytes) -> str | None:
    if not data.strip():
        return "is empty"
    if b"\x00" in data:
        return "holds binary data (NUL bytes), not source code"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "is not UTF-8 text"
    bad = sum(1 for ch in text if ord(ch) < 32 and ch not in "\t\n\r\f\v")
    if bad > max(4, len(text) // 200):
        return "holds binary data (control characters), not source code"
    return None


def _score_path(path: str, lab: str) -> tuple[int, int]:
    """Lower is better: a copy under labs/<lab>/ first, then under <lab>/,
    then the shallowest."""
    parts = PurePosixPath(path).parts
    in_labs = any(a == "labs" and b == lab for a, b in zip(parts, parts[1:]))
    return (0 if in_labs else 1 if lab in parts else 2, len(parts))


def _not_the_students(path: str) -> bool:
    """A copy of the kit's solutions/ in a submission (the whole kit zipped)
    is never graded in place of the student's own file."""
    return "solutions" in path.split("/")


_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))


def _fold(name: str) -> str:
    """A file name as a person would read it: no case, no accents, no
    zero-width characters, compatibility forms folded (NFKC)."""
    s = unicodedata.normalize("NFKD", name.translate(_ZERO_WIDTH))
    return unicodedata.normalize("NFKC", "".join(c for c in s if not unicodedata.combining(c))).casefold()


def read_submission(path: Path, lab_files: dict[str, list[str]], student: str | None = None,
                    kit_names: set[str] | frozenset = frozenset()) -> Submission:
    """One submission (directory or archive). lab_files: lab -> its student
    file names. Never raises for bad content: problems become messages."""
    student = student or student_id_of(path)
    sub = Submission(student=student, source=path.name)
    wanted = {f: lab for lab, files in lab_files.items() for f in files}
    try:
        if path.is_dir():
            reader = _read_dir(path, set(wanted))
        elif path.name.lower().endswith(".zip"):
            reader = _read_zip(path, set(wanted))
        elif path.name.lower().endswith((".tar.gz", ".tgz", ".tar")):
            reader = _read_tar(path, set(wanted))
        else:
            sub.problems.append(f"{path.name}: not a folder, .zip or .tar.gz: nothing graded")
            return sub
    except IntakeError as e:
        sub.problems.append(f"{e}: nothing graded")
        return sub
    sub.problems.extend(reader.problems)

    candidates: dict[str, list[_Member]] = {}
    extras = []
    for m in reader.members:
        parts = m.path.split("/")
        base = parts[-1]
        if any(p in IGNORED_PARTS or p.startswith("._") for p in parts):
            continue
        if base in wanted and _not_the_students(m.path):
            sub.problems.append(f"{m.path}: a copy of the kit's solutions/, never graded (only your labs/ or "
                                f"flat copies are)")
            extras.append(m.path)
        elif base in wanted:
            candidates.setdefault(base, []).append(m)
        else:
            extras.append(m.path)
    for base, members in sorted(candidates.items()):
        lab = wanted[base]
        members.sort(key=lambda m: _score_path(m.path, lab))
        chosen = members[0]
        if len(members) > 1:
            sub.problems.append(f"{base}: {len(members)} copies ({', '.join(m.path for m in members)}); "
                                f"graded {chosen.path}")
        why = _binary_reason(chosen.data)
        if why:
            sub.problems.append(f"{chosen.path} {why}: {lab} not graded from it")
            continue
        sub.files.setdefault(lab, {})[base] = chosen.data
    all_names = sorted(wanted)
    folded = {_fold(n): n for n in all_names}
    looks_like: dict[str, list[str]] = {}   # folded name -> the lab file it looks like (a kit repeats names)
    for x in sorted(extras):
        base = x.rpartition("/")[2]
        if base in kit_names or _not_the_students(x):  # the kit's own files in a kit-layout copy
            continue
        f = _fold(base)
        if f not in looks_like:
            looks_like[f] = [folded[f]] if f in folded else \
                [folded[c] for c in difflib.get_close_matches(f, list(folded), n=1, cutoff=0.75)]
        close = looks_like[f]
        if close:
            also = " (a file of that name was graded)" if close[0] in candidates else " (not graded)"
            shown = x if x.isprintable() and x.translate(_ZERO_WIDTH) == x else ascii(x)  # show invisible characters
            sub.problems.append(f"{shown}: not a lab file name; did you mean {close[0]}?{also}")
        sub.ignored.append(x)
    # A lab with some files but not all: say which are missing (the kit's
    # skeleton stands in for them).
    for lab, files in sorted(sub.files.items()):
        absent = [f for f in lab_files[lab] if f not in files]
        if absent:
            sub.problems.append(f"{lab}: {', '.join(absent)} not submitted: the untouched skeleton is used")
    if not sub.files and not any("nothing graded" in p for p in sub.problems):
        expected = ", ".join(sorted(wanted))
        sub.problems.append(f"no lab file found (expected one of: {expected}): nothing graded"
                            if reader.members else "empty submission: nothing graded")
    return sub

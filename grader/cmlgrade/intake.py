"""Submissions in: a directory, a .zip or a .tar.gz (.tgz, .tar) holding the
student's lab files, in the kit's layout (labs/<lab>/<file>) or just the
files, matched by name. Nothing is ever extracted to disk as given: members
are read into memory after every safety check, and only the expected file
names are kept. Each problem becomes a message for that student; the run
goes on.

This module reads a batch (a folder of submissions, one per student, and
the roster); reading an archive's or a folder's members under the limits
is intakeread.py's, and one submission, the lab files chosen from them,
submission.py's."""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from .submission import Submission, is_archive, read_submission, student_id_of

# names this module defined before intakeread.py and submission.py were split from it: importable from here still
from .intakeread import ARCHIVE_SUFFIXES, BIG_MEMBER_BYTES, IGNORED_PARTS, SOURCE_SUFFIXES, IntakeError  # noqa: F401
from .intakeread import MAX_ENTRIES, MAX_EXPANDED_BYTES, MAX_FILE_BYTES, MAX_MEMBERS, MAX_NESTING  # noqa: F401
from .intakeread import MAX_RATIO, MAX_TOTAL_BYTES  # noqa: F401


@dataclass
class Batch:
    submissions: list[Submission]
    problems: list[str]  # about the batch itself (roster, odd entries)


def looks_like_one_submission(folder: Path, lab_files: dict[str, list[str]]) -> bool:
    """A folder is one submission when it holds a lab file, a labs/ folder or
    a folder named like a lab; else it is a batch (one entry per student)."""
    names = {f for files in lab_files.values() for f in files}
    try:
        entries = list(folder.iterdir())
    except OSError:
        return False
    for e in entries:
        if e.name in names or e.name == "labs" or (e.is_dir() and e.name in lab_files):
            return True
    return False


def kit_file_names(kit: Path) -> set[str]:
    """Names of the kit's own files under labs/ (not the student files):
    a kit-layout submission carries them; they are not listed as extras."""
    names = set()
    for p in (kit / "labs").rglob("*"):
        if p.is_file():
            names.add(p.name)
    return names


def read_roster(path: Path) -> list[str]:
    """Student ids from a roster CSV: the column named student_id, id, sid,
    login, username, user, email or student (first one found: a column of
    ids before one that may hold names; case, spaces and hyphens aside:
    "Student ID" is student_id), else the first column."""
    with path.open(newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    if not rows:
        return []
    header = [re.sub(r"[\s-]+", "_", h.strip().lower()) for h in rows[0]]
    col = None
    for key in ("student_id", "id", "sid", "login", "username", "user", "email", "student"):
        if key in header:
            col = header.index(key)
            break
    body = rows[1:] if col is not None else rows
    col = col or 0
    ids = []
    for row in body:
        if len(row) > col and row[col].strip():
            sid = row[col].strip()
            if col is not None and header and header[col] == "email" and "@" in sid:
                sid = sid.split("@")[0]
            ids.append(sid)
    return ids


def read_batch(folder: Path, lab_files: dict[str, list[str]], roster: list[str] | None = None,
               kit_names: set[str] | frozenset = frozenset()) -> Batch:
    problems = []
    subs: dict[str, Submission] = {}
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.startswith("."):
            continue
        if entry.is_symlink():
            problems.append(f"{entry.name}: a symbolic link, skipped")
            continue
        if not (entry.is_dir() or is_archive(entry)):
            problems.append(f"{entry.name}: not a folder or an archive, skipped")
            continue
        sid = student_id_of(entry)
        if sid in subs:
            problems.append(f"{entry.name}: a second submission for {sid}, skipped (graded {subs[sid].source})")
            continue
        subs[sid] = read_submission(entry, lab_files, sid, kit_names)
    if roster is not None:
        known = set(roster)
        for sid, sub in subs.items():
            if sid not in known:
                sub.on_roster = False
                sub.problems.append(f"{sid} is not on the roster")
        for sid in roster:
            if sid not in subs:
                subs[sid] = Submission(student=sid, source="", missing=True,
                                       problems=["nothing submitted"])
    return Batch(submissions=[subs[k] for k in sorted(subs)], problems=problems)

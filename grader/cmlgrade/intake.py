"""Submissions in: a directory, a .zip or a .tar.gz (.tgz, .tar) holding the
student's lab files, in the kit's layout (labs/<lab>/<file>) or just the
files, matched by name. Nothing is ever extracted to disk as given: members
are read into memory after every safety check, and only the expected file
names are kept. Each problem becomes a message for that student; the run
goes on."""
from __future__ import annotations

import csv
import difflib
import io
import os
import re
import stat
import tarfile
import unicodedata
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

MAX_FILE_BYTES = 1 << 20      # one source file
MAX_TOTAL_BYTES = 32 << 20    # everything read from one submission
MAX_MEMBERS = 5000            # files read (lab files and nested archives); any other file is only listed by name
MAX_ENTRIES = 200_000         # entries looked at in one archive (a whole kit with its vendored trees is far less)
# Everything a compressed tar expands to, read or skipped (a tar.gz is skipped through by decompressing it, in
# small pieces, never held in memory): bounded work, so a core dump of a few GiB before labs/ is passed over,
# and more is a bomb. No gzip stream expands more than 1032 times its size: a tar that declares more than
# MAX_RATIO times its own size (a bzip2 or xz bomb) is refused by its headers alone.
MAX_EXPANDED_BYTES = 4 << 30
MAX_RATIO = 1100
BIG_MEMBER_BYTES = 16 << 20   # an extra file this large is named in the feedback as skipped
MAX_NESTING = 2                 # an archive inside the archive is looked into, this deep
SOURCE_SUFFIXES = (".cu", ".c", ".h", ".cuh", ".cpp", ".cc", ".hpp")
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar")
IGNORED_PARTS = ("__MACOSX", ".git", ".DS_Store", "build")


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


@dataclass
class _Member:
    path: str
    data: bytes


class IntakeError(Exception):
    """The submission cannot be read at all (the message says why)."""


def student_id_of(path: Path) -> str:
    name = path.name
    for suf in ARCHIVE_SUFFIXES:
        if name.lower().endswith(suf):
            return name[: -len(suf)]
    return name


def is_archive(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(ARCHIVE_SUFFIXES)


def _unsafe_reason(name: str) -> str | None:
    if name.startswith("/") or name.startswith("\\") or (len(name) > 1 and name[1] == ":"):
        return "an absolute path"
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if ".." in parts:
        return "a '..' component"
    return None


class _Reader:
    """Collects members under the size limits, with messages."""

    def __init__(self, depth: int = 0, prefix: str = ""):
        self.members: list[_Member] = []
        self.problems: list[str] = []
        self.total = 0
        self.count = 0
        self.over_total = False
        self.expanded = 0      # what the archive expands to, skipped members too (bomb accounting)
        self.limit = MAX_EXPANDED_BYTES   # _read_tar lowers it to MAX_RATIO times the archive's size
        self.entries = 0
        self.depth, self.prefix = depth, prefix

    def expand(self, size: int) -> bool:
        """Accounts a member's declared size before it is decompressed or
        skipped; False once the archive expands past its limit."""
        self.expanded += max(0, size)
        if self.expanded > self.limit:
            self.problems.append(f"the archive expands to more than {_mib(self.limit)} "
                                 f"(a decompression bomb?): the rest was not read")
            return False
        return True

    def entry(self) -> bool:
        """Counts an entry looked at; False past MAX_ENTRIES."""
        self.entries += 1
        if self.entries > MAX_ENTRIES:
            self.problems.append(f"more than {MAX_ENTRIES} entries in the archive: the rest were not looked at")
            return False
        return True

    def skip(self, name: str, size: int) -> None:
        """A member that is not a lab file: listed by name, never read; a
        large one is named in the feedback."""
        self.members.append(_Member(self.prefix + name, b""))
        if size >= BIG_MEMBER_BYTES:
            self.problems.append(f"{self.prefix + name}: {_mib(size)}, not a lab file: skipped without reading it")

    def nested(self, name: str, data: bytes, wanted_names: set[str]) -> None:
        """An archive inside the archive: looked into (MAX_NESTING deep),
        its members named inner.zip/<path>."""
        if self.depth >= MAX_NESTING:
            self.problems.append(f"{name}: an archive nested deeper than {MAX_NESTING}: not looked into")
            return
        import tempfile
        with tempfile.TemporaryDirectory(prefix="cmlgrade-nested-") as d:
            inner = Path(d) / PurePosixPath(name).name
            inner.write_bytes(data)
            try:
                sub = (_read_zip if name.lower().endswith(".zip") else _read_tar)(inner, wanted_names, self.depth + 1,
                                                                                  name + "/")
            except IntakeError as e:
                self.problems.append(f"{name}: {e}")
                return
        self.problems += sub.problems
        if not self.expand(sub.expanded):
            return
        for m in sub.members:
            self.total += len(m.data)
            self.members.append(m)

    def wanted(self, name: str, wanted_names: set[str]) -> bool:
        """Read: a lab file's name or an archive to look into. Any other file
        (a look-alike name, a vendored header) needs only its name."""
        base = name.rpartition("/")[2]   # (not PurePosixPath: a kit's archive lists thousands of names)
        return base in wanted_names or base.lower().endswith(ARCHIVE_SUFFIXES)

    def add(self, name: str, size: int, read, wanted_names: set[str] = frozenset()) -> None:
        name = self.prefix + name
        self.count += 1
        if self.count > MAX_MEMBERS:
            if self.count == MAX_MEMBERS + 1:
                self.problems.append(f"more than {MAX_MEMBERS} lab files and archives: the rest were not read")
            return
        if size > MAX_FILE_BYTES:
            self.problems.append(f"{name}: {size} bytes, over the {MAX_FILE_BYTES >> 10} KiB limit for a file: not read")
            return
        if self.total + size > MAX_TOTAL_BYTES:
            if not self.over_total:
                self.problems.append(f"over {MAX_TOTAL_BYTES >> 20} MiB in all: {name} and later files not read")
                self.over_total = True
            return
        data = read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:  # the header lied about the size
            self.problems.append(f"{name}: over the {MAX_FILE_BYTES >> 10} KiB limit for a file: not read")
            return
        if name.lower().endswith(ARCHIVE_SUFFIXES):
            self.nested(name, data, wanted_names)
            return
        self.total += len(data)
        self.members.append(_Member(name, data))


def _read_zip(path: Path, wanted_names: set[str], depth: int = 0, prefix: str = "") -> _Reader:
    r = _Reader(depth, prefix)
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise IntakeError(f"{path.name} is not a readable zip archive ({e})") from e
    with zf:
        for info in zf.infolist():
            name = info.filename.replace("\\", "/")   # Windows separators
            if info.is_dir() or name.endswith("/"):
                continue
            if not r.entry():
                break
            if not r.expand(info.file_size if r.wanted(name, wanted_names) else 0):
                break
            why = _unsafe_reason(name)
            mode = info.external_attr >> 16
            if why:
                r.problems.append(f"{name}: refused, {why} in an archive")
                continue
            if stat.S_ISLNK(mode):
                r.problems.append(f"{name}: refused, a symbolic link in an archive")
                continue
            if stat.S_IFMT(mode) and not stat.S_ISREG(mode):  # no type bits: a plain file (Windows zips)
                r.problems.append(f"{name}: refused, not a regular file")
                continue
            if not r.wanted(name, wanted_names):
                r.skip(name, info.file_size)  # listed as extra, never read (a zip member is skipped for free)
                continue
            try:
                with zf.open(info) as f:
                    r.add(name, info.file_size, f.read, wanted_names)
            except (zipfile.BadZipFile, RuntimeError, OSError, NotImplementedError) as e:
                r.problems.append(f"{name}: cannot be read from the zip ({e})")
    return r


def _read_tar(path: Path, wanted_names: set[str], depth: int = 0, prefix: str = "") -> _Reader:
    r = _Reader(depth, prefix)
    try:
        tf = tarfile.open(path, "r:*")
    except (tarfile.TarError, OSError) as e:
        raise IntakeError(f"{path.name} is not a readable tar archive ({e})") from e
    try:
        r.limit = min(MAX_EXPANDED_BYTES, max(MAX_RATIO * path.stat().st_size, 1 << 20))
    except OSError:
        pass
    with tf:
        try:
            for info in tf:
                name = info.name.replace("\\", "/")
                if not r.entry() or not r.expand(info.size if info.isfile() else 0):  # skipping decompresses too
                    break
                if info.isdir():
                    continue
                why = _unsafe_reason(name)
                if why:
                    r.problems.append(f"{name}: refused, {why} in an archive")
                    continue
                if info.issym() or info.islnk():
                    r.problems.append(f"{name}: refused, a {'symbolic' if info.issym() else 'hard'} link in an archive")
                    continue
                if not info.isfile():
                    r.problems.append(f"{name}: refused, not a regular file (device, fifo or other)")
                    continue
                if not r.wanted(name, wanted_names):
                    r.skip(name, info.size)   # the next header is read past it, a piece at a time
                    continue
                f = tf.extractfile(info)
                if f is None:
                    continue
                r.add(name, info.size, f.read, wanted_names)
        except (tarfile.TarError, OSError, EOFError) as e:
            r.problems.append(f"the archive is damaged after {r.count} files ({e})")
    return r


def _read_dir(root: Path, wanted_names: set[str]) -> _Reader:
    r = _Reader()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = Path(dirpath).relative_to(root)
        keep = []
        for d in sorted(dirnames):
            p = Path(dirpath) / d
            if p.is_symlink():
                r.problems.append(f"{(rel_dir / d).as_posix()}: refused, a symbolic link")
            elif d not in IGNORED_PARTS:
                keep.append(d)
        dirnames[:] = keep
        for fn in sorted(filenames):
            p = Path(dirpath) / fn
            rel = (rel_dir / fn).as_posix()
            try:
                st = p.lstat()
            except OSError as e:
                r.problems.append(f"{rel}: cannot be read ({e.strerror})")
                continue
            if stat.S_ISLNK(st.st_mode):
                r.problems.append(f"{rel}: refused, a symbolic link")
                continue
            if not stat.S_ISREG(st.st_mode):
                r.problems.append(f"{rel}: refused, not a regular file")
                continue
            if not r.wanted(rel, wanted_names):
                r.skip(rel, st.st_size)
                continue
            try:
                with p.open("rb") as f:
                    r.add(rel, st.st_size, f.read, wanted_names)
            except OSError as e:
                r.problems.append(f"{rel}: cannot be read ({e.strerror})")
    return r


def _mib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n >> 20} MiB"


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

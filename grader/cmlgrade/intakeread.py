"""Reading what a submission holds (submission.py chooses the lab files
from it): the members of a .zip, a .tar.gz (.tgz, .tar) or a folder, under
the limits below. Nothing is extracted to disk as given: every member is
checked (a regular file, no absolute path, no '..') before a byte of
it is read into memory, only lab files and archives to look into (at most
MAX_NESTING deep) are read, any other file is listed by name, and an
archive that would expand past its bounds (a bomb) stops with a message.
Each problem becomes a message; nothing here raises for bad content but
IntakeError, for an archive that cannot be opened at all."""
from __future__ import annotations

import os
import stat
import tarfile
import zipfile
from dataclasses import dataclass
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
class _Member:
    path: str
    data: bytes


class IntakeError(Exception):
    """The submission cannot be read at all (the message says why)."""


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

"""The pristine kit built once per batch, reused by every submission.

Today's per-submission tree (buildtree.make_student_tree, then configure and
build) spends most of its time on what never changes: the CMake configure
and the kit's own objects (common/, each lab's host library, CUB's anchor,
Criterion's main). A slot is one such tree, configured and built once with
the pristine skeletons in labs/; a submission's lab is then built in a slot
by writing the student's files into labs/<lab>/ and building the same
targets with the same CMake: only the student's files are compiled and the
test binaries and runner linked against the prebuilt kit objects. The built
binaries are copied into the submission's own folder (the folder a fresh
tree would have built them in), where the run stage finds them.

After each lab the slot is put back: the student's files are replaced by the
skeletons and every object, translated source and binary the build wrote
(what it rewrote depends on the student's files) is deleted, so the next student's build sees no trace of this one (nothing of
theirs to include, nothing stale to link) and always compiles its own files.
Compiler messages are shown with the paths a fresh tree would have had, so
the feedback is the same byte for byte.

There is one slot per build worker (they build in parallel); each is
configured and built the first time a worker needs it, one slot at a time
(SlotPool)."""
from __future__ import annotations

import os
import re
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .build import TargetBuild, TreeBuild, build_target, clock, configure, native_args
from .buildtree import GRADING_EDITION, make_student_tree
from .sandbox import Executor

# What a lab build writes that carries the student's code: removed after each lab.
_BUILT_SUFFIXES = (".o", ".obj", ".d", ".cpp", ".ptx", ".cubin", ".fatbin")
# Of those, what the object checks (trust.py) read from the submission's build
# folder, copied there at the same relative path; text ones with the paths
# a fresh tree would have had.
_KEPT_SUFFIXES = (".o", ".obj", ".d", ".cpp")
_TEXT_SUFFIXES = (".d", ".cpp")


@dataclass
class Slot:
    index: int
    root: Path
    ready: bool = False
    setup_seconds: float = 0.0
    problem: str = ""

    @property
    def src(self) -> Path:
        return self.root / "src"

    @property
    def build(self) -> Path:
        return self.root / "build"


class SlotPool:
    """`count` slots under `work`/slots; `acquire()` hands one to a build
    worker for a whole submission, built.

    The slots are built one at a time, each with `jobs` compilers (the
    grader's every build job). A worker takes a built slot when one is free;
    else, when no slot is being built, it builds one; else it waits for
    either. So the first submission starts as soon as one build of the kit
    is done, and the others share the built slots while the rest are built.
    Built all at once, each with a few jobs, none was ready before all were:
    on a 32-core H200 host (six slots, a batch of ten beside a bench) the
    first submission waited more than three minutes."""

    def __init__(self, count: int, work: Path, kit: Path, skeletons: dict[str, dict[str, bytes]],
                 targets: list[str], arch: str, jobs: int, timeout: float, say=None):
        self.kit, self.skeletons, self.targets = kit, skeletons, targets
        self.arch, self.jobs, self.timeout = arch, max(1, jobs), timeout
        self.say = say or (lambda _m: None)
        self.slots = [Slot(i, work / "slots" / str(i)) for i in range(max(1, count))]
        self._free = list(self.slots)
        self._cv = threading.Condition()
        self._building = False   # a worker is building a slot's pristine kit

    @property
    def setup_seconds(self) -> float:
        """CPU seconds spent making the slots (once per batch, not per submission)."""
        return sum(s.setup_seconds for s in self.slots)

    def acquire(self, exe: Executor) -> Slot:
        """A free slot, built (or with its problem said): a built one if one
        is free; else, while no other is being built, one this worker builds
        now (with `exe`); else it waits for either."""
        with self._cv:
            while True:
                slot = next((s for s in self._free if s.ready or s.problem), None)
                build = slot is None and not self._building and bool(self._free)
                if build:
                    slot = self._free[0]
                    self._building = True
                if slot is not None:
                    self._free.remove(slot)
                    break
                self._cv.wait()
        if build:
            try:
                self._prepare(exe, slot)
            finally:
                with self._cv:
                    self._building = False
                    self._cv.notify_all()
        return slot

    def release(self, slot: Slot) -> None:
        with self._cv:
            self._free.append(slot)
            self._cv.notify_all()

    def _prepare(self, exe: Executor, slot: Slot) -> None:
        """Configures the slot and builds every student target once (the
        pristine kit's objects): slot.ready, or slot.problem if it fails."""
        t0 = clock()
        self.say(f"building the pristine kit in slot {slot.index} (once per batch)")
        if slot.root.exists():
            shutil.rmtree(slot.root, ignore_errors=True)
        slot.root.mkdir(parents=True)
        make_student_tree(self.kit, slot.root, self.skeletons)
        _date_now(slot.src)
        ok, log = configure(exe, slot.src, slot.build, self.arch, self.timeout, [slot.root], GRADING_EDITION)
        if not ok:
            slot.problem = "the pristine kit does not configure: " + log[-500:]
        else:
            r = exe.run(["cmake", "--build", str(slot.build), "-j", str(self.jobs), "--target", *self.targets,
                         *native_args(slot.build)],
                        cwd=slot.src, timeout=self.timeout * 2, writable=[slot.root])
            # A skeleton may not link (a step missing): its own objects are
            # rebuilt per student anyway; what matters is the kit's objects.
            if r.timed_out:
                slot.problem = "the pristine kit's build timed out"
            elif native_args(slot.build):
                self._say_stale(exe, slot)
        slot.setup_seconds = clock() - t0
        slot.ready = not slot.problem

    def _say_stale(self, exe: Executor, slot: Slot) -> None:
        """Builds the first slot's pristine kit again with Ninja's reasons
        (-d explain): nothing has changed, so it should build nothing. A
        kit object it builds again would be compiled in every student's
        build of its lab too (the kit's sources are dated now in the slot,
        _date_now; a header dated in the future is not): said once a
        batch."""
        if slot.index != 0:
            return
        r = exe.run(["cmake", "--build", str(slot.build), "-j", str(self.jobs), "--target", *self.targets, "--",
                     "-d", "explain", "-d", "keepdepfile"], cwd=slot.src, timeout=self.timeout * 2,
                    writable=[slot.root])
        stale = stale_objects(r.stdout + r.stderr)
        if stale:
            self.say(f"note: {len(stale)} of the kit's objects were built again right after the pristine build, "
                     f"with nothing changed: each build of their lab compiles them again; e.g. ninja: {stale[0]}")

    def build_lab(self, exe: Executor, slot: Slot, lab_name: str, files: dict[str, bytes], targets: list[str],
                  tree: Path, timeout: float, objects_only: tuple[str, ...] = ()) -> TreeBuild:
        """Builds `targets` with the student's `files` in the slot and copies
        the binaries that built into tree/build (`objects_only`: targets
        that make no binary, object libraries). Messages read as if built in
        tree/src and tree/build."""
        tb = TreeBuild(configured=slot.ready, configure_log=slot.problem)
        if not slot.ready:
            return tb
        lab_dir = slot.src / "labs" / lab_name
        out = tree / "build"
        out.mkdir(parents=True, exist_ok=True)
        since = time.time() - 1.0   # file systems with coarse times: a kit object rebuilt costs only time
        for name, data in files.items():
            (lab_dir / name).write_bytes(data)
        shown = (lambda text: _as_in_tree(text, slot, tree), tree / "src")
        try:
            # every target in one build (one start of cmake and of ninja or make, not one a target); where that fails,
            # each target on its own, so that each failure has its own messages (a build that timed out is not
            # tried again: each target would wait as long)
            together = build_target(exe, slot.src, slot.build, targets, 1, timeout, [slot.root], shown) \
                if len(targets) > 1 else None
            if together is not None:
                tb.seconds += together.seconds
            for t in targets:
                if together is not None and (together.ok or together.timed_out):
                    b = TargetBuild(t, together.ok, together.seconds / len(targets), together.errors,
                                    timed_out=together.timed_out)
                else:
                    b = build_target(exe, slot.src, slot.build, t, 1, timeout, [slot.root], shown)
                    tb.seconds += b.seconds
                tb.targets[t] = b
                if b.ok:
                    built = slot.build / t
                    if built.is_file():
                        shutil.copy2(built, out / t)
                    elif t not in objects_only:   # an object library makes objects, which _harvest copies
                        b.ok, b.errors = False, [f"grader error: the build made no {t}"]
            _harvest(slot, tree, since)
        finally:
            for name in files:
                sk = self.skeletons.get(lab_name, {}).get(name)
                p = lab_dir / name
                if sk is not None:
                    p.write_bytes(sk)
                elif p.exists():
                    p.unlink()
            _scrub(slot, targets, since, list(files))
        return tb


def _date_now(src: Path) -> None:
    """Dates every file of the slot's copy of the kit dated in the future
    (copied with its time from a machine whose clock is ahead) now. Ninja
    builds an object older than one of its sources again, and a student's
    build deletes what it wrote (_scrub): a kit object with a source dated
    ahead would be compiled in every student's build of its lab (on an
    H200 host labs 04 and 09, the two with CUB's anchor, took 9 to 11 s a
    build against 1.4 to 1.8 s here; a source dated a day ahead gives that
    here)."""
    now = time.time()
    for dirpath, _dirs, names in os.walk(src):
        for n in names:
            p = Path(dirpath) / n
            try:
                if p.lstat().st_mtime > now:
                    os.utime(p, (now, now), follow_symlinks=False)
            except OSError:
                pass


def stale_objects(explain: str) -> list[str]:
    """Ninja's -d explain lines that say why one of the kit's objects
    would be built again: not the student's files' objects (their sources
    in labs/), not a device-link object, not CMake's own glob check."""
    return [line.removeprefix("ninja explain: ") for line in explain.splitlines()
            if line.startswith("ninja explain: ") and re.search(r"\.o\b", line)
            and any(why in line for why in ("older than", "doesn't exist", "command line changed", "deps"))
            and not re.search(r"\.dir/labs/|cmake_device_link\.o|VerifyGlobs|verify_globs", line)]


def _as_in_tree(text: str, slot: Slot, tree: Path) -> str:
    return text.replace(str(slot.build), str(tree / "build")).replace(str(slot.src), str(tree / "src"))


def _written_since(build: Path, since: float, suffixes: tuple[str, ...]):
    for dirpath, _dirs, names in os.walk(build):
        for n in names:
            if n.endswith(suffixes):
                p = Path(dirpath) / n
                try:
                    if p.stat().st_mtime >= since:
                        yield p
                except FileNotFoundError:
                    pass


def _harvest(slot: Slot, tree: Path, since: float) -> None:
    """The student's objects, depfiles and translated sources, into
    tree/build where a fresh tree's build would have left them."""
    for p in list(_written_since(slot.build, since, _KEPT_SUFFIXES)):
        dest = tree / "build" / p.relative_to(slot.build)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if p.name.endswith(_TEXT_SUFFIXES):
            text = p.read_text(encoding="utf-8", errors="surrogateescape")
            dest.write_text(_as_in_tree(text, slot, tree), encoding="utf-8", errors="surrogateescape")
        else:
            shutil.copy2(p, dest)


def _kit_only(p: Path, student: list[str]) -> bool:
    """Whether `p`, written by a student's build, is an object compiled
    from the kit's files alone (or its depfile): the depfile beside it
    (X.o.d) names no file of the student's files' names (`student`), in
    any folder. Anything else (an object without a depfile, a device-link
    object, a translated source) may carry the student's code."""
    obj = p.with_suffix("") if p.name.endswith((".o.d", ".obj.d")) else p
    if not obj.name.endswith((".o", ".obj")) or obj.name == "cmake_device_link.o":
        return False
    try:
        deps = Path(str(obj) + ".d").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return not any(re.search(r"(^|[\s/\\])" + re.escape(name) + r"($|[\s:\\])", deps) for name in student)


def _scrub(slot: Slot, targets: list[str], since: float, student: list[str]) -> None:
    """Deletes the binaries and every object or translated source the build
    wrote since `since` that may carry the student's code (`student`: the
    names of their files): the next build recompiles its own
    files and relinks, and nothing of this student's code stays. A kit
    object the build wrote again (its depfile names none of the student's
    files) is kept: deleted, every later build would compile it again."""
    for t in targets:
        (slot.build / t).unlink(missing_ok=True)
    written = list(_written_since(slot.build, since, _BUILT_SUFFIXES))
    for p in [p for p in written if not _kit_only(p, student)]:
        p.unlink(missing_ok=True)

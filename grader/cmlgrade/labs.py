"""The lab registry, made from data only. A lab's identity and shape (stem,
student files, steps, sanitizer arguments, counters, kernel names, build
targets) come from the kit's description of its labs: <build>/kit/labs.json,
which the build writes from each labs/<lab>/lab.json, or, before a build,
the same fields derived here from the manifests (kit_description). Grading
policy comes from labs/<lab>/rubric.toml; the classic mistakes and their
feedback lines from solutions/<lab>/mistakes.toml. Nothing here knows a
particular lab."""
from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .rubric import CounterCheck, Rubric, RubricError, build_rubric, default_rubric_data, load_rubric, merge

FORMAT = 1
# The fields of a lab in <build>/kit/labs.json that the grader reads.
REQUIRED = ("name", "title", "stem", "files", "model", "steps", "sanitize", "counters", "kernels",
            "dir", "solution_dir", "kernel_file", "suite", "targets")


@dataclass(frozen=True)
class Step:
    num: int
    ident: str
    what: str
    where: str = ""  # the student file of the step


@dataclass(frozen=True)
class Mistake:
    name: str
    file: str
    step: int
    summary: str
    caught_by: str
    expect_failing: str = ""
    expect_message: str = ""
    feedback: str = ""   # the line a student reads when the results show this mistake
    kernel: str = ""     # regex: a sanitizer finding must name a matching kernel or device function
    finding: str = ""    # regex: ... and its first line must match
    tests: str = ""      # regex: a test (suite::name) whose failure is this mistake's signature (score.py)
    message: str = ""    # regex: ... and a message of that test's own that shows it


@dataclass(frozen=True)
class Targets:
    runner: str
    tests: str
    model_tests: str
    ref_suffix: str


@dataclass
class Lab:
    name: str
    stem: str
    title: str
    files: tuple[str, ...]
    model_file: str
    steps: tuple[Step, ...]
    rubric: Rubric
    sanitize: tuple[str, ...]                # runner arguments, one sanitizer run each
    counter_checks: tuple[CounterCheck, ...]
    kernels: str                             # regex: the lab's kernel and device function names
    suite: str                               # Criterion suite name of a step: "step{num}"
    targets: Targets
    dir: str                                 # labs/<lab>
    solution_dir: str                        # solutions/<lab>, or "" in a kit without solutions
    mistakes: tuple[Mistake, ...] = field(default_factory=tuple)
    harness: str = ""   # the kit-only checker's harness target (checker.py), set by the pipeline
    extra_targets: tuple[str, ...] = ()   # built for the object checks only (the CUDA kernels on the CPU path)
    cpu: bool = False   # graded on the CPU path (no GPU here): the *_cpu test programs and runner

    @property
    def kernel_file(self) -> str:
        return self.files[0]

    @property
    def runner(self) -> str:
        return self.targets.runner + ("_cpu" if self.cpu else "")

    def step(self, num: int) -> Step | None:
        for s in self.steps:
            if s.num == num:
                return s
        return None

    def step_of_suite(self, suite: str) -> int | None:
        m = re.fullmatch(suite_regex(self.suite), suite)
        return int(m.group(1)) if m else None

    def sanitizer_args(self) -> list[str]:
        """The runner arguments of each sanitizer run: the manifest's, the
        first rubric.sanitizers.max_configs of them when that is set."""
        n = self.rubric.sanitizers.max_configs
        return list(self.sanitize[:n] if n else self.sanitize)

    def test_binaries(self) -> tuple[str, ...]:
        tests = self.targets.tests + ("_cpu" if self.cpu and self.targets.tests else "")
        return tuple(t for t in (self.targets.model_tests, tests) if t)

    def student_targets(self) -> list[str]:
        """Build targets, in build order: each is built on its own so that one
        file's compile error costs only what depends on it."""
        return (list(self.test_binaries()) + [self.runner] + ([self.harness] if self.harness else [])
                + list(self.extra_targets))

    def ref_name(self, target: str) -> str:
        """The reference's build of a student target (the CPU path's suffix last)."""
        if self.cpu and target.endswith("_cpu"):
            return target.removesuffix("_cpu") + self.targets.ref_suffix + "_cpu"
        return target + self.targets.ref_suffix

    def ref_targets(self) -> list[str]:
        """The reference's test programs and runner (last)."""
        return [self.ref_name(t) for t in list(self.test_binaries()) + [self.runner]]

    def max_points(self, hidden: bool) -> float:
        """Everything the rubric can give (before exclusions). A step's test
        points are the same with or without the hidden run: with a secret
        seed, hidden_share of them move to the hidden data."""
        r = self.rubric
        return (sum(r.tests.step_points(s.num) for s in self.steps) + sum(r.sanitizers.points.values())
                + sum(c.points for c in self.counter_checks) + sum(c.points for c in r.static)
                + r.performance.points_per_step * len(r.performance.steps))


class LabError(Exception):
    pass


def suite_regex(pattern: str) -> str:
    """'step{num}' -> 'step(\\d+)'."""
    if pattern.count("{num}") != 1:
        raise LabError(f"suite pattern '{pattern}' must hold {{num}} once")
    a, b = pattern.split("{num}")
    return re.escape(a) + r"(\d+)" + re.escape(b)


# ------------------------------------------------------------ the kit's description

def derive(manifest: dict, has_solutions: bool) -> dict:
    """A manifest with the fields the build adds for <build>/kit/labs.json
    (cmake/KitManifest.cmake, kit_manifest_description)."""
    d = {k: v for k, v in manifest.items() if k != "about"}
    name, stem = d.get("name", ""), d.get("stem", "")
    d["dir"] = f"labs/{name}"
    d["solution_dir"] = f"solutions/{name}" if has_solutions else ""
    d["kernel_file"] = (d.get("files") or [""])[0]
    d["suite"] = "step{num}"
    d["targets"] = {"runner": f"{stem}_run", "tests": f"test_{stem}",
                    "model_tests": f"test_{stem}_model" if d.get("model") else "", "ref_suffix": "_ref"}
    return d


_EDITION = re.compile(r'^set\(KIT_EDITION "(developer|student|grading)" CACHE', re.M)


def kit_edition(kit: Path) -> str:
    """What the kit's CMakeLists.txt says it is (KIT_EDITION's default):
    "developer" (the repository: the reference solutions are there) or
    "student" (a release, tools/release); a kit that says neither is taken
    for a developer kit, which its configure checks."""
    try:
        m = _EDITION.search((kit / "CMakeLists.txt").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        m = None
    return m.group(1) if m else "developer"


def manifests(kit: Path) -> list[dict]:
    """labs/*/lab.json of the kit, in name order, with the build's fields
    (solution_dir: the developer kit's solutions/<lab>, kit_edition)."""
    solutions = kit_edition(kit) == "developer"
    out = []
    for path in sorted((kit / "labs").glob("*/lab.json")):
        try:
            m = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise LabError(f"{path}: not a readable manifest: {e}") from e
        if not isinstance(m, dict) or m.get("name") != path.parent.name:
            raise LabError(f"{path}: its \"name\" must be the folder's name, {path.parent.name}")
        out.append(derive(m, solutions))
    return out


def kit_description(kit: Path, build_dir: Path | None = None) -> list[dict]:
    """The labs of the kit: <build_dir>/kit/labs.json when the build wrote
    it, else the same fields made from labs/*/lab.json."""
    written = build_dir / "kit" / "labs.json" if build_dir else None
    if written is not None and written.is_file():
        try:
            data = json.loads(written.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise LabError(f"{written}: not readable: {e}") from e
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("labs"), list):
            raise LabError(f"{written}: expected {{\"format\": {FORMAT}, \"labs\": [...]}}")
        return data["labs"]
    return manifests(kit)


# ------------------------------------------------------------ one lab

def _steps(d: dict) -> tuple[Step, ...]:
    steps = tuple(Step(int(s["num"]), str(s["ident"]), str(s.get("title", "")), str(s.get("file", "")))
                  for s in d["steps"])
    nums = [s.num for s in steps]
    if not steps or nums != list(range(1, len(nums) + 1)):
        raise LabError(f"{d['name']}: steps are {nums}, expected 1..{len(nums)}")
    return steps


def _counter_checks(d: dict, rubric: Rubric) -> tuple[CounterCheck, ...]:
    """One check per step the manifest's counters expect something of; the
    rubric gives points and feedback."""
    checks = []
    for c in d.get("counters") or []:
        for step, expect in sorted((c.get("expect") or {}).items(), key=lambda kv: int(kv[0])):
            if expect not in ("zero", "nonzero"):
                raise LabError(f"{d['name']}: counters expect '{expect}' for step {step} (zero or nonzero)")
            n = int(step)
            checks.append(CounterCheck(step=n, expect=expect, points=rubric.counters.step_points(n),
                                       feedback=rubric.counters.feedback.get(n, ""), metric=c.get("metric", "")))
    return tuple(checks)


def _toml(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise LabError(f"{path}: not valid TOML: {e}") from e


def load_mistakes(path: Path, default_file: str) -> tuple[Mistake, ...]:
    """The catalogue of classic mistakes (solutions/<lab>/mistakes.toml) with
    the line a student reads for each (feedback.toml beside it: a table per
    mistake with feedback, kernel, finding; the same keys in a [[mistake]]
    entry work too). Instructor side: absent in a student's copy is fine."""
    if not path.is_file():
        return ()
    entries = _toml(path).get("mistake", [])
    fb_path = path.parent / "feedback.toml"
    fb = _toml(fb_path) if fb_path.is_file() else {}
    stray = sorted(set(fb) - {m.get("name") for m in entries})
    if stray:
        raise LabError(f"{fb_path}: feedback for mistakes not in {path.name}: {', '.join(stray)}")
    out = []
    for m in entries:
        extra = dict(m)
        extra.update(fb.get(m["name"], {}))
        if not extra.get("feedback"):
            raise LabError(f"{fb_path}: mistake {m['name']} has no feedback line ([{m['name']}] feedback = \"...\")")
        for key in ("kernel", "finding", "tests", "message"):
            try:
                re.compile(extra.get(key, ""))
            except re.error as e:
                raise LabError(f"{fb_path}: [{m['name']}] {key}: bad regular expression: {e}") from e
        out.append(Mistake(name=m["name"], file=m.get("file", default_file), step=int(m["step"]),
                           summary=m.get("summary", ""), caught_by=m["caught_by"],
                           expect_failing=m.get("expect_failing", ""), expect_message=m.get("expect_message", ""),
                           feedback=extra["feedback"], kernel=extra.get("kernel", ""),
                           finding=extra.get("finding", ""), tests=extra.get("tests", ""),
                           message=extra.get("message", "")))
    return tuple(out)


def _with_overrides(mistakes: tuple[Mistake, ...], rubric: Rubric, lab: str) -> tuple[Mistake, ...]:
    """An instructor's override may replace a mistake's feedback (policy)."""
    unknown = sorted(set(rubric.mistakes) - {m.name for m in mistakes})
    if unknown:
        raise RubricError(f"{lab}: feedback for mistakes not in the catalogue: {', '.join(unknown)}")
    out = []
    for m in mistakes:
        o = rubric.mistakes.get(m.name)
        if o is not None:
            m = Mistake(m.name, m.file, m.step, m.summary, m.caught_by, m.expect_failing, m.expect_message,
                        o.feedback, o.kernel or m.kernel, o.finding or m.finding, m.tests, m.message)
        out.append(m)
    return tuple(out)


def make_lab(kit: Path, d: dict, rubric_dir: Path | None, override: dict | None) -> Lab:
    missing = [k for k in REQUIRED if k not in d]
    if missing:
        raise LabError(f"{d.get('name', '?')}: the kit's description lacks {', '.join(missing)}")
    name = d["name"]
    try:
        if not d["kernels"]:
            raise re.error("empty")
        re.compile(d["kernels"])
    except re.error as e:
        raise LabError(f"{name}: the manifest's \"kernels\" is not a usable regular expression ({e})") from e
    # the lab's own labs/<lab>/rubric.toml (a test's rubric_dir: <rubric_dir>/<lab>.toml)
    path = rubric_dir / f"{name}.toml" if rubric_dir else kit / d["dir"] / "rubric.toml"
    if path.is_file():
        rubric = load_rubric(path, override, d["files"])
    else:  # never skipped: graded with the default policy, and the run says so
        data = default_rubric_data()
        rubric = build_rubric(merge(data, override) if override else data,
                              f"the default policy (no {path.name} in {path.parent})", d["files"])
        rubric.is_default = True
    steps = _steps(d)
    t = d["targets"]
    lab = Lab(name=name, stem=d["stem"], title=rubric.lab.title or d["title"], files=tuple(d["files"]),
              model_file=d.get("model") or "", steps=steps, rubric=rubric,
              sanitize=tuple(d["sanitize"]) or ("",), counter_checks=_counter_checks(d, rubric),
              kernels=d["kernels"], suite=d["suite"],
              targets=Targets(t["runner"], t["tests"], t.get("model_tests", ""), t.get("ref_suffix", "_ref")),
              dir=d["dir"], solution_dir=d["solution_dir"])
    rubric.check_steps([s.num for s in steps], [c.step for c in lab.counter_checks])
    mistakes = load_mistakes(kit / d["solution_dir"] / "mistakes.toml", d["kernel_file"]) if d["solution_dir"] else ()
    lab.mistakes = _with_overrides(mistakes, rubric, name) if mistakes else ()
    return lab


def load_labs(kit: Path, rubric_dir: Path | None = None, override: dict | None = None,
              only: list[str] | None = None, build_dir: Path | None = None) -> list[Lab]:
    """Every lab of the kit (one per labs/<lab>/lab.json), sorted by name.
    `override` is the parsed instructor file ({lab name: table}); each
    lab's rubric is its labs/<lab>/rubric.toml (`rubric_dir`: <dir>/<lab>.toml
    instead, for tests)."""
    desc = kit_description(kit, build_dir)
    known = [d.get("name", "") for d in desc]
    if only:
        missing = sorted(set(only) - set(known))
        if missing:
            raise LabError(f"unknown lab(s): {', '.join(missing)} (known: {', '.join(known) or 'none'})")
    stray = sorted(set(override or {}) - set(known))
    if stray:
        raise RubricError(f"the rubric override names lab(s) the kit does not have: {', '.join(stray)}")
    return [make_lab(kit, d, rubric_dir, (override or {}).get(d["name"])) for d in desc
            if not only or d["name"] in only]


def same_shape(a: list[Lab], b: list[Lab]) -> list[str]:
    """What differs between two registries of the same labs (the manifests
    read before the build, the build's labs.json after it)."""
    out = []
    for x, y in zip(a, b):
        for f in ("name", "stem", "files", "model_file", "steps", "sanitize", "counter_checks", "kernels",
                  "suite", "targets"):
            if getattr(x, f) != getattr(y, f):
                out.append(f"{x.name}: {f}")
    if [x.name for x in a] != [y.name for y in b]:
        out.append("the list of labs")
    return out

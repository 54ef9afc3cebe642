"""The lab registry, made from data only. A lab's identity and shape (stem,
student files, steps, sanitizer arguments, counters, kernel names, build
targets) come from the kit's description of its labs: <build>/kit/labs.json,
which the build writes from each labs/<lab>/lab.json, or, before a build,
the same fields derived here from the manifests (kit_description). Grading
policy comes from labs/<lab>/rubric.toml; the classic mistakes and their
feedback lines from solutions/<lab>/mistakes.toml. Nothing here knows a
particular lab.

This module makes each lab of the description, with its rubric and its
catalogue of mistakes; what a lab is (Lab, Step, Mistake, Targets) is
labtypes.py's, and reading the kit's description kitdesc.py's."""
from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

from .kitdesc import kit_description
from .labtypes import Lab, LabError, Mistake, Picture, Step, Targets
from .rubric import CounterCheck, Rubric, RubricError, build_rubric, default_rubric_data, load_rubric, merge

# names this module defined before labtypes.py and kitdesc.py were split from it: importable from here still
from .kitdesc import FORMAT, derive, kit_edition, manifests  # noqa: F401
from .labtypes import suite_regex  # noqa: F401

# The fields of a lab in <build>/kit/labs.json that the grader reads.
REQUIRED = ("name", "title", "stem", "files", "model", "steps", "sanitize", "counters", "kernels",
            "dir", "solution_dir", "kernel_file", "suite", "targets")


# ------------------------------------------------------------ one lab

def _steps(d: dict) -> tuple[Step, ...]:
    steps = tuple(Step(int(s["num"]), str(s["ident"]), str(s.get("title", "")), str(s.get("file", "")))
                  for s in d["steps"])
    nums = [s.num for s in steps]
    if not steps or nums != list(range(1, len(nums) + 1)):
        raise LabError(f"{d['name']}: steps are {nums}, expected 1..{len(nums)}")
    return steps


def _pictures(d: dict) -> tuple[Picture, ...]:
    """The manifest's optional pictures of steps' memory access (checked by
    the build's cmake/KitManifest.cmake; here only their shape)."""
    pics = d.get("pictures") or []
    if not isinstance(pics, list) or not all(isinstance(p, dict) for p in pics):
        raise LabError(f"{d['name']}: \"pictures\" must be a list of {{step, args, shows}}")
    try:
        return tuple(Picture(int(p["step"]), str(p.get("args", "")), str(p.get("shows", ""))) for p in pics)
    except (KeyError, TypeError, ValueError) as e:
        raise LabError(f"{d['name']}: a \"pictures\" entry without a step number ({e})") from e


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
                           message=extra.get("message", ""), gpu_only=m.get("gpu_only", "")))
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
            m = dataclasses.replace(m, feedback=o.feedback, kernel=o.kernel or m.kernel,
                                    finding=o.finding or m.finding)
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
              dir=d["dir"], solution_dir=d["solution_dir"], pictures=_pictures(d))
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

"""A rubric's data (its TOML, an override already merged) validated into a
Rubric (rubrictypes.py): every table and key checked for its type and
allowed values, each regular expression compiled, a key that moved to the
lab's manifest refused with where it is now, and what is left out given
its default. An error names the file and the key."""
from __future__ import annotations

import re

from .rubrictypes import (CountersRubric, LabInfo, MistakeFeedback, PerformanceRubric, Rubric, RubricError,
                          SanitizersRubric, StaticCheck, TechniqueRubric, TechniqueSass, TestsRubric)

VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")


# Keys that moved to the lab's manifest (or the mistake catalogue): a rubric
# that still has them is stopped with the place to look.
MOVED = {"lab.name": "the manifest's \"name\" (labs/<lab>/lab.json)",
         "lab.stem": "the manifest's \"stem\"", "lab.files": "the manifest's \"files\"",
         "lab.model_file": "the manifest's \"model\"", "lab.steps_macro": "the manifest's \"steps\"",
         "tests.binaries": "the manifest (targets in <build>/kit/labs.json)",
         "sanitizers.runner_args": "the manifest's \"sanitize\"",
         "counters.check": "the manifest's \"counters\" (expectations) and [counters.points]/[counters.feedback]"}


class _Reader:
    def __init__(self, source: str):
        self.source = source

    def err(self, key: str, msg: str) -> RubricError:
        return RubricError(f"{self.source}: {key}: {msg}")

    def get(self, table: dict, key: str, kind, where: str, default=..., check=None):
        if key not in table:
            if default is ...:
                raise self.err(f"{where}.{key}", "missing")
            return default
        v = table[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if float in kinds and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        if not isinstance(v, kinds) or (isinstance(v, bool) and bool not in kinds):
            raise self.err(f"{where}.{key}", f"expected {' or '.join(k.__name__ for k in kinds)}, got {v!r}")
        if check and not check(v):
            raise self.err(f"{where}.{key}", f"value {v!r} is not allowed")
        return v

    def vis(self, table: dict, key: str, where: str, default: str = "visible") -> str:
        v = self.get(table, key, str, where, default)
        if v not in VISIBILITIES:
            raise self.err(f"{where}.{key}", f"'{v}' is not one of {', '.join(VISIBILITIES)}")
        return v


def _nonneg(v) -> bool:
    return v >= 0


def _regex(r: _Reader, pattern: str, where: str) -> str:
    try:
        re.compile(pattern)
    except re.error as e:
        raise r.err(where, f"bad regular expression: {e}") from e
    return pattern


def _step_table(r: _Reader, table: dict, key: str, where: str, kind) -> dict:
    out = {}
    for k, v in r.get(table, key, dict, where, {}).items():
        if not str(k).isdigit():
            raise r.err(f"{where}.{key}.{k}", "keys are step numbers, like \"3\" = ...")
        out[int(k)] = r.get({"v": v}, "v", kind, f"{where}.{key}.{k}", check=_nonneg if kind is float else None)
    return out


def build_rubric(data: dict, source: str, files: list[str] | tuple[str, ...]) -> Rubric:
    """`files`: the lab's student files (from its manifest), which static
    checks may name."""
    r = _Reader(source)
    files = list(files)
    for key in data:
        if key not in ("lab", "tests", "sanitizers", "counters", "static", "performance", "mistakes", "technique"):
            raise r.err(key, "unknown table")
    for dotted, where in MOVED.items():
        table, key = dotted.split(".")
        if isinstance(data.get(table), dict) and key in data[table]:
            raise r.err(dotted, f"no longer in a rubric (policy only): it is {where}")
    lab_t = r.get(data, "lab", dict, "rubric", {})
    lab = LabInfo(
        title=r.get(lab_t, "title", str, "lab", ""),
        time_limit_s=r.get(lab_t, "time_limit_s", float, "lab", 1800.0, _nonneg),
        build_timeout_s=r.get(lab_t, "build_timeout_s", float, "lab", 900.0, _nonneg),
    )

    t = r.get(data, "tests", dict, "rubric", {})
    points = {}
    for k, v in r.get(t, "points", dict, "tests", {}).items():
        if not str(k).isdigit():
            raise r.err(f"tests.points.{k}", "keys are step numbers, like \"3\" = 10")
        points[int(k)] = r.get({"v": v}, "v", float, f"tests.points.{k}", check=_nonneg)
    step_feedback = {int(k): v for k, v in r.get(t, "step_feedback", dict, "tests", {}).items()
                     if str(k).isdigit()}
    tests = TestsRubric(
        default_points=r.get(t, "default_points", float, "tests", 10.0, _nonneg),
        points=points,
        hidden_share=r.get(t, "hidden_share", float, "tests", 0.0, lambda v: 0 <= v <= 1),
        visibility=r.vis(t, "visibility", "tests"),
        hidden_visibility=r.vis(t, "hidden_visibility", "tests", "after_due_date"),
        feedback=r.get(t, "feedback", str, "tests", "step {step} ({ident}): {failed} of {total} tests fail"),
        step_feedback=step_feedback,
        step_time_limit_s=r.get(t, "step_time_limit_s", float, "tests", 240.0, _nonneg),
    )

    s = r.get(data, "sanitizers", dict, "rubric", {})
    spoints = {}
    for k, v in r.get(s, "points", dict, "sanitizers", {}).items():
        if k not in SANITIZER_TOOLS:
            raise r.err(f"sanitizers.points.{k}", f"unknown tool (known: {', '.join(SANITIZER_TOOLS)})")
        spoints[k] = r.get({"v": v}, "v", float, f"sanitizers.points.{k}", check=_nonneg)
    sanitizers = SanitizersRubric(points=spoints,
                                  max_configs=r.get(s, "max_configs", int, "sanitizers", 0, _nonneg),
                                  timeout_s=r.get(s, "timeout_s", float, "sanitizers", 600.0, _nonneg),
                                  visibility=r.vis(s, "visibility", "sanitizers"),
                                  feedback=r.get(s, "feedback", str, "sanitizers",
                                                 "compute-sanitizer {tool} is not clean: {summary}"),
                                  cpu_feedback=r.get(s, "cpu_feedback", str, "sanitizers",
                                                     "the {check} is not clean: {summary}"))

    c = r.get(data, "counters", dict, "rubric", {})
    counters = CountersRubric(default_points=r.get(c, "default_points", float, "counters", 1.0, _nonneg),
                              points=_step_table(r, c, "points", "counters", float),
                              feedback=_step_table(r, c, "feedback", "counters", str),
                              visibility=r.vis(c, "visibility", "counters"),
                              timeout_s=r.get(c, "timeout_s", float, "counters", 600.0, _nonneg))

    statics = []
    names = set()
    for i, st in enumerate(r.get(data, "static", list, "rubric", [])):
        where = f"static[{i}]"
        if not isinstance(st, dict):
            raise r.err(where, "expected a table")
        sass = r.get(st, "sass_kernel", str, where, "")
        ksteps = r.get(st, "steps", list, where, [])
        if not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in ksteps):
            raise r.err(f"{where}.steps", "a list of step numbers")
        # the resources of the steps' kernels: max_registers, no_local_memory / local_memory
        max_regs = r.get(st, "max_registers", int, where, 0, lambda v: 1 <= v <= 255) if "max_registers" in st \
            else None
        local = r.get(st, "local_memory", str, where, "", lambda v: v in ("none", "required"))
        if "no_local_memory" in st:
            if r.get(st, "no_local_memory", bool, where) is not True:
                raise r.err(f"{where}.no_local_memory", "only true (leave it out otherwise)")
            if local == "required":
                raise r.err(where, "no_local_memory = true and local_memory = \"required\" contradict each other")
            local = "none"
        resource = max_regs is not None or bool(local)
        if resource and not ksteps:
            raise r.err(where, "max_registers and local memory are checked on the kernels of steps = [...]")
        if resource and "require" not in st and "forbid" not in st:
            st = dict(st, require=[])
        elif ("require" in st) == ("forbid" in st):
            raise r.err(where, "give exactly one of require = '<regex>' or forbid = '<regex>' (or, with steps, "
                               "max_registers / no_local_memory / local_memory)")
        mode = "require" if "require" in st else "forbid"
        if sass and ksteps:
            raise r.err(where, "give steps = [...] (the kernels those steps launch) or sass_kernel = '<regex>', "
                               "not both")
        scope = r.get(st, "scope", str, where, "launched", lambda v: v in ("launched", "template"))
        pats = st.get(mode)
        pats = [pats] if isinstance(pats, str) else pats
        if not isinstance(pats, list) or not (pats or resource) or not all(isinstance(x, str) for x in pats):
            raise r.err(f"{where}.{mode}", "a regex, or (with steps or sass_kernel) a list of regexes")
        if not sass and not ksteps and len(pats) != 1:
            raise r.err(f"{where}.{mode}", "a list of regexes needs steps or sass_kernel")
        name = r.get(st, "name", str, where)
        if name in names:
            raise r.err(where, f"duplicate static check name '{name}'")
        names.add(name)
        f = r.get(st, "file", str, where, files[0])
        if f != "*" and f not in files:
            raise r.err(f"{where}.file", f"'{f}' is not one of the lab's files ({', '.join(files)}) or '*'")
        step = r.get(st, "step", int, where, 0, _nonneg) or (min(ksteps) if ksteps else None)
        statics.append(StaticCheck(
            name=name, file=f, pattern=_regex(r, pats[0] if pats else "", f"{where}.{mode}"), mode=mode,
            max_registers=max_regs, local_memory=local,
            sass_kernel=_regex(r, sass, f"{where}.sass_kernel"), step=step, steps=ksteps, scope=scope,
            patterns=[_regex(r, x, f"{where}.{mode}") for x in pats],
            points=r.get(st, "points", float, where, 1.0, _nonneg), feedback=r.get(st, "feedback", str, where, ""),
            zero_lab=r.get(st, "zero_lab", bool, where, False),
            strings=r.get(st, "strings", str, where, "strip" if mode == "require" else "keep",
                          lambda v: v in ("strip", "keep")),
            visibility=r.vis(st, "visibility", where)))

    p = r.get(data, "performance", dict, "rubric", {})
    steps = r.get(p, "steps", list, "performance", [])
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in steps):
        raise r.err("performance.steps", "a list of step numbers")
    perf = PerformanceRubric(
        steps=steps, points_per_step=r.get(p, "points_per_step", float, "performance", 0.0, _nonneg),
        full_credit_ratio=r.get(p, "full_credit_ratio", float, "performance", 1.2, lambda v: v >= 1.0),
        repeats=r.get(p, "repeats", int, "performance", 3, lambda v: v >= 1),
        runner_args=r.get(p, "runner_args", str, "performance", ""),
        timeout_s=r.get(p, "timeout_s", float, "performance", 300.0, _nonneg),
        visibility=r.vis(p, "visibility", "performance"),
        feedback=r.get(p, "feedback", str, "performance",
                       "step {step}: {ratio:.2f}x the reference's time (full credit at {full:.1f}x or less)"))

    mistakes = {}
    for name, m in r.get(data, "mistakes", dict, "rubric", {}).items():
        if not isinstance(m, dict):
            raise r.err(f"mistakes.{name}", "expected a table with feedback = \"...\"")
        mistakes[name] = MistakeFeedback(feedback=r.get(m, "feedback", str, f"mistakes.{name}"),
                                         kernel=_regex(r, r.get(m, "kernel", str, f"mistakes.{name}", ""),
                                                       f"mistakes.{name}.kernel"),
                                         finding=_regex(r, r.get(m, "finding", str, f"mistakes.{name}", ""),
                                                        f"mistakes.{name}.finding"))
    t = r.get(data, "technique", dict, "rubric", {})
    shared = r.get(t, "shared_steps", list, "technique", [])
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in shared):
        raise r.err("technique.shared_steps", "a list of step numbers")
    rules = []
    for i, x in enumerate(r.get(t, "sass", list, "technique", [])):
        where = f"technique.sass[{i}]"
        if not isinstance(x, dict):
            raise r.err(where, "expected a table with steps, require or forbid, and feedback")
        ss = r.get(x, "steps", list, where)
        if not ss or not all(isinstance(v, int) and not isinstance(v, bool) for v in ss):
            raise r.err(f"{where}.steps", "a list of step numbers")
        pats = {}
        for mode in ("require", "forbid"):
            v = x.get(mode, [])
            v = [v] if isinstance(v, str) else v
            if not isinstance(v, list) or not all(isinstance(y, str) for y in v):
                raise r.err(f"{where}.{mode}", "a list of instruction regexes")
            pats[mode] = [_regex(r, y, f"{where}.{mode}") for y in v]
        if not pats["require"] and not pats["forbid"]:
            raise r.err(where, "give require = [...] or forbid = [...]")
        rules.append(TechniqueSass(ss, pats["require"], pats["forbid"], r.get(x, "feedback", str, where)))
    technique = TechniqueRubric(shared_steps=shared, sass=rules,
                                feedback=r.get(t, "feedback", str, "technique", TechniqueRubric.feedback),
                                min_share=r.get(t, "min_share", float, "technique", TechniqueRubric.min_share,
                                                lambda v: 0 <= v <= 1),
                                share_feedback=r.get(t, "share_feedback", str, "technique",
                                                     TechniqueRubric.share_feedback))
    return Rubric(source=source, lab=lab, tests=tests, sanitizers=sanitizers, counters=counters, static=statics,
                  performance=perf, mistakes=mistakes, technique=technique)

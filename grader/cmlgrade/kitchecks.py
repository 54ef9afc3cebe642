"""The kit-only checker's verdicts in a lab's run (run_kit_checks): each
step's verdict on the public and (with a secret seed) hidden data, the test
lines they become (a line of its own among the public tests; the hidden
tests' outcomes), and the technique checks that fail a step whose outputs
are right but whose launches break the rubric's rule: too few shared-memory
loads on a trace of what it launched, against the reference's
(reference_traces), or SASS that breaks a [[technique.sass]] rule. See
docs/grading.md §8."""
from __future__ import annotations

import re
from functools import partial
from pathlib import Path

from .labs import Lab


# ------------------------------------------------------------ the kit-only checker's verdicts

def harness_target(lab: Lab, cpu: bool) -> str | None:
    """The build target of a lab's harness (checker.py), None without one."""
    from .checker import has_checker
    if not has_checker(lab.name):
        return None
    return f"{lab.stem}_harness" + ("_cpu" if cpu else "")


# The kit-only checker's line among a run's test results (run_kit_checks): a test binary of its own, so a step
# whose checker fails is not a passing step for the sanitizers and timings, while Criterion's tests keep theirs.
KIT_CHECK_BINARY = "kit-only checker"
KIT_CHECK_TEST = "kit_only_check"


def run_kit_checks(exe, lab: Lab, run, ref, harness: Path, seeds: list[tuple[str, int | None]], public_seed: int,
                   out: Path, step_limit: float, deadline, env: dict[str, str], readable: list[Path],
                   cpu: bool, per_gpu: int = 1) -> None:
    """Each step's verdict from the kit-only checker, public and (with a
    secret seed) hidden data, kept in run.checks. Public data: Criterion's
    outcomes stay what each test saw; a step the checker fails gets one more
    failing outcome of its own (binary KIT_CHECK_BINARY, its failing cases),
    and score.py caps the step's credit at the checker's share of right cases
    (Criterion's report can lower a grade, never raise it). The hidden tests
    are the checker's verdict alone (no student process ever gets the secret
    seed). On a GPU the cases are shared among GPU_SIDE_BY_SIDE / per_gpu harness
    processes side by side (at least one): with --per-gpu N the other
    submissions on the GPU run beside them, and each process makes a CUDA
    context of its own."""
    from .checker import check_step, check_together, together_parts
    from .parsers import TestOutcome
    from .results import BinaryRun
    from .run import GPU_SIDE_BY_SIDE, side_by_side

    def one(kind: str, seed: int, step: int):
        if deadline.expired():
            from .checker import StepVerdict
            return StepVerdict(False, note="not run: the lab's time limit ran out")
        return check_step(exe, harness, lab.name, step, seed, out, deadline.limit(step_limit), env, readable, cpu,
                          kind)
    # every step of both seeds in one harness process, within one step's limit (on a GPU the steps shared
    # among GPU_SIDE_BY_SIDE / per_gpu processes side by side, of about the same data each); what that run does not
    # settle (a CUDA error, a hang, a crash) a step a process, on a GPU several at once (on the CPU path
    # each uses every core)
    wanted = [(kind, public_seed if seed is None else seed, s.num) for s in lab.steps for kind, seed in seeds]
    width = 1 if cpu else max(1, GPU_SIDE_BY_SIDE // max(1, per_gpu))
    got = {}
    if not deadline.expired():
        def together(part):
            return check_together(exe, harness, lab.name, part, out, deadline.limit(step_limit), env, readable, cpu)
        for settled in side_by_side([partial(together, p) for p in together_parts(lab.name, wanted, cpu, width)],
                                    width):
            got.update(settled)
    rest = [k for k in wanted if k not in got]
    got.update(zip(rest, side_by_side([lambda k=k: one(*k) for k in rest], width)))
    for key in wanted:
        run.checks.setdefault(key[0], {})[key[2]] = got[key]
    _technique(exe, lab, run, harness, public_seed, out, step_limit, deadline, env, readable, cpu, ref)
    # public: the checker's failing cases are a line of their own, not every test's message
    mine = BinaryRun(KIT_CHECK_BINARY, True)
    for s in lab.steps:
        v = run.checks.get("public", {}).get(s.num)
        if v is not None and v.ok is False:
            o = TestOutcome(lab.suite.format(num=s.num), KIT_CHECK_TEST, "FAILED", _verdict_lines(v))
            mine.outcomes[o.key] = o
    if mine.outcomes:
        run.tests.setdefault("public", {})[KIT_CHECK_BINARY] = mine
    if "hidden" not in run.checks:
        return
    # hidden: the reference's hidden test list, each test the checker's verdict on its step
    run.tests["hidden"] = {}
    for b, rb in ref.tests.get("hidden", {}).items():
        mine = BinaryRun(b, True)
        for key, o in rb.outcomes.items():
            v = run.checks["hidden"].get(lab.step_of_test(o) or 0)
            if v is None or v.ok is None:
                mine.outcomes[key] = TestOutcome(o.suite, o.name, "SKIPPED", [v.note if v else "not checked"])
            else:
                mine.outcomes[key] = TestOutcome(o.suite, o.name, "PASSED" if v.ok else "FAILED",
                                                 [] if v.ok else _verdict_lines(v))
        run.tests["hidden"][b] = mine


def traced_steps(lab: Lab, sass: bool = True) -> list[int]:
    """The steps whose launches the technique checks trace: the rubric's
    shared steps and, where there is SASS to read, its [[technique.sass]]
    steps and its SASS checks' steps."""
    tech = lab.rubric.technique
    steps = set(tech.shared_steps)
    if sass:
        steps |= {s for x in tech.sass for s in x.steps} | {s for c in lab.rubric.static for s in c.steps}
    return sorted(steps)


def reference_traces(exe, lab: Lab, harness: Path, seed: int, out: Path, timeout: float, env: dict[str, str],
                     cpu: bool) -> dict[int, object]:
    """The reference harness's traces of the lab's shared steps (what
    _technique compares a student's shared-memory loads with), on the same
    cases as the student's; a step that could not be traced is left out."""
    from .checker import trace_steps
    if not lab.rubric.technique.min_share or not harness.is_file():
        return {}
    traced = trace_steps(exe, harness, lab.name, lab.rubric.technique.shared_steps, seed, out, timeout, env, [], cpu,
                         "reference")
    return {s: tr for s, (tr, _) in traced.items() if tr is not None}


def _share_floor(lab: Lab, step: int, seed: int, cpu: bool, ref_traces: dict[int, object]) -> tuple[float, int] | None:
    """The fewest shared loads a reference's shared step makes on the same
    traced cases as `step` (the lab's steps that run the same cases), and
    that step; None without a reference trace of any."""
    from .checker import trace_cases
    mine = [c.label for c in trace_cases(lab.name, seed, cpu, step)]
    same = [(tr.loads, s) for s, tr in ref_traces.items()
            if [c.label for c in trace_cases(lab.name, seed, cpu, s)] == mine and tr.loads > 0]
    return min(same) if same else None


def _technique(exe, lab: Lab, run, harness: Path, seed: int, out: Path, step_limit: float, deadline, env, readable,
               cpu: bool, ref=None) -> None:
    """The technique checks of the steps whose outputs are right, on a trace
    of what each step launched (checker.trace_step): a [technique] shared
    step whose launches made no shared-memory loads or no stores, or fewer
    loads than min_share x the fewest the reference's shared steps make on
    the same cases (ref.traces; reference_traces), loses its verdict,
    public and hidden; so does a [[technique.sass]] step whose launched
    kernels' SASS breaks the rule. The rubric's SASS checks with `steps`
    are judged here too, on the kernels each step launched."""
    from .checker import trace_steps
    from .checkprofile import counted_by_harness, lab_profile
    from .static import run_sass_checks, step_kernels
    public = run.checks.get("public", {})
    tech = lab.rubric.technique
    traces = {}
    sass = run.objects.sass if run.objects is not None else {}
    # the steps whose outputs are right, traced together (one Nsight Compute run on a GPU; a step whose part
    # of it fails is traced again alone), within a step's limit each; on a GPU that run counts the lab's
    # counter steps whose outputs are right too (checkprofile.py: one profiled process a lab), and the
    # counters stage takes those values (labmeasure.py)
    ok = {s for s, v in public.items() if v is not None and v.ok is True}
    right = [s for s in traced_steps(lab, bool(sass)) if s in ok]
    counted = [] if cpu or not counted_by_harness(lab) else \
        list(dict.fromkeys(c.step for c in lab.counter_checks if c.step in ok))
    traced = {}
    if counted and not deadline.expired():
        count_limit = lab.rubric.counters.timeout_s
        traced, run.counters = lab_profile(
            exe, harness, lab, right, counted, seed, out, deadline.limit(step_limit), deadline.limit(count_limit),
            env, readable, "student", total=deadline.limit(step_limit * len(right) + count_limit * len(counted)))
    elif right and not deadline.expired():
        traced = trace_steps(exe, harness, lab.name, right, seed, out, deadline.limit(step_limit), env, readable, cpu,
                             total=deadline.limit(step_limit * len(right)))
    for s, (tr, why) in traced.items():
        if tr is None:
            if s in tech.shared_steps:
                run.technique[s] = f"not checked ({why})"
            continue
        traces[s] = tr
    note = run.objects.sass_note if run.objects is not None else "not checked (the compiled code was not read)"
    launched = {s: list(tr.kernels) for s, tr in traces.items()}
    launched.update({s: None for s, v in public.items() if v is not None and v.ok is False})
    checks = [c for c in lab.rubric.static if c.steps]
    if checks:   # they replace the placeholders the object checks left (static.NO_TRACE)
        res = run.objects.resources if run.objects is not None else {}
        done = {x.name: x for x in run_sass_checks(checks, sass, note, launched, res)}
        run.static = [done.get(x.name, x) for x in run.static]
        run.static += [x for x in done.values() if x.name not in {y.name for y in run.static}]
    ref_traces = getattr(ref, "traces", None) or {}
    for s, tr in sorted(traces.items()):
        lines = []
        if s in tech.shared_steps:
            run.technique[s] = f"{tr.loads:.0f} shared-memory loads and {tr.stores:.0f} stores"
            floor = _share_floor(lab, s, seed, cpu, ref_traces) if tech.min_share else None
            if not (tr.loads > 0 and tr.stores > 0):
                lines.append(tech.feedback.format(step=s, loads=tr.loads, stores=tr.stores))
            elif floor is not None:
                # ncu counts a 128-bit shared load once where a reference's scalar code counts four; the CPU
                # runtime counts the four either way
                need = tech.min_share * floor[0] / (1 if cpu else 4)
                run.technique[s] += f" (at least {need:.0f}: {tech.min_share:g} x the reference's step {floor[1]})"
                if tr.loads < need:
                    lines.append(tech.share_feedback.format(step=s, loads=tr.loads, stores=tr.stores, ref=need))
            elif tech.min_share:
                run.technique[s] += " (the reference's count is not known here: only more than none is asked)"
        for rule in [x for x in tech.sass if s in x.steps]:
            if not sass:
                run.technique[s] = "; ".join(x for x in (run.technique.get(s, ""), f"SASS {note}") if x)
                continue
            groups: list[list[str]] = []
            kernels, _ = step_kernels(launched[s], sass, groups=groups)
            if not kernels:
                continue   # nothing of the step in the CUDA build's code: the SASS checks say so
            from .objcheck import demangle
            names = demangle(kernels)
            shown = ", ".join(names[k][:60] for k in kernels[:2])
            bodies = {k: _sass_text(sass[k]) for k in kernels}
            for ins in rule.require:
                if not any(re.search(ins, b, re.M) for b in bodies.values()):
                    lines.append(rule.feedback.format(step=s, kernel=shown, what=f"has no instruction {ins}"))
            for ins in rule.forbid:
                # a launch the trace names exactly (ncu's mangled names) is held to the rule; one that stands
                # for every instantiation of a template (the CPU path's name of a template in an anonymous
                # namespace) only where every one of them breaks it: one of them is the step's
                hit = next((g[0] for g in groups if all(re.search(ins, bodies[k], re.M) for k in g)), None)
                if hit is not None:
                    lines.append(rule.feedback.format(step=s, kernel=names[hit][:60], what=f"has {ins}"))
        if not lines:
            continue
        for verdicts in run.checks.values():
            w = verdicts.get(s)
            if w is not None and w.ok is not None:
                w.ok = False
                w.messages[:0] = lines


def _sass_text(sass: str) -> str:
    from .static import _instructions
    return _instructions(sass)


def _verdict_lines(v) -> list[str]:
    head = (f"kit-only check: {v.failed} of {v.total} cases wrong" if v.failed else
            "kit-only check: every case right, but not by the step's technique" if v.total else
            f"kit-only check: {v.note}")
    return [head] + list(v.messages)

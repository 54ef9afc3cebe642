"""The items beyond the tests (score.score_lab adds them to the steps'
items): compute-sanitizer's tools or the CPU path's checks that stand in
for them, Nsight Compute's bank conflicts, the static checks and the
timings. Each needs the step's tests to pass where it says so. No I/O."""
from __future__ import annotations

import re

from . import run as R
from .labs import Lab
from .results import Item, LabRun
from .scorebase import NO_GPU, _catalogue_lines, _sanitizer_mistake_lines, r2


def perf_credit(t: float | None, t_ref: float | None, full_ratio: float, correct: bool) -> float:
    if not correct or not t or not t_ref or t <= 0 or t_ref <= 0:
        return 0.0
    return min(1.0, full_ratio * t_ref / t)


def _step_tests_pass(items: list[Item], step: int) -> bool | None:
    for it in items:
        if it.category == "tests" and it.name.startswith(f"step {step} "):
            if it.status == "not_measured":
                return None
            return it.status == "passed"
    return None


# On the CPU path the CPU runtime's own checks stand in for two of
# compute-sanitizer's tools (run.run_cpu_check): their items say what ran.
CPU_CHECKS = {"memcheck": "CPU path bounds check", "racecheck": "CPU path race check"}


def sanitizer_name(lab: Lab, tool: str) -> str:
    """The line of a sanitizer tool: the check that ran for it."""
    return f"{CPU_CHECKS[tool]} (for {tool})" if lab.cpu and tool in CPU_CHECKS else f"compute-sanitizer {tool}"


def _check_command(lab: Lab, tool: str, cfg: str, on_cpu: bool) -> str:
    """The command that repeats a tool's run as the grader ran it (the CPU
    path's check, run.run_cpu_check, or compute-sanitizer with the grader's
    options, run.run_sanitizer), for the student to run."""
    env = dict(R.EXACT_BUFFERS) if tool in R.EXACT_BUFFERS_FOR else {}
    if on_cpu:
        if R.CPU_TOOLS.get(tool):
            env["CML_CPU_CHECK"] = R.CPU_TOOLS[tool]
        tool_words = []
    else:
        tool_words = ["compute-sanitizer", "--tool", tool, *R.TOOL_OPTIONS.get(tool, [])]
    return " ".join([f"{k}={v}" for k, v in env.items()] + tool_words + [lab.runner, cfg, "--check-only"])


def _sanitizer_items(lab: Lab, run: LabRun, ref: LabRun) -> list[Item]:
    sr = lab.rubric.sanitizers
    items = []
    runner_built = run.build_ok.get(lab.runner, False)
    for tool, pts in sr.points.items():
        name = sanitizer_name(lab, tool)
        on_cpu = lab.cpu and tool in CPU_CHECKS
        rep, rref = run.sanitizers.get(tool), ref.sanitizers.get(tool)
        cfg = run.sanitizer_configs.get(tool, "")
        diag_steps, diag = run.diagnoses.get(tool, ([], None))
        explaining = ""
        if diag is not None and diag.state == "errors" and (rep is None or rep.state in ("clean", "not_run")):
            # the tool found errors in code whose tests fail: not clean
            rep = diag
            cfg = f"--step {','.join(map(str, diag_steps))} {lab.sanitize[0] if lab.sanitize else ''}".rstrip()
            explaining = " (steps that fail their tests, run to explain them)"
        if run.machine_note and (rep is None or rep.state == "unavailable"):
            items.append(Item(name, "sanitizer", pts, 0.0, "not_measured", sr.visibility,
                              [NO_GPU]))
            continue   # (the CPU path checks memcheck and racecheck: those are scored below)
        if not run.submitted or not runner_built:
            items.append(Item(name, "sanitizer", pts, 0.0, "failed", sr.visibility,
                              [f"not run: {run.build_problem or 'the runner did not build'}"]))
            continue
        if rref is not None and rref.state == "errors":
            items.append(Item(name, "sanitizer", pts, 0.0, "excluded", sr.visibility,
                              [f"not counted: the reference is not clean either ({rref.summary})"]))
            continue
        if rep is None or rep.state == "unavailable":
            why = run.gpu_note or (rep.summary if rep else "not run")
            items.append(Item(name, "sanitizer", pts, 0.0, "not_measured", sr.visibility, [f"not measured: {why}"]))
            continue
        if rep.state == "clean":
            items.append(Item(name, "sanitizer", pts, pts, "passed", sr.visibility))
            continue
        if rep.state == "not_run":
            items.append(Item(name, "sanitizer", pts, 0.0, "failed", sr.visibility, [f"not run: {rep.summary}"]))
            continue
        fb = [sr.cpu_feedback.format(check=name, tool=tool, summary=rep.summary) if on_cpu
              else sr.feedback.format(tool=tool, summary=rep.summary)]
        details = []
        if rep.first:
            where = " at " + rep.first.location if rep.first.location else ""
            kern = f" in kernel {rep.first.kernel}" if rep.first.kernel else ""
            details.append(f"first finding{kern}{where}: {rep.first.what}")
        if cfg:
            details.append(f"run it: {_check_command(lab, tool, cfg, on_cpu)}{explaining}")
        if rep.state == "incomplete":
            fb = [f"{name} did not finish: {rep.summary}"]
        fb += _sanitizer_mistake_lines(lab, run, tool, rep)
        items.append(Item(name, "sanitizer", pts, 0.0, "failed", sr.visibility, fb, details))
    return items


# Nsight Compute's conflict counter is the shared loads' wavefronts beyond the
# fewest the access needs, and a conflict-free layout can still show a few
# (8 on an H200 for a correct 32 x 65 tile over a whole transpose, against
# 261,888 for the plain tile). A step counts as conflicted when it has more
# than this share of the conflicts the reference's conflicted step has in the
# same run (a 2-way conflict has about 1/31 of a 32-way one's).
CONFLICT_SHARE = 1e-3


def _conflict_floor(lab: Lab, ref: LabRun) -> float:
    """The most conflicts a step may have and count as conflict-free: a
    share of the reference's conflicts on the lab's conflicted step (its
    'nonzero' step) in this run; 0 where the reference has no such value."""
    rc = ref.counters
    if rc is None or not rc.available:
        return 0.0
    scale = [rc.conflicts[c.step] for c in lab.counter_checks if c.expect == "nonzero" and c.step in rc.conflicts]
    return CONFLICT_SHARE * max(scale) if scale else 0.0


def _counter_items(lab: Lab, run: LabRun, ref: LabRun, test_items: list[Item]) -> list[Item]:
    cr = lab.rubric.counters
    items = []
    floor = _conflict_floor(lab, ref)
    for chk in lab.counter_checks:
        step = lab.step(chk.step)
        name = f"bank conflicts step {chk.step} {step.ident if step else ''}".rstrip()
        want = "no shared-load bank conflicts" if chk.expect == "zero" else "shared-load bank conflicts"
        rep = run.counters
        if run.machine_note or (ref.counters is not None and not ref.counters.available):
            fb = NO_GPU if run.machine_note else f"not measured: counters unavailable ({ref.counters.reason})"
            items.append(Item(name, "counters", chk.points, 0.0, "not_measured", cr.visibility, [fb]))
            continue
        if not run.submitted or not run.build_ok.get(lab.runner, False):
            items.append(Item(name, "counters", chk.points, 0.0, "failed", cr.visibility,
                              [f"not run: {run.build_problem or 'the runner did not build'}"]))
            continue
        if _step_tests_pass(test_items, chk.step) is False:  # counted for passing steps only
            items.append(Item(name, "counters", chk.points, 0.0, "failed", cr.visibility,
                              [f"step {chk.step} fails its tests: no credit for its bank conflicts"]))
            continue
        if rep is None:
            items.append(Item(name, "counters", chk.points, 0.0, "not_measured", cr.visibility,
                              [f"not measured: {run.gpu_note or 'counters not run'}"]))
            continue
        if not rep.available or chk.step in rep.missing or chk.step not in rep.conflicts:
            why = rep.reason if not rep.available else rep.missing.get(chk.step, "no value for this step")
            items.append(Item(name, "counters", chk.points, 0.0, "not_measured", cr.visibility,
                              [f"not measured: counters unavailable ({why})"]))
            continue
        rref = ref.counters
        if rref is not None and rref.available and chk.step in rref.conflicts:
            rv = rref.conflicts[chk.step]
            if (rv <= floor) != (chk.expect == "zero"):
                items.append(Item(name, "counters", chk.points, 0.0, "excluded", cr.visibility,
                                  [f"not counted: the reference itself has {rv:.0f} conflicts here"]))
                continue
        passing = _step_tests_pass(test_items, chk.step)
        v = rep.conflicts[chk.step]
        detail = [f"Nsight Compute: {v:,.0f} shared-load bank conflicts (expected {want})"]
        if floor > 0:
            detail.append(f"conflict-free means at most {floor:,.0f}: {CONFLICT_SHARE:g} of the reference's "
                          f"conflicted step in this run")
        if passing is False:
            items.append(Item(name, "counters", chk.points, 0.0, "failed", cr.visibility,
                              [f"step {chk.step}'s tests fail: no credit for its bank conflicts"], detail))
            continue
        ok = (v <= floor) if chk.expect == "zero" else (v > floor)
        if ok:
            items.append(Item(name, "counters", chk.points, chk.points, "passed", cr.visibility, [], detail))
        else:
            line = f"step {chk.step} {step.ident if step else ''}: shared-load bank conflicts {v:.0f}"
            fb = [chk.feedback or f"expected {want}"] + _catalogue_lines(
                lab, run, "counters", chk.step, lambda m: not m.expect_message or re.search(m.expect_message, line))
            pic = lab.picture(chk.step)
            if pic is not None:   # which lane meets which bank (not needed to grade)
                fb.append(f"see the step's shared-memory access, lane by lane (the CPU path, no GPU needed): "
                          f"{lab.picture_command(chk.step)} (the reference's picture: {pic.shows})")
            items.append(Item(name, "counters", chk.points, 0.0, "failed", cr.visibility, fb, detail))
    return items


def _static_items(lab: Lab, run: LabRun, test_items: list[Item]) -> list[Item]:
    items = []
    by_name = {s.name: s for s in run.static}
    for chk in lab.rubric.static:
        res = by_name.get(chk.name)
        if res is None and chk.sass_kernel and run.submitted and not run.build_errors:
            items.append(Item(f"static {chk.name}", "static", chk.points, 0.0, "not_measured", chk.visibility,
                              ["not checked: no compiled code was read"]))
        elif res is None:
            why = "not checked: the code did not build" if run.submitted else "not checked: nothing submitted"
            items.append(Item(f"static {chk.name}", "static", chk.points, 0.0, "failed", chk.visibility, [why]))
        elif not res.measured:
            items.append(Item(f"static {chk.name}", "static", chk.points, 0.0, "not_measured", chk.visibility,
                              [res.detail]))
        elif chk.step is not None and _step_tests_pass(test_items, chk.step) is False:
            items.append(Item(f"static {chk.name}", "static", chk.points, 0.0, "failed", chk.visibility,
                              [f"step {chk.step} fails its tests: no credit for how its code is compiled"]))
        elif res.ok:
            items.append(Item(f"static {chk.name}", "static", chk.points, chk.points, "passed", chk.visibility))
        else:
            items.append(Item(f"static {chk.name}", "static", chk.points, 0.0, "failed", chk.visibility,
                              [chk.feedback or f"static check {chk.name} fails"], [res.detail] if res.detail else []))
    return items


IMPOSSIBLE = ("step {step}: {ms:.4f} ms is faster than this GPU can {bound}: no performance credit "
              "(flagged for the instructor)")


def _perf_items(lab: Lab, run: LabRun, test_items: list[Item]) -> list[Item]:
    pr = lab.rubric.performance
    items = []
    for s in pr.steps:
        step = lab.step(s)
        name = f"performance step {s} {step.ident if step else ''}".rstrip()
        pts = pr.points_per_step
        res = run.perf.get(s)
        if run.machine_note:
            items.append(Item(name, "performance", pts, 0.0, "not_measured", pr.visibility, [NO_GPU]))
            continue
        if not run.submitted or not run.build_ok.get(lab.runner, False):
            items.append(Item(name, "performance", pts, 0.0, "failed", pr.visibility,
                              [f"not run: {run.build_problem or 'the runner did not build'}"]))
            continue
        passing = _step_tests_pass(test_items, s)
        if res is None and passing is False:  # not timed: the grader times passing steps only
            items.append(Item(name, "performance", pts, 0.0, "failed", pr.visibility,
                              [f"step {s} fails its tests: no performance credit"]))
            continue
        if res is None:
            items.append(Item(name, "performance", pts, 0.0, "not_measured", pr.visibility,
                              [f"not measured: {run.gpu_note or 'not run'}"]))
            continue
        correct = res.correct and passing is not False
        if not res.correct and res.note.startswith("timed out"):  # a hang is not a wrong answer
            items.append(Item(name, "performance", pts, 0.0, "failed", pr.visibility,
                              [f"step {s}'s timing run timed out (limit {pr.timeout_s:.0f} s): no performance credit"]))
            continue
        if not correct:
            items.append(Item(name, "performance", pts, 0.0, "failed", pr.visibility,
                              [f"step {s} gives a wrong answer: no performance credit"], [res.note] if res.note else []))
            continue
        if res.student_ms is None or res.ref_ms is None:
            items.append(Item(name, "performance", pts, 0.0, "not_measured", pr.visibility,
                              [f"not measured: {res.note or 'no timing'}"]))
            continue
        if res.impossible:   # faster than the GPU can move the step's data: a forged or broken timing
            items.append(Item(name, "performance", pts, 0.0, "failed", pr.visibility,
                              [IMPOSSIBLE.format(step=s, ms=res.student_ms, bound=res.bound)], [res.ceiling]))
            continue
        credit = perf_credit(res.student_ms, res.ref_ms, pr.full_credit_ratio, True)
        ratio = res.student_ms / res.ref_ms
        detail = [f"median {res.student_ms:.4f} ms against the reference's {res.ref_ms:.4f} ms "
                  f"({len(res.samples_student)} runs each, {res.order})"]
        if res.tries > 1:
            detail.append(f"timed {res.tries} times (a time over {pr.full_credit_ratio:g}x the reference's is timed "
                          f"again): the try with the least ratio counts")
        detail += [res.ceiling] if res.ceiling else []
        fb = [] if credit >= 1.0 else [pr.feedback.format(step=s, ratio=ratio, full=pr.full_credit_ratio)]
        items.append(Item(name, "performance", pts, r2(pts * credit), "passed" if credit >= 1.0 else "partial",
                          pr.visibility, fb, detail))
    return items

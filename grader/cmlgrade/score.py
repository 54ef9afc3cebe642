"""Pure arithmetic: facts (LabRun) + rubric -> scored items. No I/O.

Rules
- A test counts only when the reference passes it in the same run; the
  others are listed as not counted (the reference fails it, or it was
  skipped, e.g. no GPU) and leave both the points and the maximum.
- "not measured" (no GPU, counters unavailable, no sanitizer) is neither a
  pass nor a fail: the item leaves both the points and the maximum, and the
  report says so.
- A step with a kit-only checker (trust.run_kit_checks) earns points x
  min(share of its tests that pass, checker_share): each test keeps what it
  saw, the checker's failing cases are a line of their own, and Criterion's
  report can only lower what the checker supports. Hidden data: the
  checker's share alone.
- A catalogued mistake is named only when a failing test shows its
  signature (feedback.toml tests and message); a step not started names
  none, and says so once.
- Performance: full credit at t <= R * t_ref (R = full_credit_ratio, 1.2),
  R * t_ref / t below that, nothing when the step's answer is wrong.
- Counter and performance credit need the step's tests to pass (an empty
  kernel has no bank conflicts and is very fast).
- Sanitizer and static credit need working code: a lab that does not
  compile, or passes no step's tests, earns nothing for them (an untouched
  skeleton has no races and no library calls).
- A sanitizer run on failing steps to explain them (run.diagnoses) adds
  its finding and mistake line to the step; errors it finds also fail that
  sanitizer's item (the code is not clean).
- A failed static check with zero_lab scores the whole lab 0."""
from __future__ import annotations

import re

from . import run as R
from .labs import Lab
from .parsers import TestOutcome, finding_blocks, names_in
from .results import Item, LabRun, LabScore
from .trust import _verdict_lines

MAX_MESSAGES = 3
# What a GPU check says on a machine without a usable GPU: the reason itself
# is said once per report (StudentResult.machine), not under every item.
NO_GPU = "not measured: no usable GPU on this machine"


def r2(x: float) -> float:
    return round(x + 0.0, 2)


def perf_credit(t: float | None, t_ref: float | None, full_ratio: float, correct: bool) -> float:
    if not correct or not t or not t_ref or t <= 0 or t_ref <= 0:
        return 0.0
    return min(1.0, full_ratio * t_ref / t)


def _short(msg: str) -> str:
    """A test message without the test file's path prefix."""
    return re.sub(r"^\S*?/?tests/\w+\.c:\d+: ", "", msg.strip())


def _catalogue_lines(lab: Lab, run: LabRun, caught_by: str, step: int | None, shows,
                     up_to_step: int | None = None) -> list[str]:
    """The catalogue's line for each mistake caught by `caught_by` whose
    signature the results show (shows(mistake) -> bool). step: only that
    step's mistakes; up_to_step leaves out mistakes made in a later step
    (staged code calls only what earlier steps wrote). None for an untouched
    skeleton file or a step not started: their failures are unfinished work,
    not mistakes."""
    out: list[str] = []
    seen: dict[tuple, int] = {}   # a signature two mistakes share (results that cannot tell them apart): one line
    for m in lab.mistakes:
        if not m.feedback or m.caught_by != caught_by or m.file in run.untouched:
            continue
        if step is not None and m.step != step:
            continue
        if up_to_step is not None and m.step and m.step > up_to_step:
            continue
        if m.step in _not_started(lab, run):  # unfinished work, not a mistake
            continue
        if not shows(m):
            continue
        sig = (m.step, m.caught_by, m.tests or m.expect_failing, m.message or m.expect_message, m.kernel, m.finding)
        if sig in seen:
            k = seen[sig]
            head, _, rest = out[k].partition("): ")
            out[k] = f"{head} or {m.name}): {rest}"
            continue
        seen[sig] = len(out)
        out.append(f"Likely mistake ({m.name}): {m.feedback}")
    return out


def _not_started(lab: Lab, run: LabRun) -> set[int]:
    """The steps not started: those whose TODO blocks are as in the
    skeleton, and every step of a file left exactly as the skeleton (the
    pipeline lists such a file as untouched and marks none of its steps)."""
    return set(run.not_started) | {s.num for s in lab.steps if s.where and s.where in run.untouched}


def _mistake_lines(lab: Lab, run: LabRun, caught_by: str, step: int, failing: list[TestOutcome]) -> list[str]:
    """The mistakes of a step caught by its tests whose signature the
    failing tests show: one failing test that the mistake makes fail (its
    feedback.toml `tests` regex over the test's key) says, in a message of
    its own, what that mistake makes it see (`message`: the tests'
    diagnosis). A mistake without a signature is never named: the
    catalogue's expect_failing and expect_message only prove in CTest that
    the tests catch it, and match words of hints that other failures print
    too; its failure is described as the tests saw it."""
    def shows(m) -> bool:
        return bool(m.tests and m.message) and any(
            re.search(m.tests, o.key) and any(re.search(m.message, _short(x)) for x in o.messages) for o in failing)
    return _catalogue_lines(lab, run, caught_by, step, shows)


def _sanitizer_mistake_lines(lab: Lab, run: LabRun, tool: str, rep, up_to_step: int | None = None) -> list[str]:
    """The mistakes caught by a sanitizer whose signature its report shows:
    its text matches the mistake's expect_message, and one finding names the
    mistake's `kernel` and its first line matches `finding`."""
    findings = _findings(rep, lab.kernels)

    def shows(m) -> bool:
        if m.expect_message and not re.search(m.expect_message, rep.text or ""):
            return False
        return not (m.kernel or m.finding) or any(
            (not m.kernel or any(re.search(m.kernel, k) for k in kernels))
            and (not m.finding or re.search(m.finding, head)) for head, kernels in findings)
    return _catalogue_lines(lab, run, tool, None, shows, up_to_step)


def _once(msg: str, said: set[str]) -> str:
    """A test message without a likely cause an earlier message of the same
    line already gave: a cause is said once."""
    head, sep, cause = msg.partition("Likely cause: ")
    if not sep:
        return msg
    if cause in said:
        return head.rstrip(" .;") + " (likely cause as above)"
    said.add(cause)
    return msg


def checker_share(v) -> float:
    """The share of a step's points the kit-only checker's verdict supports:
    its share of right cases, or 0 when half of them or more are wrong. An
    untouched skeleton gets some cases right (the argument checks that must
    return an error, a one-element sum: up to 2 of 7 in a step of this kit),
    so partial credit needs most of the step's cases right: a forged report
    on a skeleton earns nothing."""
    if v is None or v.ok is not False:
        return 1.0
    if v.total <= 0 or v.failed <= 0:   # no case judged, or every case right but not by the step's technique
        return 0.0
    right = (v.total - v.failed) / v.total
    return right if right > PARTIAL_NEEDS else 0.0


# a step the kit-only checker fails earns partial credit only above this share of right cases (checker_share)
PARTIAL_NEEDS = 0.5


def _cap_line(v, share: float, kit_share: float, passed: int, total: int, hidden: bool) -> str:
    right = v.total - v.failed
    if v.total <= 0:   # no case was judged (the harness did not build, the lab's time ran out)
        return f"no credit: the kit-only check judged no case ({v.note or 'no verdict'})"
    if v.failed <= 0:  # the technique check took the verdict: its line is in the details
        return "no credit: every case right, but not by the step's technique (below)"
    if hidden:
        return (f"the kit-only check on secret data: {right} of {v.total} cases right"
                + ("" if kit_share > 0 else " (partial credit needs more than half of them right)"))
    if kit_share <= 0:
        return (f"no credit: the kit-only check finds {v.failed} of {v.total} cases wrong (partial credit needs "
                f"more than half of them right)" + (f", though {passed} of {total} tests pass" if passed else ""))
    if kit_share < share:
        return (f"credit capped by the kit-only check: {right} of {v.total} cases right"
                + (f", though {passed} of {total} tests pass" if passed else ""))
    return f"the kit-only check also finds {v.failed} of {v.total} cases wrong"


def _findings(rep, kernels: str) -> list[tuple[str, list[str]]]:
    """Each finding of a sanitizer report: its first line and the kernels and
    device functions it names. A report whose findings are not recognised is
    one finding with no first line."""
    text = rep.text or ""
    found = [(head, names_in(block, kernels)) for head, block in finding_blocks(text)]
    return found or [("", names_in(text, kernels) + ([rep.first.kernel] if rep.first and rep.first.kernel else []))]


def _test_items(lab: Lab, run: LabRun, ref: LabRun, seed: str, not_counted: list[str]) -> list[Item]:
    tr = lab.rubric.tests
    hidden = seed == "hidden"
    share = tr.hidden_share if hidden else (1.0 - tr.hidden_share if "hidden" in ref.tests else 1.0)
    mine, theirs = run.outcomes(seed), ref.outcomes(seed)
    not_started = _not_started(lab, run)
    items = []
    for step in lab.steps:
        keys = sorted(k for k, o in theirs.items() if lab.step_of_suite(o.suite) == step.num)
        counted = [k for k in keys if theirs[k].status == "PASSED"]
        for k in keys:
            if theirs[k].status == "SKIPPED" and run.machine_note:
                continue  # the step says "no usable GPU"; the reason is given once
            if theirs[k].status != "PASSED":
                why = ("skipped: " + _short(theirs[k].messages[0]) if theirs[k].status == "SKIPPED" and theirs[k].messages
                       else f"the reference's result is {theirs[k].status}")
                not_counted.append((f"{k}{' (hidden data)' if hidden else ''}", why))
        pts = tr.step_points(step.num) * share
        name = f"step {step.num} {step.ident}" + (" (hidden data)" if hidden else "")
        vis = tr.hidden_visibility if hidden else tr.visibility
        if not counted:
            reason = "no test of this step ran on the reference"
            skipped = [theirs[k] for k in keys if theirs[k].status == "SKIPPED"]
            if skipped and run.machine_note:
                reason = NO_GPU.removeprefix("not measured: ")
            elif skipped and skipped[0].messages:
                reason = _short(skipped[0].messages[0])
            elif not keys:
                reason = "the reference reported no tests for this step"
            items.append(Item(name, "hidden" if hidden else "tests", r2(pts), 0.0, "not_measured", vis,
                              [f"not measured: {reason}"]))
            continue
        failing: list[TestOutcome] = []
        missing: list[str] = []
        for k in counted:
            o = mine.get(k)
            if o is None:
                missing.append(k)
            elif o.status != "PASSED":
                failing.append(o)
        bad = len(failing) + len(missing)
        verdict = run.checks.get(seed, {}).get(step.num)
        if verdict is not None and verdict.ok is None:
            verdict = None   # not measured by the checker: the tests alone
        if hidden and verdict is not None:   # the hidden tests are the checker's verdict, not a test each
            failing, missing, bad = [], [], 0
        tests_share = (len(counted) - bad) / len(counted)
        capped = verdict is not None and verdict.ok is False
        kit_share = checker_share(verdict) if capped else 1.0
        got = pts * min(tests_share, kit_share)
        status = "passed" if got >= pts else ("failed" if got <= 0 else "partial")
        fb, details = [], []
        idle = bad and step.num in not_started   # unfinished work: said once, not under every test, no cause
        # the kit-only check's verdict on a step not started and earning nothing adds nothing to say
        show_cap = capped and not (idle and got <= 0)
        if bad:
            line = tr.step_feedback.get(step.num, tr.feedback)
            fb.append(line.format(step=step.num, ident=step.ident, what=step.what, failed=bad, total=len(counted)))
        if show_cap:
            fb.append(_cap_line(verdict, tests_share, kit_share, len(counted) - bad, len(counted), hidden))
        if idle:
            o = failing[0] if failing else None
            seen = _short(o.messages[0]).partition("Likely cause: ")[0].rstrip(" .;") if o and o.messages else ""
            details.append(f"step {step.num} is not started yet (its TODO(step {step.num}) blocks are as in the "
                           f"skeleton)" + (f"; e.g. {o.key}: {seen}" if seen else ""))
        elif bad:
            said: set[str] = set()
            for o in failing[:MAX_MESSAGES]:
                kind = {"TIMEOUT": "timed out", "CRASHED": "crashed"}.get(o.status, "failed")
                msg = "; ".join(_once(_short(m), said) for m in o.messages[:MAX_MESSAGES]) or "(no message)"
                details.append(f"{o.key} {kind}: {msg}")
            if len(failing) > MAX_MESSAGES:
                details.append(f"... and {len(failing) - MAX_MESSAGES} more failing tests")
            for k in missing[:MAX_MESSAGES]:
                details.append(f"{k}: no result ({_binary_problem(run, seed, k) or 'not run'})")
        if show_cap:
            details.append("; ".join(_verdict_lines(verdict)))
        if bad:
            fb += _mistake_lines(lab, run, "tests", step.num, failing)
            if not hidden:
                for tool, (steps, rep) in sorted(run.diagnoses.items()):
                    if step.num not in steps or rep.state != "errors":
                        continue
                    first = rep.first
                    where = f" in kernel {first.kernel}" if first and first.kernel else ""
                    where += f" at {first.location}" if first and first.location else ""
                    details.append(f"compute-sanitizer {tool} on step {step.num} ({', '.join(map(str, steps))} run): "
                                   f"{rep.summary}" + (f"; first{where}: {first.what}" if first else ""))
                    fb += [line for line in _sanitizer_mistake_lines(lab, run, tool, rep, up_to_step=step.num)
                           if line not in fb]
        items.append(Item(name, "hidden" if hidden else "tests", r2(pts), r2(got), status, vis, fb, details))
    return items


def _binary_problem(run: LabRun, seed: str, key: str) -> str:
    for br in run.tests.get(seed, {}).values():
        if br.problem:
            return br.problem
    return ""


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


def _cpu_check_command(lab: Lab, tool: str, cfg: str) -> str:
    """The command that repeats the CPU path's check of a tool (as
    run.run_cpu_check ran it), for the student to run."""
    env = dict(R.EXACT_BUFFERS) if tool in R.EXACT_BUFFERS_FOR else {}
    if R.CPU_TOOLS.get(tool):
        env["CML_CPU_CHECK"] = R.CPU_TOOLS[tool]
    return " ".join([f"{k}={v}" for k, v in env.items()] + [lab.runner, cfg, "--check-only"])


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
        if diag is not None and diag.state == "errors" and (rep is None or rep.state in ("clean", "not_run")):
            # the tool found errors in code whose tests fail: not clean
            rep = diag
            cfg = (f"--step {','.join(map(str, diag_steps))} {lab.sanitize[0] if lab.sanitize else ''}".rstrip()
                   + " (steps that fail their tests, run to explain them)")
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
        if cfg and on_cpu:
            details.append(f"run it: {_cpu_check_command(lab, tool, cfg)}")
        elif cfg:
            details.append(f"runner arguments: {cfg} --check-only")
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
                  f"({len(res.samples_student)} runs each, student and reference alternating)"]
        detail += [res.ceiling] if res.ceiling else []
        fb = [] if credit >= 1.0 else [pr.feedback.format(step=s, ratio=ratio, full=pr.full_credit_ratio)]
        items.append(Item(name, "performance", pts, r2(pts * credit), "passed" if credit >= 1.0 else "partial",
                          pr.visibility, fb, detail))
    return items


def collapse(entries: list[tuple[str, str]], keep: int = 3) -> list[str]:
    """'test: not counted, why' lines; more than `keep` tests with the same
    reason make one line that says how many."""
    by: dict[str, list[str]] = {}
    for key, why in entries:
        by.setdefault(why, []).append(key)
    out = []
    for why, keys in by.items():
        if len(keys) <= keep:
            out += [f"{k}: not counted, {why}" for k in keys]
        else:
            out.append(f"{len(keys)} tests ({', '.join(keys[:2])}, ... {keys[-1]}): not counted, {why}")
    return out


def _beyond_the_tests(items: list[Item], run: LabRun) -> None:
    """Sanitizer and static credit need working code. A lab that does not
    compile or passes no step loses them; a lab none of whose tests could
    run here (no GPU) has them not measured, not failed: nothing says the
    code works or not."""
    tests = [i for i in items if i.category in ("tests", "hidden")]
    earned = any(i.points > 0 for i in tests)
    if not run.submitted:
        return
    if earned and not run.build_errors:
        _scale_by_steps(items)
        return
    untestable = not run.build_errors and tests and all(not i.counted for i in tests)
    for it in items:
        if it.category in ("sanitizer", "static") and it.counted and it.points > 0:
            if untestable:
                it.points, it.status = 0.0, "not_measured"
                it.feedback = ["not measured: it counts for working code only, and no test of this lab could "
                               "run here"]
            else:
                why = "does not compile" if run.build_errors else "passes no step's tests yet"
                it.points, it.status = 0.0, "failed"
                it.feedback = [f"no credit while the lab {why}: the checks beyond the tests count for "
                               f"working code only"]


def _scale_by_steps(items: list[Item]) -> None:
    """Sanitizer and static credit scale with the steps that pass (public
    data): a lab with one step of eight done earns an eighth of them (a
    skeleton's untouched steps have no races and call no library)."""
    steps = [i for i in items if i.category == "tests" and i.counted]
    if not steps:
        return
    done = sum(1 for i in steps if i.status == "passed")
    if done == len(steps):
        return
    share = done / len(steps)
    for it in items:
        if it.category in ("sanitizer", "static") and it.counted and it.points > 0:
            it.points = r2(it.points * share)
            it.status = "partial"
            it.feedback = it.feedback + [f"scaled to the steps that pass their tests ({done} of {len(steps)})"]


def _refuse(items: list[Item], run: LabRun) -> None:
    """The object checks refused the code: nothing of it ran; every item
    scores 0 and says why."""
    for it in items:
        if it.counted:   # what could not be measured here stays out of the maximum, as for everyone
            it.points, it.status = 0.0, "failed"
            it.feedback = ["refused: " + "; ".join(run.refused[:3])]
            it.details = []


def score_lab(lab: Lab, run: LabRun, ref: LabRun) -> LabScore:
    not_counted: list[tuple[str, str]] = []
    test_items = _test_items(lab, run, ref, "public", not_counted)
    items = list(test_items)
    if "hidden" in ref.tests:
        items += _test_items(lab, run, ref, "hidden", not_counted)
    items += _sanitizer_items(lab, run, ref)
    items += _counter_items(lab, run, ref, test_items)
    items += _static_items(lab, run, test_items)
    items += _perf_items(lab, run, test_items)
    _beyond_the_tests(items, run)
    notes = []
    if run.submitted and run.refused:
        _refuse(items, run)
        notes.append("refused by the object checks, nothing of it was run (scored 0, flagged for the instructor): "
                     + "; ".join(run.refused[:4]) + (f" (and {len(run.refused) - 4} more)" if len(run.refused) > 4
                                                     else ""))
    if not run.submitted:
        notes.append("not submitted")
        for it in items:
            if it.status != "excluded" and it.status != "not_measured":
                it.points, it.status, it.feedback, it.details = 0.0, "failed", ["not submitted"], []
    if run.submitted and run.untouched:
        notes.append("untouched skeleton (no change from the kit): " + ", ".join(run.untouched))
    if run.submitted and run.not_started:
        notes.append("not started yet (their TODO blocks are as in the skeleton): steps "
                     + ", ".join(map(str, sorted(set(run.not_started)))))
    if run.submitted and run.cpu_unsupported and not run.refused:
        # not the student's mistake: the CPU path cannot run what the file uses; nothing of it is scored here
        notes.append(f"not graded on the CPU path ({run.cpu_unsupported}): flagged for the instructor to grade "
                     f"on a GPU machine; not scored as a compile error")
        for it in items:
            if it.status != "excluded":
                it.points, it.status = 0.0, "not_measured"
                it.feedback, it.details = ["not measured on the CPU path (see the lab's notes)"], []
    elif run.build_errors:
        notes.append("does not compile: the compiler's messages are below; every check that needs the "
                     "broken file scores 0")
    if run.build_problem and run.submitted:
        notes.append(run.build_problem)
    if run.timed_out:
        notes.append("cut off by a time limit: " + ", ".join(run.timed_out))
    impossible = sorted(st for st, res in run.perf.items() if res.impossible)
    if impossible:
        notes.append("timed faster than the GPU can move the data or do the work (scored 0 for speed, flagged for the "
                     "instructor): "
                     "step " + ", ".join(map(str, impossible)))
    if run.submitted and "hidden" not in ref.tests and lab.rubric.tests.hidden_share > 0:
        notes.append(f"hidden tests not run here (public seed): in the instructor's run, "
                     f"{lab.rubric.tests.hidden_share:.0%} of each step's points come from the same tests on secret data")
    zero = [s for s in lab.rubric.static if run.submitted and s.zero_lab and any(i.name == f"static {s.name}" and i.status == "failed"
                                                                 for i in items)]
    if zero:
        notes.insert(0, "scored 0: " + "; ".join(s.feedback or s.name for s in zero))
        for it in items:
            if it.counted:
                it.points = 0.0
    points = r2(sum(i.points for i in items if i.counted))
    max_points = r2(sum(i.max_points for i in items if i.counted))
    return LabScore(lab.name, lab.title, run.submitted, items, points, max_points, notes, run.build_errors,
                    collapse(not_counted))

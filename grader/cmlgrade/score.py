"""Pure arithmetic: facts (LabRun) + rubric -> scored items. No I/O.

This module scores the steps' tests and the lab as a whole (score_lab); the
items beyond the tests are scorechecks.py's, and what both use is
scorebase.py's.

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

from .labs import Lab
from .parsers import TestOutcome
from .results import Item, LabRun, LabScore
from .scorebase import (NO_GPU, REFERENCE_FAILED, _cap_line, _mistake_lines, _not_started, _sanitizer_mistake_lines, _short,
                        checker_share, r2)
from .scorechecks import _counter_items, _perf_items, _sanitizer_items, _static_items
from .trust import _verdict_lines

# names this module defined before scorebase.py and scorechecks.py were split from it: importable from here still
from .scorebase import PARTIAL_NEEDS  # noqa: F401
from .scorechecks import CONFLICT_SHARE, CPU_CHECKS, IMPOSSIBLE, perf_credit, sanitizer_name  # noqa: F401

MAX_MESSAGES = 3


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


def _test_items(lab: Lab, run: LabRun, ref: LabRun, seed: str, not_counted: list[str]) -> list[Item]:
    tr = lab.rubric.tests
    hidden = seed == "hidden"
    share = tr.hidden_share if hidden else (1.0 - tr.hidden_share if "hidden" in ref.tests else 1.0)
    mine, theirs = run.outcomes(seed), ref.outcomes(seed)
    not_started = _not_started(lab, run)
    items = []
    for step in lab.steps:
        keys = sorted(k for k, o in theirs.items() if lab.step_of_test(o) == step.num)
        counted = [k for k in keys if theirs[k].status == "PASSED"]
        for k in keys:
            if theirs[k].status == "SKIPPED" and run.machine_note:
                continue  # the step says "no usable GPU"; the reason is given once
            if theirs[k].status != "PASSED":
                why = ("skipped: " + _short(theirs[k].messages[0]) if theirs[k].status == "SKIPPED" and theirs[k].messages
                       else f"{REFERENCE_FAILED} {theirs[k].status}")
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

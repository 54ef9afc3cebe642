"""The pieces a lab's scored items are made of (score.py and scorechecks.py
use them): rounding, the line for a check that needs a GPU, the catalogue's
likely-mistake lines that a failing test's or a sanitizer's results show,
and the share of a step's credit the kit-only checker's verdict supports,
with the line that says it. No I/O."""
from __future__ import annotations

import re

from .labs import Lab
from .parsers import TestOutcome, finding_blocks, names_in
from .results import LabRun

# What a GPU check says on a machine without a usable GPU: the reason itself
# is said once per report (StudentResult.machine), not under every item.
NO_GPU = "not measured: no usable GPU on this machine"
# Why a test is left out of the score: the reference's own result (a not_counted line holds it).
REFERENCE_FAILED = "the reference's result is"


def r2(x: float) -> float:
    return round(x + 0.0, 2)


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

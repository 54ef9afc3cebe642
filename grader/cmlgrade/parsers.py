"""Every machine-readable format the grader reads, parsed in one place:
Criterion's JSON report, compute-sanitizer's report, the runners' counter
lines (Nsight Compute numbers with their thousands separators) and the
runners' --json output. Human-readable test output is never scraped."""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

STATUSES = ("PASSED", "FAILED", "ERRORED", "SKIPPED")


@dataclass
class TestOutcome:
    suite: str
    name: str
    status: str            # PASSED | FAILED | ERRORED | SKIPPED | TIMEOUT | CRASHED
    messages: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.suite}::{self.name}"


class ReportError(Exception):
    pass


def _lenient_json(text: str):
    try:
        return json.loads(text, strict=False)
    except json.JSONDecodeError:
        # Criterion 2.4 writes messages without escaping backslashes.
        fixed = re.sub(r'\\(?![\\"/bfnrtu])', r"\\\\", text)
        return json.loads(fixed, strict=False)


def parse_criterion_json(text: str) -> dict[str, TestOutcome]:
    """suite::test -> outcome. Criterion marks a crash or a timeout as
    ERRORED with a fixed message; those become CRASHED and TIMEOUT."""
    try:
        data = _lenient_json(text)
    except json.JSONDecodeError as e:
        raise ReportError(f"the test report is not valid JSON ({e.msg} at line {e.lineno})") from e
    if not isinstance(data, dict) or not isinstance(data.get("test_suites"), list):
        raise ReportError("the test report has no test_suites list")
    out: dict[str, TestOutcome] = {}
    for suite in data["test_suites"]:
        if not isinstance(suite, dict) or not isinstance(suite.get("tests", []), list):
            raise ReportError("a test suite in the report is malformed")
        sname = str(suite.get("name", ""))
        for t in suite.get("tests", []):
            if not isinstance(t, dict) or "name" not in t or t.get("status") not in STATUSES:
                raise ReportError(f"a test in suite {sname} is malformed")
            msgs = [str(m) for m in t.get("messages", []) if isinstance(m, (str, int, float))]
            status = t["status"]
            if status == "ERRORED":
                joined = " ".join(msgs).lower()
                status = "TIMEOUT" if "timed out" in joined else "CRASHED"
            o = TestOutcome(sname, str(t["name"]), status, msgs)
            out[o.key] = o
    return out


# ------------------------------------------------------------ compute-sanitizer

@dataclass
class SanitizerFinding:
    what: str          # "Invalid __shared__ write of size 4 bytes", "Race reported between ..."
    kernel: str        # "reduce_kernel3"
    location: str      # "reduction.cu:131" (basename:line), "" when unknown


@dataclass
class SanitizerReport:
    state: str          # clean | errors | incomplete | unavailable | not_run
    summary: str        # the tool's summary line
    errors: int
    first: SanitizerFinding | None
    text: str = ""      # the report, for matching catalogue messages


_SUMMARY = re.compile(r"(ERROR SUMMARY: [^\n]*|RACECHECK SUMMARY: [^\n]*)")
_FINDING = re.compile(r"^=+\s+((?:(?:Error|ERROR|Warning|WARNING): )?(?:Invalid|Race reported|Barrier error|Uninitialized|Misaligned|"
                      r"Out-of-range|Program hit|Illegal|Warning: Race|Address|Divergent|Detected)[^\n]*)", re.M)
_LOCATION = re.compile(r"([\w.+-]+\.(?:cu|cuh|c|h|cpp|hpp)):(\d+)")
_KERNEL_NEW = re.compile(r"\bat (?:void )?([A-Za-z_][\w:]*)[<(]")
_KERNEL_OLD = re.compile(r"\.(?:cu|cuh|c|cpp):\d+:(?:void )?([A-Za-z_][\w:]*)")
NO_GPU = re.compile(r"no CUDA device|all CUDA-capable devices are busy|CUDA driver version is insufficient", re.I)


_FINDING_SPAN = 2000  # a finding's own lines and frames; the last one is followed by the program's output


def finding_blocks(text: str) -> list[tuple[str, str]]:
    """Each finding of a report: its first line ("Warning: Race reported
    ...") and its text, up to the next finding or _FINDING_SPAN characters."""
    starts = [(m.start(), m.group(1).strip()) for m in _FINDING.finditer(text)]
    ends = [at for at, _ in starts[1:]] + [len(text)]
    return [(head, text[at:min(end, at + _FINDING_SPAN)]) for (at, head), end in zip(starts, ends)]


def names_in(text: str, kernels: str) -> list[str]:
    """The kernels and __device__ functions a piece of a report names (a race
    in a helper is reported at the helper; a race names both accesses).
    `kernels`: the lab's names (its manifest's "kernels" regex)."""
    return ([m.group(0) for m in re.finditer(r"\b(?:" + kernels + r")\b", text)]
            + [m.group(1).split("::")[-1] for rx in (_KERNEL_NEW, _KERNEL_OLD) for m in rx.finditer(text)])


def _finding_at(text: str, start: int, what: str) -> SanitizerFinding:
    window = text[start:start + _FINDING_SPAN]
    lines = window.splitlines()[:6]
    kernel, loc = "", ""
    for ln in lines:
        if not kernel:
            m = _KERNEL_NEW.search(ln) or _KERNEL_OLD.search(ln)
            if m:
                kernel = m.group(1).split("::")[-1]
        if not loc:
            m = _LOCATION.search(ln)
            if m:
                loc = f"{m.group(1).rsplit('/', 1)[-1]}:{m.group(2)}"
        if kernel and loc:
            break
    return SanitizerFinding(what.strip(), kernel, loc)


def first_finding_at(text: str) -> int:
    """Where a compute-sanitizer report's first finding starts (len(text): none)."""
    f = _FINDING.search(text)
    return f.start() if f else len(text)


def parse_sanitizer(text: str, rc: int | None) -> SanitizerReport:
    """The report of `compute-sanitizer --tool T --error-exitcode 99 ...`."""
    # memcheck past --print-limit adds "ERROR SUMMARY: N errors were not
    # printed. Use --print-limit ...": a note, not the summary
    summaries = [s for s in _SUMMARY.findall(text) if "not printed" not in s]
    summary = summaries[-1].strip() if summaries else ""
    errors = 0
    for s in summaries:
        m = re.search(r"\((\d+) errors?", s) or re.search(r"SUMMARY: (\d+) errors?", s)
        if m:
            errors += int(m.group(1))
    f = _FINDING.search(text)
    first = _finding_at(text, f.start(), f.group(1)) if f else None
    if rc == 77 or (NO_GPU.search(text) and not summaries):
        return SanitizerReport("unavailable", "no CUDA device", 0, None, text)
    if rc == 99 or errors > 0:
        return SanitizerReport("errors", summary or "errors reported", max(errors, 1), first, text)
    if summaries and rc in (0, 1):  # 1: a wrong result, which the tests score; the tool found nothing
        return SanitizerReport("clean", summary, 0, None, text)
    return SanitizerReport("incomplete", summary or f"the run did not finish (exit {rc})", 0, first, text)


# ------------------------------------------------------------ counters (ncu via the runner)

# what a counter ncu could not read is worth: nothing, and the value is measured again (ncu_value)
UNREAD = "Nsight Compute gave no number for a counter ({cell!r} for {metric} of {kernel})"


def ncu_value(cell: str) -> float | None:
    """A "Metric Value" cell of ncu's CSV as a number ("1,024" is 1024);
    None where it is no finite number: "nan" or "n/a", a counter ncu did
    not read for that launch (seen on an H200 beside other GPU work: a
    SASS counter of one of a lab's kernels as "nan"). The callers never
    take such a launch as none: the value is measured again."""
    try:
        v = float(cell.replace(",", ""))
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def ncu_number(text: str) -> float:
    """Nsight Compute writes numbers with thousands separators ("261,888")
    and sometimes "n/a" or "nan" (ncu_value); returns -1 for no
    value."""
    v = ncu_value(text.strip().strip('"'))
    return -1.0 if v is None else v


@dataclass
class CounterReport:
    available: bool
    reason: str
    conflicts: dict[int, float] = field(default_factory=dict)   # step -> shared-load bank conflicts (summed)
    missing: dict[int, str] = field(default_factory=dict)       # step -> why it has no value


_COUNT_LINE = re.compile(r"^step (\d+) (.+?): shared-load bank conflicts ([\d,.]+|n/a)", re.M)
_STEP_NA = re.compile(r"^step (\d+) [^:\n]*: counters not available: ([^\n]*)", re.M)
_GLOBAL_NA = re.compile(r"^counters not available: ([^\n]*)", re.M)


def parse_counters(stdout: str) -> CounterReport:
    m = _GLOBAL_NA.search(stdout)
    if m:
        return CounterReport(False, m.group(1).strip())
    rep = CounterReport(True, "")
    for m in _COUNT_LINE.finditer(stdout):
        v = ncu_number(m.group(3))
        step = int(m.group(1))
        if v < 0:
            rep.missing[step] = "ncu gave no value"
            continue
        rep.conflicts[step] = rep.conflicts.get(step, 0.0) + v
    for m in _STEP_NA.finditer(stdout):
        rep.missing[int(m.group(1))] = m.group(2).strip()
    if not rep.conflicts and not rep.missing:
        return CounterReport(False, "the runner printed no counter lines")
    return rep


# ------------------------------------------------------------ runner --json

@dataclass
class RunnerStep:
    step: int
    status: str           # ok | WRONG | ERROR | not run
    correct: bool
    median_ms: float | None


def parse_runner_json(stdout: str) -> dict[int, RunnerStep]:
    """The step rows of a runner's --json output. The runner prints its JSON
    last; anything a student printed before it is skipped."""
    pos = stdout.rfind('{"lab"')
    if pos < 0:
        raise ReportError("the runner printed no JSON report")
    try:
        data, _ = json.JSONDecoder(strict=False).raw_decode(stdout[pos:])
    except json.JSONDecodeError as e:
        raise ReportError(f"the runner's JSON report is not valid ({e.msg})") from e
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise ReportError("the runner's JSON report has no rows")
    out = {}
    for row in rows:
        if not isinstance(row, dict) or row.get("kind") != "step":
            continue
        try:
            step = int(row["step"])
        except (KeyError, TypeError, ValueError):
            continue
        ms = row.get("median_ms")
        out[step] = RunnerStep(step, str(row.get("status", "")), bool(row.get("correct", False)),
                               float(ms) if isinstance(ms, (int, float)) and ms > 0 else None)
    return out

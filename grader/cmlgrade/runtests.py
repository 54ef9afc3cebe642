"""The run stage's tests: a Criterion program run with its JSON report
written into a folder the grader made (run_tests), a submission's tests
run a step at a time where a step hangs (run_tests_by_step), a report
checked against the reference's list of tests (check_against), and the
steps whose tests pass or fail."""
from __future__ import annotations

from pathlib import Path

from .parsers import ReportError, TestOutcome, parse_criterion_json
from .results import BinaryRun
from .runbase import Deadline
from .sandbox import Executor


def run_tests(exe: Executor, binary: Path, out_dir: Path, tag: str, seed: int | None, timeout: float,
              gpu_env: dict[str, str], readable: list[Path], suite: str | None = None) -> BinaryRun:
    """Runs one Criterion binary with --json into out_dir (a fresh folder the
    grader made; inside the sandbox it is the only writable place besides
    /tmp). Only that JSON file is read: what the program prints is ignored.
    With suite, only that suite's tests run (--filter 'suite/*')."""
    name = binary.name
    if not binary.is_file():
        return BinaryRun(name, False, problem="not built")
    out_dir.mkdir(parents=True, exist_ok=True)
    report = out_dir / f"{name}.{tag}{'.' + suite if suite else ''}.json"
    if report.exists():
        report.unlink()
    env = dict(gpu_env)
    if seed is not None:
        env["CML_SEED"] = str(seed)
    argv = [str(binary), f"--json={report}"] + ([f"--filter={suite}/*"] if suite else [])
    r = exe.run(argv, cwd=out_dir, timeout=timeout, writable=[out_dir], readable=readable, env=env)
    br = BinaryRun(name, True, seconds=r.seconds)
    if r.timed_out:
        what = f"{suite}'s tests" if suite else "the tests"
        br.problem = f"timed out: the limit of {timeout:.0f} s ran out before {what} finished"
    if not report.is_file():
        br.problem = br.problem or f"the test program wrote no report (exit {r.rc})"
        return br
    try:
        br.outcomes = parse_criterion_json(report.read_text(encoding="utf-8", errors="replace"))
    except ReportError as e:
        br.problem = f"the test report is unreadable: {e}"
    return br


def run_tests_by_step(exe: Executor, binary: Path, out_dir: Path, tag: str, seed: int | None,
                      ref: BinaryRun, step_limit: float, deadline: Deadline, gpu_env: dict[str, str],
                      readable: list[Path], whole_ok: bool = True) -> tuple[BinaryRun, list[str]]:
    """Runs a submission's tests, the suites the reference run listed, so
    that a step whose kernel never ends costs that step only: its tests get
    TIMEOUT, and the next steps still run. First all of them in one run
    (one process, its workers in parallel, every kit test ended by its own
    Criterion timeout, below a step's limit): where that run writes its
    report within the steps' limits together, the report is the result.
    Where it does not (the program hung or died before its report), each
    suite (step) runs again on its own. Each suite's report is checked
    against the reference's test list for that suite. With whole_ok False
    (`ref` lists only some of the program's suites) each suite runs on its
    own from the start. Returns the merged run and the suites that timed
    out."""
    merged = BinaryRun(binary.name, binary.is_file())
    if not binary.is_file():
        merged.problem = "not built"
        return merged, []
    suites = sorted({o.suite for o in ref.outcomes.values()})
    whole = None
    if whole_ok and len(suites) > 1 and not deadline.expired():
        whole = run_tests(exe, binary, out_dir, tag, seed, deadline.limit(step_limit * len(suites)), gpu_env,
                          readable)
        if whole.problem or not whole.outcomes:
            whole = None   # each step on its own (below)
        else:
            merged.seconds += whole.seconds
    timed_out: list[str] = []
    for suite in suites:
        expected = {k: o for k, o in ref.outcomes.items() if o.suite == suite}
        if whole is not None:
            part = BinaryRun(binary.name, True, outcomes={k: o for k, o in whole.outcomes.items() if o.suite == suite})
            check_against(part, set(expected))
        elif deadline.expired():
            part = BinaryRun(binary.name, True, problem="not run: the lab's time limit ran out")
        else:
            part = run_tests(exe, binary, out_dir, tag, seed, deadline.limit(step_limit), gpu_env, readable, suite)
            # Criterion's report also lists the tests --filter left out (as skipped)
            part.outcomes = {k: o for k, o in part.outcomes.items() if o.suite == suite}
            check_against(part, set(expected))
        merged.seconds += part.seconds
        if "timed out" in part.problem or "not run" in part.problem:
            timed_out.append(suite)
        for key, o in expected.items():
            got = part.outcomes.get(key)
            if got is None:
                status = "TIMEOUT" if suite in timed_out else "ERRORED"
                why = part.problem or "no result"
                if status == "TIMEOUT":  # the outcome already says "timed out"
                    why = why.removeprefix("timed out: ")
                got = TestOutcome(o.suite, o.name, status, [why])
            merged.outcomes[key] = got
    return merged, timed_out


def passing_steps(tests: dict[str, BinaryRun], step_of) -> list[int]:
    """The steps whose every test passed in these runs (step_of: a test
    outcome -> its step number or None, Lab.step_of_test)."""
    ok: dict[int, bool] = {}
    for br in tests.values():
        for o in br.outcomes.values():
            n = step_of(o)
            if n is not None:
                ok[n] = ok.get(n, True) and o.status == "PASSED"
    return sorted(n for n, good in ok.items() if good)


def failing_steps(tests: dict[str, BinaryRun], step_of) -> list[int]:
    """The steps with a test that failed or crashed but none that timed out:
    a sanitizer can still run them to the end."""
    state: dict[int, set[str]] = {}
    for br in tests.values():
        for o in br.outcomes.values():
            n = step_of(o)
            if n is not None:
                state.setdefault(n, set()).add(o.status)
    return sorted(n for n, st in state.items() if st - {"PASSED", "SKIPPED"} and "TIMEOUT" not in st)


def check_against(br: BinaryRun, expected: set[str]) -> None:
    """A report whose test list is not the kit's (as the reference run lists
    it) is rejected: nothing in it counts."""
    if not br.outcomes or not expected:
        return
    got = set(br.outcomes)
    if got != expected:
        extra, lost = sorted(got - expected), sorted(expected - got)
        br.problem = ("the test report was rejected: its test list differs from the kit's ("
                      + ", ".join(filter(None, [f"unexpected {', '.join(extra[:3])}" if extra else "",
                                                 f"missing {', '.join(lost[:3])}" if lost else ""])) + ")")
        br.outcomes = {}

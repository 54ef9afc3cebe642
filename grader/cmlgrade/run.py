"""The run stage: Criterion tests (JSON report into a grader-owned folder),
compute-sanitizer, the runners' counters and performance against the
reference, each under a timeout that never outlives the lab's wall clock."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import statistics
import time
from pathlib import Path

from .gpushare import alone_on
from .parsers import (CounterReport, ReportError, SanitizerFinding, SanitizerReport, TestOutcome, parse_counters,
                      first_finding_at, parse_criterion_json, parse_runner_json, parse_sanitizer)
from .results import BinaryRun, PerfResult
from .sandbox import Executor, run_process, scrubbed_env

NO_GPU_RC = 77


# How many of one submission-lab's GPU processes run at once where they are independent (kit-only checks of
# different steps, the compute-sanitizer tools): they spend their time starting, making inputs and checking
# outputs, not on the GPU (one process at a time left an H200 at 0-3 % busy).
GPU_SIDE_BY_SIDE = 4


def side_by_side(calls: list, workers: int) -> list:
    """calls() each, up to `workers` at once (threads: each mostly waits on
    a process), their results in the calls' order; an exception is raised
    as if the calls had run one after another."""
    if workers <= 1 or len(calls) <= 1:
        return [c() for c in calls]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=min(workers, len(calls))) as pool:
        futures = [pool.submit(c) for c in calls]
        return [f.result() for f in futures]


class Deadline:
    """The lab's wall clock: every command gets min(its own limit, what is left)."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def limit(self, own: float) -> float:
        return max(1.0, min(own, self.left()))

    def expired(self) -> bool:
        return self.left() <= 1.0


def find_tool(name: str) -> str | None:
    hit = shutil.which(name)
    if hit:
        return hit
    for base in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if base:
            p = Path(base) / "bin" / name
            if p.is_file() and os.access(p, os.X_OK):
                return str(p)
            p = Path(base) / "compute-sanitizer" / name
            if p.is_file() and os.access(p, os.X_OK):
                return str(p)
    return None


def list_gpus(env: dict[str, str] | None = None) -> list[str]:
    """The GPUs to spread work over: CUDA_VISIBLE_DEVICES when set, else
    nvidia-smi -L. Empty when there is none."""
    env = os.environ if env is None else env
    vis = env.get("CUDA_VISIBLE_DEVICES")
    if vis is not None:
        return [v.strip() for v in vis.split(",") if v.strip() and v.strip() != "-1"]
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    r = run_process([smi, "-L"], timeout=30, env=scrubbed_env())
    if r.rc != 0:
        return []
    return [str(i) for i, ln in enumerate(l for l in r.stdout.splitlines() if l.startswith("GPU "))]


GPU_FAILED = "the GPU is not usable"


def probe_gpu(runner: Path, gpu: str | None) -> tuple[bool, str]:
    """Asks a (trusted, reference) runner whether a GPU is usable. The
    runner exits 77 where there is no GPU; any other failure means a GPU is
    there but failed its probe, and the reason then starts with GPU_FAILED."""
    if not runner.is_file():   # not built: it says nothing of a GPU
        return False, f"no CUDA device found: the probe ({runner.name}) was not built"
    env = scrubbed_env({"CUDA_VISIBLE_DEVICES": gpu} if gpu is not None else None)
    r = run_process([str(runner), "--probe"], timeout=60, env=env)
    if r.rc == 0:
        return True, ""
    why = (r.output.strip().splitlines() or [f"exit {r.rc}"])[-1]
    if r.rc in (126, 127):   # the runner did not start (prlimit's exit): it says nothing of a GPU
        return False, f"no CUDA device found: the probe ({runner.name}) did not run: {why}"
    if r.rc != 77:
        return False, why if why.startswith(GPU_FAILED) else f"{GPU_FAILED}: its probe ended with {why}"
    return False, no_gpu_reason(why if "CUDA" in why or "device" in why else f"no CUDA device: {why}")


def no_gpu_reason(why: str, dev: Path = Path("/dev"), smi: str | None = "") -> str:
    """CUDA says "driver version is insufficient" on a machine with no driver
    at all, which sends people to upgrade a driver they do not have: say
    what is missing instead. (smi "" looks nvidia-smi up on the PATH.)"""
    if "driver version is insufficient" not in why:
        return why
    smi = shutil.which("nvidia-smi") if smi == "" else smi
    if not any(dev.glob("nvidia*")) and not smi:
        return ("no NVIDIA GPU or driver on this machine (no /dev/nvidia*, no nvidia-smi): the GPU checks need "
                "a machine with an NVIDIA GPU and its driver")
    return why


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
    """The steps whose every test passed in these runs (step_of: a suite's
    name -> its step number or None, Lab.step_of_suite)."""
    ok: dict[int, bool] = {}
    for br in tests.values():
        for o in br.outcomes.values():
            n = step_of(o.suite)
            if n is not None:
                ok[n] = ok.get(n, True) and o.status == "PASSED"
    return sorted(n for n, good in ok.items() if good)


def failing_steps(tests: dict[str, BinaryRun], step_of) -> list[int]:
    """The steps with a test that failed or crashed but none that timed out:
    a sanitizer can still run them to the end."""
    state: dict[int, set[str]] = {}
    for br in tests.values():
        for o in br.outcomes.values():
            n = step_of(o.suite)
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


# The runner's buffers at exactly the interface's sizes, no guard zones inside the allocation (cml_buffer.h), for
# the tools that check bounds: a read past an input's end is then outside every allocation, where they see it.
EXACT_BUFFERS = {"CML_EXACT_BUFFERS": "1"}
EXACT_BUFFERS_FOR = ("memcheck",)


def run_sanitizer(exe: Executor, tool: str, runner: Path, configs: list[str], deadline: Deadline, own_timeout: float,
                  cwd: Path, gpu_env: dict[str, str], readable: list[Path],
                  steps: str = "all") -> tuple[SanitizerReport, str]:
    """compute-sanitizer --tool T over one runner process that checks every
    config in turn (`runner --step STEPS ARGS1 --check-only --then --step
    STEPS ARGS2 --check-only ...`: one CUDA context, one instrumentation);
    with the report, the config whose run the first finding came from."""
    cs = find_tool("compute-sanitizer")
    if not cs:
        return SanitizerReport("unavailable", "compute-sanitizer not found", 0, None), ""
    if tool in EXACT_BUFFERS_FOR:
        gpu_env = dict(gpu_env, **EXACT_BUFFERS)
    if deadline.expired():
        return SanitizerReport("incomplete", "the lab's time limit ran out", 0, None), ""
    configs = configs or [""]
    words: list[str] = []
    for k, cfg in enumerate(configs):
        words += (["--then"] if k else []) + ["--step", steps, *shlex.split(cfg), "--check-only"]
    argv = [cs, "--tool", tool, "--error-exitcode", "99", "--print-limit", "20", str(runner), *words]
    r = exe.run(argv, cwd=cwd, timeout=deadline.limit(own_timeout * len(configs)), writable=[cwd],
                readable=readable, env=gpu_env)
    if r.timed_out:
        return (SanitizerReport("incomplete", "timed out (a kernel that never ends?)", 0, None, r.output),
                f"--step {steps} {_config_of(r.output, len(r.output), configs)}")
    rep = parse_sanitizer(r.output, r.rc)
    if rep.state == "clean":
        return rep, ""
    return rep, f"--step {steps} {_config_of(r.output, first_finding_at(r.output), configs)}"


_RUN_LINE = re.compile(r"^run (\d+) of (\d+):", re.M)


def _config_of(text: str, at: int, configs: list[str]) -> str:
    """The config of the run that had started by position `at` of a
    `--then` process's output (the runner's "run K of N:" lines; the first
    config where there are none: a single run prints none)."""
    k = 1
    for m in _RUN_LINE.finditer(text, 0, at):
        if int(m.group(2)) == len(configs):
            k = int(m.group(1))
    return configs[min(max(k, 1), len(configs)) - 1]


def run_counters(exe: Executor, runner: Path, steps: list[int], timeout: float, cwd: Path,
                 gpu_env: dict[str, str], readable: list[Path]) -> CounterReport:
    with alone_on(gpu_env):   # the runner's counters come from Nsight Compute: the GPU to itself (gpushare.py)
        r = exe.run([str(runner), "--step", ",".join(str(s) for s in sorted(set(steps))), "--counters"], cwd=cwd,
                    timeout=timeout, writable=[cwd], readable=readable, env=gpu_env)
    if r.timed_out:
        return CounterReport(False, "timed out")
    rep = parse_counters(r.stdout)
    if not rep.available and r.rc not in (0, 1) and rep.reason == "the runner printed no counter lines":
        tail = (r.stderr.strip().splitlines() or [""])[-1]
        return CounterReport(False, f"the runner failed (exit {r.rc}) {tail}".strip())
    return rep


def _one_timing(exe: Executor, runner: Path, step: int, args: list[str], timeout: float, cwd: Path,
                gpu_env: dict[str, str], readable: list[Path]):
    r = exe.run([str(runner), "--step", str(step), *args, "--json"], cwd=cwd, timeout=timeout, writable=[cwd],
                readable=readable, env=gpu_env)
    if r.timed_out:
        return None, False, "timed out"
    try:
        rows = parse_runner_json(r.stdout)
    except ReportError as e:
        return None, False, f"{e} (exit {r.rc})"
    row = rows.get(step)
    if row is None:
        return None, False, "the runner reported no row for the step"
    return row.median_ms, row.correct and row.status == "ok", "" if row.status == "ok" else f"runner: {row.status}"


def run_perf(exe_student: Executor, exe_ref: Executor, runner: Path, ref_runner: Path, step: int, args: str,
             repeats: int, deadline: Deadline, own_timeout: float, cwd: Path, gpu_env: dict[str, str],
             readable: list[Path]) -> PerfResult:
    """Student and reference runs alternate (S R R S S R ...), `repeats` each;
    the result is the median of each side's median_ms."""
    a = shlex.split(args)
    res = PerfResult(step, None, None, True)
    for i in range(repeats):
        order = ("s", "r") if i % 2 == 0 else ("r", "s")
        for who in order:
            if deadline.expired():
                res.note = "the lab's time limit ran out"
                break
            if who == "s":
                ms, ok, note = _one_timing(exe_student, runner, step, a, deadline.limit(own_timeout), cwd, gpu_env,
                                           readable)
                if not ok:
                    res.correct, res.note = False, note or "wrong answer"
                    return res
                res.samples_student.append(ms)
            else:
                ms, ok, note = _one_timing(exe_ref, ref_runner, step, a, deadline.limit(own_timeout), cwd, gpu_env, [])
                if ms is None:
                    res.note = f"the reference could not be timed: {note}"
                    return res
                res.samples_ref.append(ms)
    if res.samples_student and res.samples_ref:
        res.student_ms = statistics.median(res.samples_student)
        res.ref_ms = statistics.median(res.samples_ref)
    return res


def first_lines(text: str, n: int = 5) -> str:
    return "\n".join(ln for ln in text.splitlines() if ln.strip())[:n]


def is_no_gpu(text: str) -> bool:
    return re.search(r"no CUDA device", text) is not None


# ------------------------------------------------------------ the CPU path's checks (no GPU)

_CPU_RACE = re.compile(r"^cml-cpu racecheck: (Race reported between[^\n]*)", re.M)
_CPU_FAULT = re.compile(r"^cml-cpu: ([^\n]*)\n\s+in kernel (\S+)[^\n]*\n(?:[^\n]*\n)?\s+at ([^\n]*)", re.M)
CPU_TOOLS = {"memcheck": "", "racecheck": "race"}   # rubric tool -> CML_CPU_CHECK value ("" : the bounds reports)


def run_cpu_check(exe: Executor, tool: str, runner: Path, configs: list[str], deadline: Deadline, own_timeout: float,
                  cwd: Path, env: dict[str, str], readable: list[Path], steps: str) -> tuple[SanitizerReport, str]:
    """The CPU path's stand-in for a compute-sanitizer tool: memcheck is the
    runtime's out-of-bounds, fault and deadlock reports (always on), racecheck
    CML_CPU_CHECK=race; on `runner --step STEPS ARGS --check-only` for each
    config. What a student process prints can only add findings here: a
    clean result is the absence of the runtime's reports and exit 0."""
    cfg_env = dict(env, **(EXACT_BUFFERS if tool in EXACT_BUFFERS_FOR else {}))
    if CPU_TOOLS[tool]:
        cfg_env["CML_CPU_CHECK"] = CPU_TOOLS[tool]
    rep = SanitizerReport("clean", "the CPU path's checks: no finding", 0, None)
    for cfg in configs:
        if deadline.expired():
            return SanitizerReport("incomplete", "the lab's time limit ran out", 0, None), cfg
        argv = [str(runner), "--step", steps, *shlex.split(cfg), "--check-only"]
        r = exe.run(argv, cwd=cwd, timeout=deadline.limit(own_timeout), writable=[cwd], readable=readable, env=cfg_env)
        where = f"--step {steps} {cfg}"
        if r.timed_out:
            return SanitizerReport("incomplete", "timed out (a kernel that never ends?)", 0, None, r.output), where
        races = _CPU_RACE.findall(r.stderr)
        faults = list(_CPU_FAULT.finditer(r.stderr))
        if tool == "racecheck" and (races or r.rc == 86):
            first = SanitizerFinding(races[0] if races else "race reported", "", _loc(races[0] if races else ""))
            return SanitizerReport("errors", f"CPU race check: {len(races)} hazards", len(races) or 1, first,
                                   r.stderr[-20000:]), where
        if tool == "memcheck" and (faults or (r.rc not in (0, 1) and "cml-cpu:" in r.stderr)):
            f = faults[0] if faults else None
            first = SanitizerFinding(f.group(1), f.group(2), _loc(f.group(3))) if f else None
            return SanitizerReport("errors", f"CPU path: {len(faults) or 1} memory errors (exit {r.rc})",
                                   len(faults) or 1, first, r.stderr[-20000:]), where
    return rep, ""


def _loc(text: str) -> str:
    m = re.search(r"([\w.+-]+\.(?:cu|cuh|c|h|cpp)):(\d+)", text)
    return f"{m.group(1)}:{m.group(2)}" if m else ""

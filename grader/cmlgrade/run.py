"""The run stage: Criterion tests (JSON report into a grader-owned folder),
compute-sanitizer, the runners' counters and performance against the
reference, each under a timeout that never outlives the lab's wall clock.

This module runs the sanitizers: compute-sanitizer over a runner, or on
the CPU path the runtime's own checks in its place. The tests are
runtests.py's, the counters and timings runmeasure.py's, the CUDA tools
and GPUs of this machine machine.py's, and the lab's wall clock and the
calls run side by side runbase.py's."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

from .machine import find_tool   # run_sanitizer and checker.py look it up here (tests patch run.find_tool)
from .parsers import SanitizerFinding, SanitizerReport, first_finding_at, parse_sanitizer
from .runbase import Deadline
from .sandbox import Executor

# names this module defined (or imported: BinaryRun) before machine.py, runbase.py, runmeasure.py and
# runtests.py were split from it: importable from here still
from .machine import GPU_FAILED, NO_GPU_RC, is_no_gpu, list_gpus, no_gpu_reason, probe_gpu  # noqa: F401
from .results import BinaryRun  # noqa: F401
from .runbase import GPU_SIDE_BY_SIDE, first_lines, side_by_side  # noqa: F401
from .runmeasure import _one_timing, run_counters, run_perf  # noqa: F401
from .runtests import check_against, failing_steps, passing_steps, run_tests, run_tests_by_step  # noqa: F401


# The runner's buffers at exactly the interface's sizes, no guard zones inside the allocation (cml_buffer.h), for
# the tools that check bounds: a read past an input's end is then outside every allocation, where they see it.
EXACT_BUFFERS = {"CML_EXACT_BUFFERS": "1"}
EXACT_BUFFERS_FOR = ("memcheck",)
# memcheck's own padding after every allocation (compute-sanitizer --padding, bytes): small allocations are packed
# side by side, so a read past the end of one lands in the next, where memcheck sees a valid address; in the padding
# it sees an invalid one. The kit's own sanitizer tests the same (cmake/KitCriterionJson.cmake,
# kit_sanitizer_tool; test_parsers holds the two equal).
TOOL_OPTIONS = {"memcheck": ["--padding", str(1 << 20)]}


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
    argv = [cs, "--tool", tool, *TOOL_OPTIONS.get(tool, []), "--error-exitcode", "99", "--print-limit", "20", str(runner), *words]
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

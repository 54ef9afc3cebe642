"""The technique traces: which kernels a step's launches ran and the
shared-memory loads and stores they made (StepTrace, KernelUse), over the
step's traced cases (trace_cases), measured outside what the student's code
can print: on a GPU by the grader's Nsight Compute run (parse_ncu_launches),
on the CPU path by the runtime's bank tracing (parse_cpu_launches); a step
at a time (trace_step) or many in one marked run (trace_steps)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .checkbase import Case, ordinary
from .checkmarks import marked_ncu_run
from .harnessio import write_input
from .parsers import UNREAD, ncu_value
from .profrun import profiled_run, read_log, read_profile
from .runbase import Deadline
from .sandbox import Executor


# ------------------------------------------------------------ technique: what a step's launches did

SHARED_METRICS = ("smsp__sass_inst_executed_op_shared_ld.sum", "smsp__sass_inst_executed_op_shared_st.sum")


@dataclass
class KernelUse:
    """One kernel's launches in a step's trace and their shared-memory
    requests (the CPU runtime's phases; on a GPU, warp instructions)."""
    launches: int = 0
    loads: float = 0.0
    stores: float = 0.0


@dataclass
class StepTrace:
    """Every launch a step made while the harness ran its traced cases, by
    kernel: the name as the tool gives it (the CPU runtime's demangled name
    without parameters or spaces, e.g. conv_kernel<3,constant_filter>; on a
    GPU, ncu's mangled name). static.step_kernels maps them to the SASS."""
    kernels: dict[str, KernelUse] = field(default_factory=dict)
    cases: int = 0      # how many cases the harness ran

    @property
    def loads(self) -> float:
        return sum(k.loads for k in self.kernels.values())

    @property
    def stores(self) -> float:
        return sum(k.stores for k in self.kernels.values())


def trace_cases(lab_name: str, seed: int, cpu: bool, step: int) -> list[Case]:
    """The cases a step is traced on: its two largest ordinary checked cases
    (checkbase.ordinary; the same for the student's harness and the
    reference's)."""
    from .checker import CHECKERS, make_cases   # read when called: checker.py imports this module
    chk = CHECKERS[lab_name]
    return sorted(ordinary(chk.step_cases(make_cases(lab_name, seed, cpu), step)), key=lambda c: c.count)[-2:]


def parse_cpu_launches(text: str) -> dict[str, KernelUse]:
    """The CPU runtime's CML_CPU_BANKS_LOG lines ("launch <kernel> ld
    requests=N st requests=N ..."), summed by kernel."""
    import re
    out: dict[str, KernelUse] = {}
    for name, ld, st in re.findall(r"^launch (\S+) ld requests=(\d+) st requests=(\d+)", text, re.M):
        k = out.setdefault(name, KernelUse())
        k.launches += 1
        k.loads += int(ld)
        k.stores += int(st)
    return out


def parse_ncu_launches(text: str, unread: list[str] | None = None) -> dict[str, KernelUse] | None:
    """ncu's CSV (--print-kernel-base mangled, SHARED_METRICS), summed by
    kernel; a launch is one "ID" of the table. None where a launch's
    counter is no number (parsers.ncu_value; why, in `unread`): the trace
    is taken again, never read as a launch without shared memory."""
    import csv
    import io
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    start = next((i for i, r in enumerate(rows) if "Metric Name" in r and "Kernel Name" in r), None)
    if start is None:
        return {}
    head = rows[start]
    at = {c: head.index(c) for c in ("ID", "Kernel Name", "Metric Name", "Metric Value") if c in head}
    if len(at) < 4:
        return {}
    out: dict[str, KernelUse] = {}
    seen: set[tuple[str, str]] = set()
    for r in rows[start + 1:]:
        if len(r) <= max(at.values()) or r[at["Metric Name"]] not in SHARED_METRICS:
            continue
        name = r[at["Kernel Name"]]
        v = ncu_value(r[at["Metric Value"]])
        if v is None:
            if unread is not None:
                unread.append(UNREAD.format(cell=r[at["Metric Value"]], metric=r[at["Metric Name"]], kernel=name[:80]))
            return None
        k = out.setdefault(name, KernelUse())
        if (r[at["ID"]], name) not in seen:
            seen.add((r[at["ID"]], name))
            k.launches += 1
        if r[at["Metric Name"]] == SHARED_METRICS[0]:
            k.loads += v
        else:
            k.stores += v
    return out


def trace_step(exe: Executor, harness: Path, lab_name: str, step: int, seed: int, out_dir: Path, timeout: float,
               env: dict[str, str], readable: list[Path], cpu: bool,
               tag: str = "student") -> tuple[StepTrace | None, str]:
    """Which kernels a step launches and the shared-memory loads and stores
    they make, over trace_cases, measured outside what the student's code
    can print: on a GPU by the grader's own Nsight Compute run on the
    harness (every kernel, not only the lab's names), on the CPU path by the
    runtime's bank tracing written to a file of the grader's folder
    (CML_CPU_CHECK=banks, CML_CPU_BANKS_LOG). (StepTrace, "") or (None, why
    not)."""
    cases = trace_cases(lab_name, seed, cpu, step)
    work = out_dir / f"technique-{tag}-step{step}"
    work.mkdir(parents=True, exist_ok=True)
    inp, outp, log = work / "input.bin", work / "output.bin", work / ("banks.log" if cpu else "ncu.csv")
    write_input(inp, step, cases)
    for p in (outp, log):
        p.unlink(missing_ok=True)
    if cpu:
        cmd = [str(harness), str(inp), str(outp)]
        env = dict(env, CML_CPU_CHECK="banks", CML_CPU_BANKS_LOG=str(log))
    else:
        from .run import find_tool
        ncu = find_tool("ncu")
        if ncu is None:
            return None, "ncu not found"
        # mangled names: what cuobjdump calls the same functions (static.step_kernels)
        cmd = [ncu, "--csv", "--log-file", str(log), "--clock-control", "none", "--print-kernel-base", "mangled",
               "--metrics", ",".join(SHARED_METRICS), str(harness), str(inp), str(outp)]
    bad = ""
    if cpu:
        r = exe.run(cmd, cwd=work, timeout=timeout, writable=[work], readable=readable, env=env)
        text = read_log(log, 1 << 22)
    else:   # the GPU to itself, its context made before (profrun.py), and the host's Nsight Compute lock (gpuhold.py)
        r = profiled_run(exe, cmd, work, timeout, env, readable, Deadline(timeout))
        text, bad = read_profile(log, 1 << 22)
    if r.timed_out:
        return None, f"timed out after {timeout:.0f} s"
    if bad:
        return None, bad
    if cpu:   # no launch line at all: no launch, no shared memory either
        return StepTrace(parse_cpu_launches(text), len(cases)), ""
    unread: list[str] = []
    kernels = parse_ncu_launches(text, unread)
    if kernels is None:
        return None, unread[0]
    if not kernels:
        why = next((ln.strip() for ln in (r.stdout + r.stderr).splitlines() if "ERR_" in ln or "==ERROR==" in ln), "")
        if not why and r.rc == 0:
            return StepTrace({}, len(cases)), ""
        return None, why or f"ncu ended with status {r.rc}"
    return StepTrace(kernels, len(cases)), ""


def trace_steps(exe: Executor, harness: Path, lab_name: str, steps: list[int], seed: int, out_dir: Path,
                timeout: float, env: dict[str, str], readable: list[Path], cpu: bool,
                tag: str = "student", total: float | None = None) -> dict[int, tuple[StepTrace | None, str]]:
    """trace_step for several steps: on a GPU in one Nsight Compute run
    (marked_ncu_run); a step whose part of that run failed is traced again
    in a run of its own, as trace_step does, so one step's failure never
    costs another its trace (so is a step one of whose counters ncu gave
    as no number). On the CPU path each step is traced in a run
    of its own. `timeout` is a step's limit; the run of them all has
    `total` (default: a step's limit per step)."""
    steps = list(dict.fromkeys(steps))
    got: dict[int, tuple[StepTrace | None, str]] = {}
    if not cpu and len(steps) > 1:
        per = {s: trace_cases(lab_name, seed, cpu, s) for s in steps}
        for s, text in marked_ncu_run(exe, harness, lab_name, per, list(SHARED_METRICS),
                                      out_dir / f"technique-{tag}-steps", total or timeout * len(steps), env,
                                      readable).items():
            kernels = parse_ncu_launches(text)
            if kernels is not None:   # a counter unread: the step is traced again alone
                got[s] = (StepTrace(kernels, len(per[s])), "")
    for s in steps:   # the rest, a step a run
        if s not in got:
            got[s] = trace_step(exe, harness, lab_name, s, seed, out_dir, timeout, env, readable, cpu, tag)
    return {s: got[s] for s in steps}


def shared_use(exe: Executor, harness: Path, lab_name: str, step: int, seed: int, out_dir: Path, timeout: float,
               env: dict[str, str], readable: list[Path], cpu: bool) -> tuple[tuple[float, float] | None, str]:
    """The shared-memory loads and stores every launch of a step made
    (trace_step's sums). ((loads, stores), "") or (None, why not)."""
    t, why = trace_step(exe, harness, lab_name, step, seed, out_dir, timeout, env, readable, cpu)
    return (None, why) if t is None else ((t.loads, t.stores), "")

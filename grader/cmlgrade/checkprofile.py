"""A lab's one Nsight Compute run (lab_profile): the technique traces of
the steps it traces (checktrace.py) and the hardware counters of the steps
it counts (checkcount.py), each step's traced cases and its counter cases a
segment of their own after the kit's mark, in one marked run of the harness
(checkmarks.marked_ncu_run) that reads every metric. One profiled process a
lab, not one for the traces and one for the counters: each run of ncu costs
a CUDA context made under the profiler and the GPU held alone. A segment
whose part of that run failed is measured again alone, as the traces and
the counters were before (trace_step, counters_step), so one step's failure
never costs another its value. See docs/grading.md §8 (the technique) and
§9 (one Nsight Compute run a lab)."""
from __future__ import annotations

from pathlib import Path

from .checkcount import counters_step, parse_ncu_csv
from .checkmarks import marked_ncu_run
from .checktrace import SHARED_METRICS, StepTrace, parse_ncu_launches, trace_cases, trace_step, trace_steps
from .sandbox import Executor


def counted_by_harness(lab) -> bool:
    """Counters from the grader's ncu run on the kit-only harness (not from
    the student-linked runner's --counters lines)."""
    from .checker import CHECKERS   # read when called: checker.py imports checkcount
    return bool(lab.harness) and not lab.cpu and lab.name in CHECKERS and all(c.metric for c in lab.counter_checks)


def lab_profile(exe: Executor, harness: Path, lab, traced: list[int], counted: list[int], seed: int, out_dir: Path,
                trace_limit: float, count_limit: float, env: dict[str, str], readable: list[Path], tag: str,
                total: float | None = None):
    """(traces, counters): trace_steps' answer for the steps `traced` and a
    CounterReport (parsers.py) of the lab's counter checks for the steps
    `counted`, on a GPU from one marked Nsight Compute run where there is
    more than one segment. `trace_limit` and `count_limit` are a segment's
    limits; the run of them all has `total` (default: their sum). Without
    counted steps, the traces alone (trace_steps); counters is None when
    none were asked for."""
    from .checker import CHECKERS, make_cases   # read when called: checker.py imports checkcount
    from .parsers import CounterReport
    traced, counted = list(dict.fromkeys(traced)), list(dict.fromkeys(counted))
    if not counted:
        return (trace_steps(exe, harness, lab.name, traced, seed, out_dir, trace_limit, env, readable, False, tag,
                            total) if traced else {}), None
    metric = {c.step: c.metric for c in lab.counter_checks}
    ck = CHECKERS[lab.name]
    every = make_cases(lab.name, seed, False)
    per: dict = {("trace", s): trace_cases(lab.name, seed, False, s) for s in traced}
    per.update({("count", s): ck.counter_cases(ck.step_cases(every, s), s) for s in counted})
    metrics = list(dict.fromkeys(list(SHARED_METRICS) + [metric[s] for s in counted]))
    if total is None:
        total = trace_limit * len(traced) + count_limit * len(counted)
    got = marked_ncu_run(exe, harness, lab.name, per, metrics, out_dir / f"profile-{tag}-steps", total, env,
                         readable) if len(per) > 1 else {}
    traces = {}
    for s in traced:   # a step whose part failed, or one of whose counters is no number: traced alone
        text = got.get(("trace", s))
        kernels = parse_ncu_launches(text) if text is not None else None
        traces[s] = (StepTrace(kernels, len(per[("trace", s)])), "") if kernels is not None else \
            trace_step(exe, harness, lab.name, s, seed, out_dir, trace_limit, env, readable, False, tag)
    rep = CounterReport(True, "")
    for s in counted:   # a step whose part failed, counted nothing or no number: counted alone
        value, n = parse_ncu_csv(got.get(("count", s), ""), metric[s])
        if n and value is not None:
            rep.conflicts[s] = value
            continue
        v, why = counters_step(exe, harness, lab.name, s, seed, metric[s], out_dir, count_limit, env, readable, tag)
        if v is None:
            rep.missing[s] = why
        else:
            rep.conflicts[s] = v
    if not rep.conflicts and rep.missing and len(set(rep.missing.values())) == 1:
        rep = CounterReport(False, next(iter(rep.missing.values())))
    return traces, rep

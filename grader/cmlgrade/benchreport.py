"""What the benchmark reports of a graded class (bench.py grades it): the
seconds of each phase per submission-lab, the verdicts against what each
synthetic submission is, the table of modes and the time a class of CLASS
would take."""
from __future__ import annotations

import statistics
import sys

PHASES = ("build", "tests", "sanitizers", "counters", "timing")


def summarize(results, wall: float, setup: dict[str, float]) -> dict:
    per: dict[str, list[float]] = {p: [] for p in PHASES}
    gpu_stage: list[float] = []
    waited: list[float] = []
    began: list[float] = []
    ended: list[float] = []
    n = 0
    for r in results:
        for lab, t in sorted(r.timings.items()):
            n += 1
            for p in PHASES:
                per[p].append(float(t.get(p, 0.0)))
            gpu_stage.append(float(t.get("gpu", 0.0)))
            waited.append(float(t.get("waiting alone", 0.0)))
            if "began" in t and "ended" in t and not t.get("cached"):
                began.append(float(t["began"]))
                ended.append(float(t["ended"]))
    row = {p: {"mean": round(statistics.fmean(v), 2) if v else 0.0,
               "median": round(statistics.median(v), 2) if v else 0.0,
               "max": round(max(v), 2) if v else 0.0} for p, v in per.items()}
    return {"submission_labs": n, "phases": row, "class_total_s": round(wall, 1),
            "per_batch_s": {k: round(v, 1) for k, v in setup.items()},
            "per_submission_lab_s": round(wall / n, 2) if n else 0.0,
            "gpu_stage_s": round(statistics.fmean(gpu_stage), 2) if gpu_stage else 0.0,
            # of the phases' seconds (the counters' and the timing's), those spent waiting for the GPU alone:
            # the other workers' processes on it ending (--per-gpu N), not this lab's work
            "waiting_alone_s": round(statistics.fmean(waited), 2) if waited else 0.0,
            # the class's steady state: from the first lab run's start (after the first slot's pristine build) to the
            # last one's end, every lab run of the class inside it (None: no run timed, e.g. all cached)
            "runs_span_s": round(max(ended) - min(began), 1) if began else None,
            "runs_began_s": round(min(began), 1) if began else None,
            "runs_counted": len(began)}


def verdicts(results) -> dict:
    """Each synthetic submission-lab against what it is (make_class): a lab
    left as the reference earns every point it is graded on; the lab a
    catalogued mistake was made in earns fewer. The misses, by name."""
    docked, missed, ref_labs, mistakes = [], [], 0, 0
    for r in results:
        made = r.student.split("_", 1)[1]   # "reference" or "<lab's two digits>_<mistake>"
        for ls in r.labs:
            if not ls.submitted:   # --mistakes-alone: the labs a mistake's submission leaves out
                continue
            if made != "reference" and ls.lab.startswith(made[:2] + "_"):
                mistakes += 1
                if ls.points >= ls.max_points:
                    missed.append(f"{r.student} {ls.lab}: {ls.points:g}/{ls.max_points:g}")
            else:
                ref_labs += 1
                if ls.points < ls.max_points:
                    docked.append(f"{r.student} {ls.lab}: {ls.points:g}/{ls.max_points:g}")
    return {"reference_labs": ref_labs, "reference_docked": docked, "mistake_labs": mistakes,
            "mistakes_not_caught": missed}


def print_verdicts(mode: str, v: dict, out=sys.stdout) -> None:
    print(f"{mode}: verdicts: {v['reference_labs'] - len(v['reference_docked'])} of {v['reference_labs']} labs left "
          f"as the reference at full marks; {v['mistake_labs'] - len(v['mistakes_not_caught'])} of "
          f"{v['mistake_labs']} labs with a catalogued mistake lose points", file=out)
    for line in v["reference_docked"]:
        print(f"    reference docked: {line}", file=out)
    for line in v["mistakes_not_caught"]:
        print(f"    mistake not caught: {line}", file=out)


CLASS = (300, 6)   # the projection's class: students x labs


def projection(s: dict, per_gpu: int, gpus_here: int) -> str:
    """The time a class of CLASS would take on 1, 4 and 8 GPUs at the GPU
    wall seconds this run spent per submission-lab, measured, not assumed:
    the class's wall time x the GPUs it ran on / its submission-labs (with
    --per-gpu N the submissions sharing a GPU overlap, by as much as they
    really did), GPU-bound, and the builds' CPU time alongside."""
    n = CLASS[0] * CLASS[1]
    per = s["class_total_s"] * max(1, gpus_here) / max(1, s["submission_labs"])
    build = s["phases"]["build"]["mean"]
    hours = "  ".join(f"{g} GPU{'s' if g > 1 else ''}: {n * per / g / 3600:.1f} h" for g in (1, 4, 8))
    return (f"{per:.1f} GPU wall seconds per submission-lab (the class's {s['class_total_s']:.0f} s x "
            f"{gpus_here} GPU(s) / {s['submission_labs']} submission-labs, --per-gpu {per_gpu}; one submission-lab's "
            f"GPU stage alone: {s['gpu_stage_s']:.1f} s); {CLASS[0]} students x {CLASS[1]} labs ({n} "
            f"submission-labs), GPU-bound: {hours}; builds {n * build / 3600:.1f} CPU-hours alongside")


def steady_projection(s: dict, gpus_here: int) -> str | None:
    """The class of CLASS at this run's steady state: the wall seconds from
    the first lab run's start to the last one's end x the GPUs / the lab
    runs in them (each run's reference runs and every ramp and tail inside
    it, so a class of a few submissions overstates it), plus the seconds
    before the first lab run, once (the first slot's pristine build; the
    reference build before the class's clock starts, said beside it).
    None without the runs' times."""
    span, runs = s.get("runs_span_s"), s.get("runs_counted", 0)
    if span is None or not runs:
        return None
    n = CLASS[0] * CLASS[1]
    per = span * max(1, gpus_here) / runs
    once = (s.get("runs_began_s") or 0.0) + s.get("per_batch_s", {}).get("reference build and skeletons", 0.0)
    hours = "  ".join(f"{g} GPU{'s' if g > 1 else ''}: {(once + n * per / g) / 3600:.1f} h" for g in (1, 4, 8))
    return (f"{per:.1f} GPU wall seconds per submission-lab from the first lab run's start to the last one's end "
            f"({span:.0f} s x {gpus_here} GPU(s) / {runs} submission-labs), {once:.0f} s before it once (reference "
            f"build, skeletons, the first slot's pristine build); {CLASS[0]} students x {CLASS[1]} labs: {hours}")


def print_table(rows: dict[str, dict], out=sys.stdout) -> None:
    print(f"{'mode':<10} {'sub-labs':>8} " + " ".join(f"{p + ' (mean/max)':>22}" for p in PHASES)
          + f" {'class total':>12} {'per sub-lab':>12}", file=out)
    for mode, s in rows.items():
        cells = " ".join(f"{s['phases'][p]['mean']:>10.2f} /{s['phases'][p]['max']:>10.2f}" for p in PHASES)
        print(f"{mode:<10} {s['submission_labs']:>8} {cells} {s['class_total_s']:>10.1f} s "
              f"{s['per_submission_lab_s']:>10.2f} s", file=out)
    for mode, s in rows.items():
        if s.get("waiting_alone_s"):
            print(f"{mode}: of those seconds, {s['waiting_alone_s']:.2f} a submission-lab (mean) waited for the GPU "
                  f"alone (Nsight Compute, the timing) while the other submissions' processes on it ended, or for "
                  f"another Nsight Compute run on the host", file=out)
    for mode, s in rows.items():
        if "class_cpu_s" in s:
            print(f"{mode}: the class took {s['class_cpu_s']:.1f} CPU seconds in all", file=out)
    for mode, s in rows.items():
        once = ", ".join(f"{k} {v:.1f} s" for k, v in s["per_batch_s"].items())
        print(f"{mode}: once per batch: {once}", file=out)

"""The grader's throughput benchmark: grades a synthetic class (N
submissions cycling through the reference solutions and every catalogued
mistake, each made with `labtool mutate-lab`) and prints the seconds per
submission-lab of each phase (build, tests, sanitizers, counters, timing),
the once-per-batch costs and the class total.

With `--modes fresh,prebuilt` (the default) it grades the same class twice
in one run on the same machine: `fresh` is each submission in its own
configured copy of the kit (the grader before issue 16), `prebuilt` the
pristine kit built once per batch with only the student's files compiled
per submission. It then compares every output file of the first and the
last mode byte for byte: the verdicts must be the same. `checker-first` is
`prebuilt` with grade.py's --public-tests failing (the kit-only checks
first, Criterion only on the steps they do not find right): `--modes
prebuilt,checker-first` is its proof, verdict for verdict.

    python3 grader/tools/bench --class 8 --jobs 1
"""
from __future__ import annotations

import argparse
import filecmp
import json
import re
import os
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from .build import clock, set_clock
from .intake import Submission
from .labs import LabError, load_labs
from .pipeline import Pipeline
from .stagebase import GraderError, Options
from .report import write_all
from .run import list_gpus

PHASES = ("build", "tests", "sanitizers", "counters", "timing")
MODES = ("fresh", "prebuilt", "checker-first")


_CPU = threading.local()


class _MeteredPopen(subprocess.Popen):
    """Popen that adds each child's CPU seconds (user + system, its own
    waited-for children included: make, nvcc, cc1 ...) to the waiting
    thread's total. The grader runs a submission's build, and a lab's run,
    in one thread each, so the difference of that total around a stage is
    the stage's CPU seconds, whatever else the machine is doing."""

    def _try_wait(self, wait_flags):   # wait()
        try:
            pid, sts, ru = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            return self.pid, 0
        if pid == self.pid:
            _CPU.s = getattr(_CPU, "s", 0.0) + ru.ru_utime + ru.ru_stime
        return pid, sts

    def poll(self):   # poll() reaps without _try_wait
        if self.returncode is None:
            pid, sts = self._try_wait(os.WNOHANG)
            if pid == self.pid:
                self._handle_exitstatus(sts)
        return self.returncode


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def cpu_clock() -> float:
    return getattr(_CPU, "s", 0.0)


def use_cpu_clock() -> None:
    """Stage seconds become the CPU seconds of the stage's processes."""
    subprocess.Popen = _MeteredPopen
    set_clock(cpu_clock)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--class", dest="size", type=int, default=6, metavar="N",
                   help="submissions in the synthetic class (default 6)")
    p.add_argument("--lab", action="append", metavar="LAB", help="only this lab (repeat for more; default all)")
    p.add_argument("--modes", default="fresh,prebuilt",
                   help=f"comma-separated, in order, from {', '.join(MODES)} (default: fresh,prebuilt); the "
                        "outputs of the first and the last are compared")
    p.add_argument("--jobs", type=int, default=1, help="CPU jobs (default 1: seconds on one core)")
    p.add_argument("--per-gpu", type=int, default=1, metavar="N", help="as grade.py's --per-gpu (default 1)")
    p.add_argument("--mistakes-alone", action="store_true",
                   help="each catalogued mistake's submission holds only the lab it was made in (the reference's "
                        "holds every lab): comparing modes over every mistake of several labs without grading "
                        "the reference's copies of the other labs again and again (not a class's mix: the "
                        "projection is then not a class's)")
    p.add_argument("--work", type=Path, help="work folder (default: a temporary one, removed)")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the numbers here")
    p.add_argument("--cuda-arch", default="", help="as grade.py's --cuda-arch")
    p.add_argument("--kit", type=Path, default=Path(__file__).resolve().parent.parent.parent)
    p.add_argument("--progress", action="store_true", help="the grader's progress lines on stderr")
    p.add_argument("--path", choices=("auto", "cuda", "cpu"), default="auto",
                   help="build and run on the CUDA build or the CPU path (common/cpu); auto: the grader's choice "
                        "(the CPU path when no GPU is listed)")
    p.add_argument("--sandbox", action="store_true", help="grade inside bubblewrap as grade.py does (default off "
                   "with --clock cpu: the sandbox's PID namespace hides its processes' CPU time from the count)")
    p.add_argument("--clock", choices=("cpu", "wall"), default="",
                   help="seconds of what: the CPU seconds of the grader's child processes (default without a "
                        "GPU: right on a shared machine) or wall time (default with a GPU: GPU phases)")
    return p


def make_class(kit: Path, labs, labtool: Path | None, size: int, out: Path, alone: bool = False) -> list[Submission]:
    """`size` submissions: s000_reference, s001_<lab>_<mistake>, ... cycling
    through the reference and each catalogued mistake (the mistake's lab
    mutated, every other lab the reference; with `alone`, no other lab)."""
    ref = {lab.name: {f: (kit / lab.solution_dir / f).read_bytes() for f in lab.files} for lab in labs}
    variants: list[tuple[str, dict]] = [("reference", ref)]
    for lab in labs:
        if not lab.mistakes:
            continue
        if labtool is None:
            raise GraderError("labtool was not built: the mistakes are made with labtool mutate-lab")
        catalogue = kit / lab.solution_dir / "mistakes.toml"
        for m in lab.mistakes:
            d = out / "mistakes" / lab.name / m.name
            d.mkdir(parents=True, exist_ok=True)
            subprocess.run([str(labtool), "mutate-lab", str(kit / lab.solution_dir), str(catalogue), m.name, str(d),
                            *lab.files], check=True, stdout=subprocess.DEVNULL)
            files = {} if alone else dict(ref)
            files[lab.name] = {f: (d / f).read_bytes() for f in lab.files}
            variants.append((f"{lab.name[:2]}_{m.name}", files))
    subs = []
    for k in range(size):
        name, files = variants[k % len(variants)]
        subs.append(Submission(student=f"s{k:03d}_{name}", source="synthetic", files=files))
    return subs


def summarize(results, wall: float, setup: dict[str, float]) -> dict:
    per: dict[str, list[float]] = {p: [] for p in PHASES}
    gpu_stage: list[float] = []
    n = 0
    for r in results:
        for lab, t in sorted(r.timings.items()):
            n += 1
            for p in PHASES:
                per[p].append(float(t.get(p, 0.0)))
            gpu_stage.append(float(t.get("gpu", 0.0)))
    row = {p: {"mean": round(statistics.fmean(v), 2) if v else 0.0,
               "median": round(statistics.median(v), 2) if v else 0.0,
               "max": round(max(v), 2) if v else 0.0} for p, v in per.items()}
    return {"submission_labs": n, "phases": row, "class_total_s": round(wall, 1),
            "per_batch_s": {k: round(v, 1) for k, v in setup.items()},
            "per_submission_lab_s": round(wall / n, 2) if n else 0.0,
            "gpu_stage_s": round(statistics.fmean(gpu_stage), 2) if gpu_stage else 0.0}


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


def print_table(rows: dict[str, dict], out=sys.stdout) -> None:
    print(f"{'mode':<10} {'sub-labs':>8} " + " ".join(f"{p + ' (mean/max)':>22}" for p in PHASES)
          + f" {'class total':>12} {'per sub-lab':>12}", file=out)
    for mode, s in rows.items():
        cells = " ".join(f"{s['phases'][p]['mean']:>10.2f} /{s['phases'][p]['max']:>10.2f}" for p in PHASES)
        print(f"{mode:<10} {s['submission_labs']:>8} {cells} {s['class_total_s']:>10.1f} s "
              f"{s['per_submission_lab_s']:>10.2f} s", file=out)
    for mode, s in rows.items():
        if "class_cpu_s" in s:
            print(f"{mode}: the class took {s['class_cpu_s']:.1f} CPU seconds in all", file=out)
    for mode, s in rows.items():
        once = ", ".join(f"{k} {v:.1f} s" for k, v in s["per_batch_s"].items())
        print(f"{mode}: once per batch: {once}", file=out)


def compare(a: Path, b: Path) -> tuple[int, list[str]]:
    """Every file under a and b, byte for byte: (files compared, differences)."""
    fa = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    fb = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    diffs = [f"only in one run: {p}" for p in sorted(set(fa) ^ set(fb))]
    diffs += [str(p) for p in sorted(set(fa) & set(fb)) if not filecmp.cmp(a / p, b / p, shallow=False)]
    return len(fa), diffs


def compare_verdicts(a: Path, b: Path) -> tuple[int, list[str], list[str]]:
    """Every graded item of every student's result.json under a and b but
    the timed ones, whose times differ from run to run on a GPU: its points,
    status and feedback, and which tests its details name (a detail's text
    after its first ": " is left out, and a test that failed is one that
    crashed: a kernel that reads or writes memory it should not shows other
    values, or ends otherwise, in another run). (items compared,
    differences, and the items whose feedback differs in its numbers only:
    counts a run measures, which a race or an out-of-bounds access changes
    from run to run on a GPU: "ERROR SUMMARY: 324 errors" and "196 errors",
    "4 of 20 cases wrong" and "5 of 20"; every point and status the same)."""
    def named(detail: str) -> str:
        head = detail.split(": ", 1)[0]
        return re.sub(r" (failed|crashed|errored)$", " did not pass", head)

    def items(root: Path) -> dict[tuple, dict]:
        got = {}
        for f in sorted(root.glob("students/*/result.json")):
            res = json.loads(f.read_text(encoding="utf-8"))
            for lab in res.get("labs", []):
                got[(res["student"], lab["lab"], "build errors")] = lab.get("build_errors")
                got[(res["student"], lab["lab"], "not counted")] = lab.get("not_counted")
                for it in lab.get("items", []):
                    if it.get("category") != "performance":
                        got[(res["student"], lab["lab"], it["name"])] = (
                            it.get("points"), it.get("max_points"), it.get("status"), it.get("feedback"),
                            [named(d) for d in it.get("details", [])])
        return got
    def counts_blurred(item):
        if not isinstance(item, tuple):
            return item
        pts, mx, status, feedback, details = item
        return pts, mx, status, [re.sub(r"\d+(?:\.\d+)?", "#", f) for f in feedback or []], details

    ia, ib = items(a), items(b)
    keys = [k for k in sorted(set(ia) | set(ib)) if ia.get(k) != ib.get(k)]
    counts = [k for k in keys if counts_blurred(ia.get(k)) == counts_blurred(ib.get(k))]
    return (len(set(ia) | set(ib)), [" / ".join(k) for k in keys if k not in counts],
            [" / ".join(k) for k in counts])


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes or args.size < 1:
        print(f"bench: --modes from {', '.join(MODES)}; --class at least 1", file=sys.stderr)
        return 2
    kit = args.kit.resolve()
    try:
        labs = load_labs(kit, only=args.lab)
    except LabError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 3
    if any(not lab.solution_dir for lab in labs):
        print("bench: the synthetic class is made from solutions/: this kit has none", file=sys.stderr)
        return 3
    tmp = None
    work = args.work.resolve() if args.work else None
    if work is None:
        import tempfile
        tmp = tempfile.mkdtemp(prefix="cmlgrade-bench-")
        work = Path(tmp)
    work.mkdir(parents=True, exist_ok=True)
    rows: dict[str, dict] = {}
    subs: list[Submission] | None = None
    clock_kind = args.clock or ("wall" if list_gpus() else "cpu")
    if clock_kind == "cpu":
        use_cpu_clock()
    try:
        for mode in modes:
            for d in ("students", "results", "slots", f"out-{mode}"):
                shutil.rmtree(work / "grade" / d, ignore_errors=True)
                shutil.rmtree(work / d, ignore_errors=True)
            opts = Options(kit=kit, work=work / "grade", keep_work=True, jobs=args.jobs, arch=args.cuda_arch,
                           sandbox=args.sandbox or clock_kind == "wall",
                           cpu_path={"auto": None, "cuda": False, "cpu": True}[args.path],
                           fresh_trees=(mode == "fresh"), retime_reference=(mode == "fresh"), progress=args.progress,
                           per_gpu=max(1, args.per_gpu), public_tests="failing" if mode == "checker-first" else "all")
            pipe = Pipeline(opts, labs)
            t0 = clock()
            pipe.prepare()
            t_ref = clock() - t0
            if subs is None:
                subs = make_class(kit, labs, pipe._labtool(), args.size, work / "class", args.mistakes_alone)
                print(f"bench: a class of {len(subs)} submissions x {len(labs)} labs "
                      f"({', '.join(l.name for l in labs)}), {args.jobs} CPU job(s); "
                      f"GPU: {'yes' if pipe.gpu_ok else 'none (' + pipe.no_gpu_reason + ')'}; {pipe.sandbox.note}", file=sys.stderr)
            print(f"bench: grading in mode '{mode}' ...", file=sys.stderr, flush=True)
            t1, c1 = time.monotonic(), _children_cpu()
            results, errors = pipe.grade(subs)
            wall = time.monotonic() - t1
            for e in errors:
                print(f"bench: grader error: {e}", file=sys.stderr)
            write_all(work / f"out-{mode}", results, [l.name for l in labs], "", "; ".join(pipe.notes))
            setup = {"reference build and skeletons": t_ref}
            if pipe.slots is not None:
                setup["pristine kit (all slots)"] = pipe.slots.setup_seconds
            rows[mode] = summarize(results, wall, setup)
            rows[mode]["class_cpu_s"] = round(_children_cpu() - c1, 1)
            rows[mode]["grader_errors"] = len(errors)
            rows[mode]["verdicts"] = verdicts(results)
        what = "CPU seconds (of the grader's child processes)" if clock_kind == "cpu" else "wall seconds"
        print(f"\n{what} per submission-lab by phase (mean / max); the class total is wall time:")
        print_table(rows)
        for mode, r in rows.items():
            print_verdicts(mode, r["verdicts"])
        if clock_kind == "wall" and list_gpus():
            print("\nprojected (GPU wall time, the class as graded here):")
            for mode, r in rows.items():
                print(f"{mode}: {projection(r, max(1, args.per_gpu), len(list_gpus()))}")
        same = None
        if len(modes) > 1:
            a, b = work / f"out-{modes[0]}", work / f"out-{modes[-1]}"
            n, diffs = compare(a, b)
            timed = clock_kind == "wall" and bool(list_gpus())   # a GPU's times differ from run to run
            print(f"\noutputs of '{modes[0]}' and '{modes[-1]}': {n} files, "
                  + ("byte-identical" if not diffs else f"{len(diffs)} differ: {', '.join(diffs[:8])}"))
            same = timed or not diffs
            n, diffs, counts = compare_verdicts(a, b)
            same = same and not diffs
            print(f"verdicts of '{modes[0]}' and '{modes[-1]}' (every item but the timed ones): {n} items, "
                  + ("the same" if not diffs else f"{len(diffs)} differ: {'; '.join(diffs[:8])}"))
            if counts:
                print(f"    the same but for counts a run measures (a race, memory read out of bounds), "
                      f"{len(counts)}: {'; '.join(counts[:8])}")
        if args.json:
            args.json.write_text(json.dumps({"modes": rows, "identical": same, "class": args.size, "clock": clock_kind,
                                             "jobs": args.jobs, "labs": [l.name for l in labs]},
                                            indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return 0 if same in (None, True) and not any(r["grader_errors"] for r in rows.values()) else 1
    except GraderError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 3
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)

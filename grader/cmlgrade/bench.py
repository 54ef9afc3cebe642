"""The grader's throughput benchmark: grades a synthetic class (N
submissions cycling through the reference solutions and every catalogued
mistake, each made with `labtool mutate-lab`) and prints the seconds per
submission-lab of each phase (build, tests, sanitizers, counters, timing),
the once-per-batch costs and the class total; on a GPU, a class of 300 x 6
labs projected on 1, 4 and 8 GPUs, as this class was graded and at its
steady state (from the first lab run's start to the last one's end).

With `--modes prebuilt,checker-first` (the default) it grades the same
class twice in one run on the same machine; `fresh` is each submission in its own
configured copy of the kit (the grader before issue 16), `prebuilt` the
pristine kit built once per batch with only the student's files compiled
per submission, with --public-tests all. It then compares every output
file of the first and the last mode byte for byte (but for the numbers a
race changes) and their verdicts, which must be the same. `checker-first`
is `prebuilt` with grade.py's default --public-tests failing (the kit-only
checks first, Criterion only on the steps they do not find right):
`--modes prebuilt,checker-first` is its proof, verdict for verdict.

    python3 grader/tools/bench --class 8 --jobs 1

Cut short (Ctrl-C, or SIGTERM: a batch job's time limit), it prints the
phase table of the submission-labs graded so far, and their processes with
--process-log, writes --json with "cut_short": true, and exits 1: a long
run is never lost whole.

The CPU clock is benchclock.py's, what is printed of a graded class
(phases, verdicts, the projection) benchreport.py's, and the comparison of
two modes' outputs benchcompare.py's; this module makes the synthetic
class and grades it in each mode.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import threading
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from . import benchlog
from .benchclock import _children_cpu, use_cpu_clock
from .benchcompare import compare, compare_verdicts, unexplained, verdict_lines
from .benchreport import print_table, print_verdicts, projection, steady_projection, summarize, verdicts
from .build import clock
from .intake import Submission
from .labs import LabError, load_labs
from .pipeline import Pipeline
from .stagebase import GraderError, Options, per_gpu_arg
from .report import write_all
from .gpuhold import gpu_model
from .run import list_gpus

# names this module defined before benchclock.py, benchreport.py and benchcompare.py were split from it: importable
# from here still
from .benchclock import cpu_clock  # noqa: F401
from .benchreport import CLASS, PHASES  # noqa: F401

MODES = ("fresh", "prebuilt", "checker-first")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Cut short (Ctrl-C, or SIGTERM: a batch job's time limit), it prints the "
                                       "phase table of the\nsubmission-labs graded so far (and their processes "
                                       "with --process-log), writes --json\nwith \"cut_short\": true, and exits 1.")
    p.add_argument("--class", dest="size", type=int, default=6, metavar="N",
                   help="submissions in the synthetic class (default 6)")
    p.add_argument("--lab", action="append", metavar="LAB", help="only this lab (repeat for more; default all)")
    p.add_argument("--modes", default="prebuilt,checker-first",
                   help=f"comma-separated, in order, from {', '.join(MODES)} (default: prebuilt,checker-first, "
                        "grade.py's --public-tests all and its default); the "
                        "outputs of the first and the last are compared")
    p.add_argument("--jobs", type=int, default=1, help="CPU jobs (default 1: seconds on one core)")
    p.add_argument("--per-gpu", type=per_gpu_arg, default=0, metavar="N|auto",
                   help="as grade.py's --per-gpu (default auto; the count used is printed)")
    p.add_argument("--mistakes-alone", action="store_true",
                   help="each catalogued mistake's submission holds only the lab it was made in (the reference's "
                        "holds every lab): comparing modes over every mistake of several labs without grading "
                        "the reference's copies of the other labs again and again (not a class's mix: the "
                        "projection is then not a class's)")
    p.add_argument("--work", type=Path, help="work folder (default: a temporary one, removed)")
    p.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"),
                   help="grade nothing: compare the verdicts of two benches already run, each in one mode (their "
                        "--work folders, or their out-MODE folders), item by item but the timed ones, as two modes "
                        "of one run are compared; exit 1 if one differs (two modes graded at once, each on a GPU "
                        "of its own)")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the numbers here")
    p.add_argument("--process-log", type=Path, metavar="FILE",
                   help="log every process the grader starts here (CMLGRADE_PROCESS_LOG: its seconds, and each "
                        "harness's trace) and print, per mode, the processes by kind and the CUDA contexts the "
                        "harnesses made")
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


def make_class(kit: Path, labs, labtool: Path | None, size: int, out: Path, alone: bool = False,
               cpu: bool = False) -> list[Submission]:
    """`size` submissions: s000_reference, s001_<lab>_<mistake>, ... cycling
    through the reference and each catalogued mistake (the mistake's lab
    mutated, every other lab the reference; with `alone`, no other lab). On
    the CPU path (`cpu`) not the mistakes only a GPU can catch (gpu_only):
    there they would count as missed."""
    ref = {lab.name: {f: (kit / lab.solution_dir / f).read_bytes() for f in lab.files} for lab in labs}
    variants: list[tuple[str, dict]] = [("reference", ref)]
    for lab in labs:
        if not lab.mistakes:
            continue
        if labtool is None:
            raise GraderError("labtool was not built: the mistakes are made with labtool mutate-lab")
        catalogue = kit / lab.solution_dir / "mistakes.toml"
        for m in lab.mistakes:
            if cpu and m.gpu_only:
                continue
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


def graded_outputs(folder: Path) -> Path:
    """A bench's graded output folder (students/*/result.json): `folder`
    itself, or the one out-MODE folder of a bench's --work folder."""
    if (folder / "students").is_dir():
        return folder
    outs = sorted(d for d in folder.glob("out-*") if (d / "students").is_dir())
    if len(outs) != 1:
        found = ", ".join(d.name for d in outs) or "none"
        raise GraderError(f"{folder}: not a bench's outputs (students/*/result.json) nor a --work folder with one "
                          f"out-MODE folder (found: {found})")
    return outs[0]


def compare_runs(a: Path, b: Path, out=sys.stdout) -> int:
    """--compare: two benches' verdicts, item by item but the timed ones."""
    try:
        a, b = graded_outputs(a), graded_outputs(b)
    except GraderError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 3
    n, diffs, counts = compare_verdicts(a, b)
    if n == 0:
        print(f"bench: no graded item in {a} or {b}", file=sys.stderr)
        return 3
    print("\n".join(verdict_lines(f"{a} and {b}", n, diffs, counts)), file=out)
    return 1 if diffs else 0


def report_cut_short(mode: str, done: list[dict], wall: float, total: int, args, what: str,
                     setup: dict[str, float], out=sys.stdout) -> dict:
    """What a run cut short keeps: the phases of the submission-labs graded
    so far (each lab run's seconds as it was graded, Pipeline.on_lab_done),
    their processes (--process-log) and --json. Returns the row."""
    graded = SimpleNamespace(timings={str(i): t for i, t in enumerate(done)})   # summarize's view of a result
    row = summarize([graded], wall, setup)
    print(f"\nbench: cut short {wall:.0f} s into mode '{mode}': {len(done)} of {total} submission-labs graded. "
          f"Their {what} by phase (mean / max); the class total is the time so far, so the per-sub-lab figure "
          f"counts the runs still going against the ones done; no verdicts, no projection:", file=out)
    print_table({mode: row}, out)
    if args.process_log and args.process_log.exists():
        got = benchlog.read(args.process_log)
        print(f"\n{mode}: {args.process_log} (so far)", file=out)
        print("\n".join(benchlog.lines(got, max(1, len(done)))), file=out)
    if args.json:
        args.json.write_text(json.dumps({"cut_short": True, "modes": {mode: row}, "graded": len(done),
                                         "submission_labs": total, "class": args.size, "jobs": args.jobs,
                                         "gpus": gpus_named(), "date": time.strftime("%Y-%m-%d")},
                                        indent=2, sort_keys=True) + "\n", encoding="utf-8")
    out.flush()
    return row


def _batch_setup(pipe: Pipeline, t_ref: float) -> dict[str, float]:
    """The once-per-batch seconds of a mode: the reference's build and
    skeletons, and the slots' pristine kit once they are built."""
    setup = {"reference build and skeletons": t_ref}
    if pipe.slots is not None and pipe.slots.setup_seconds:   # 0 before they are built (a run cut short)
        setup["pristine kit (all slots)"] = pipe.slots.setup_seconds
    return setup


class _CutShort:
    """While a mode grades: SIGINT and SIGTERM print what is graded so far
    (report_cut_short) and end the bench with exit 1 at once, its worker
    threads and their builds with it (an exception would wait for the
    queued builds to finish first)."""
    def __init__(self, mode: str, done: list, t0: float, total: int, args, what: str, setup):
        self.mode, self.done, self.t0, self.total, self.args = mode, done, t0, total, args
        self.what, self.setup = what, setup   # setup(): _batch_setup's seconds when the signal comes
        self.old: dict = {}

    def _handler(self, signum, frame):
        try:
            report_cut_short(self.mode, list(self.done), time.monotonic() - self.t0, self.total, self.args,
                             self.what, self.setup())
            sys.stderr.flush()
        finally:
            os._exit(1)

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.old[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *exc):
        for sig, h in self.old.items():
            signal.signal(sig, h)
        return False


def gpus_named() -> str:
    """The GPUs the bench runs on, by model and count, e.g. "1 x NVIDIA
    H200" (nvidia-smi's names; "2 x NVIDIA H100 80GB HBM3, 1 x NVIDIA
    H200" for a mixed host): what its figures are labelled with, since an
    H100's and an H200's never share a table. "" without a GPU."""
    count: dict[str, int] = {}
    for g in list_gpus():
        m = gpu_model(g) or f"GPU {g} (model not told)"
        count[m] = count.get(m, 0) + 1
    return ", ".join(f"{n} x {m}" for m, n in count.items())


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.compare:
        return compare_runs(*args.compare)
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
    logged: dict[str, dict] = {}   # --process-log: each mode's processes (benchlog)
    subs: list[Submission] | None = None
    clock_kind = args.clock or ("wall" if list_gpus() else "cpu")
    if clock_kind == "cpu":
        use_cpu_clock()
    what = "CPU seconds (of the grader's child processes)" if clock_kind == "cpu" else "wall seconds"
    try:
        for mode in modes:
            for d in ("students", "results", "slots", f"out-{mode}"):
                shutil.rmtree(work / "grade" / d, ignore_errors=True)
                shutil.rmtree(work / d, ignore_errors=True)
            opts = Options(kit=kit, work=work / "grade", keep_work=True, jobs=args.jobs, arch=args.cuda_arch,
                           sandbox=args.sandbox or clock_kind == "wall",
                           cpu_path={"auto": None, "cuda": False, "cpu": True}[args.path],
                           fresh_trees=(mode == "fresh"), retime_reference=(mode == "fresh"), progress=args.progress,
                           per_gpu=args.per_gpu, public_tests="failing" if mode == "checker-first" else "all")
            pipe = Pipeline(opts, labs)
            t0 = clock()
            pipe.prepare()
            t_ref = clock() - t0
            if subs is None:
                named = gpus_named() if pipe.gpu_ok else ""
                subs = make_class(kit, labs, pipe._labtool(), args.size, work / "class", args.mistakes_alone,
                                  cpu=pipe.cpu_path)
                print(f"bench: a class of {len(subs)} submissions x {len(labs)} labs "
                      f"({', '.join(l.name for l in labs)}), {args.jobs} CPU job(s); "
                      f"GPU: {(named or 'yes') + ', --per-gpu ' + str(pipe.per_gpu) if pipe.gpu_ok else 'none (' + pipe.no_gpu_reason + ')'}; "
                      f"{pipe.sandbox.note}", file=sys.stderr)
                if pipe.per_gpu_note:
                    print(f"bench: {pipe.per_gpu_note}", file=sys.stderr)
            print(f"bench: grading in mode '{mode}' ...", file=sys.stderr, flush=True)
            t1, c1 = time.monotonic(), _children_cpu()
            if args.process_log:
                args.process_log.unlink(missing_ok=True)
                os.environ["CMLGRADE_PROCESS_LOG"] = str(args.process_log.resolve())
            done: list[dict] = []   # each lab run's phase seconds as it is graded: what a cut-short run keeps
            pipe.on_lab_done = lambda job: done.append({k: round(v, 1) for k, v in job.run.seconds.items()})
            total = sum(1 for s in subs for lab in labs if lab.name in s.files)
            try:
                with _CutShort(mode, done, t1, total, args, f"{what} per submission-lab",
                               lambda: _batch_setup(pipe, t_ref)):
                    results, errors = pipe.grade(subs)
            finally:
                if args.process_log:
                    os.environ.pop("CMLGRADE_PROCESS_LOG", None)
            wall = time.monotonic() - t1
            if args.process_log:   # each mode's log kept as FILE.MODE
                logged[mode] = benchlog.read(args.process_log)
                if args.process_log.exists():
                    args.process_log.replace(args.process_log.with_name(f"{args.process_log.name}.{mode}"))
            for e in errors:
                print(f"bench: grader error: {e}", file=sys.stderr)
            write_all(work / f"out-{mode}", results, [l.name for l in labs], "", "; ".join(pipe.notes))
            rows[mode] = summarize(results, wall, _batch_setup(pipe, t_ref))
            rows[mode]["class_cpu_s"] = round(_children_cpu() - c1, 1)
            rows[mode]["grader_errors"] = len(errors)
            rows[mode]["per_gpu"] = pipe.per_gpu if pipe.gpu_ok else 1   # the count this mode graded with (auto: its own)
            rows[mode]["verdicts"] = verdicts(results)
        print(f"\n{what} per submission-lab by phase (mean / max); the class total is wall time:")
        print_table(rows)
        for mode, r in rows.items():
            print_verdicts(mode, r["verdicts"])
        for mode, got in logged.items():
            r = rows[mode]
            r["processes"] = got
            print(f"\n{mode}: {args.process_log}.{mode}")
            print("\n".join(benchlog.lines(got, r["submission_labs"])))
        if clock_kind == "wall" and list_gpus():
            print(f"\nprojected (GPU wall time, the class as graded here; {gpus_named()}, {time.strftime('%Y-%m-%d')}):")
            for mode, r in rows.items():
                print(f"{mode}: {projection(r, r['per_gpu'], len(list_gpus()))}")
                steady = steady_projection(r, len(list_gpus()))
                if steady:
                    print(f"{mode}, steady state: {steady}")
        same = None
        if len(modes) > 1:
            a, b = work / f"out-{modes[0]}", work / f"out-{modes[-1]}"
            n, diffs = compare(a, b)
            timed = clock_kind == "wall" and bool(list_gpus())   # a GPU's times differ from run to run
            print(f"\noutputs of '{modes[0]}' and '{modes[-1]}': {n} files, "
                  + ("byte-identical" if not diffs else f"{len(diffs)} differ: {', '.join(diffs[:8])}"))
            n, vdiffs, counts = compare_verdicts(a, b)
            odd = unexplained(a, b, diffs)
            if diffs and not odd and not timed:
                print("    they differ in numbers only (what a race changes from run to run; the points are compared "
                      "below)")
            same = (timed or not odd) and not vdiffs
            print("\n".join(verdict_lines(f"'{modes[0]}' and '{modes[-1]}'", n, vdiffs, counts, most=8)))
        if args.json:
            args.json.write_text(json.dumps({"modes": rows, "identical": same, "class": args.size, "clock": clock_kind,
                                             "jobs": args.jobs, "labs": [l.name for l in labs],
                                             "gpus": gpus_named(), "date": time.strftime("%Y-%m-%d")},
                                            indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return 0 if same in (None, True) and not any(r["grader_errors"] for r in rows.values()) else 1
    except GraderError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 3
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)

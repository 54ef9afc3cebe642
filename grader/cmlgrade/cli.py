"""Command line: python3 grader/grade.py SUBMISSION_OR_FOLDER [options].
Exit status: 0 the grading run worked (whatever the students scored);
2 bad options; 3 the grader could not do its job (no cmake, the kit or a
rubric is unreadable, the reference does not build or --self-check failed)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
import time
from pathlib import Path

from .intake import Submission, is_archive, kit_file_names, looks_like_one_submission, read_batch, read_roster, read_submission
from .checker import has_checker
from .labs import LabError, kit_description, load_labs
from .pipeline import Pipeline
from .stagebase import STUDENT_EDITION, GraderError, Options, parse_seed, per_gpu_arg
from .report import fmt, gradescope_json, write_all
from .rubric import RubricError, load_override
from .scorebase import REFERENCE_FAILED
from .buildtree import check_kit
from .slurm import ShardError, parse_shard, shard_of, write_shard

EXIT_OK, EXIT_USAGE, EXIT_GRADER = 0, 2, 3
SECRET_ENV = "CML_GRADER_SECRET_SEED"


def default_kit() -> Path:
    return Path(__file__).resolve().parent.parent.parent


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="grade.py", description=textwrap.fill(
        "Build, run, score and report CUDA Memory Labs submissions. A submission is a folder, .zip or "
        ".tar.gz with the lab files (the kit's layout or just the files); a folder of those is a batch "
        "(one per student, named by student id). Students: `python3 grader/grade.py labs/` grades your own "
        "working copy with the public seed."),
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=(
        "what most people type:\n"
        "  a student's own check of one lab:\n"
        "    python3 grader/grade.py labs/ --lab 04_reduction\n"
        "  an instructor's class (docs/grading.md):\n"
        "    python3 grader/grade.py submissions/ --lab 04_reduction --roster roster.csv \\\n"
        "        --out grades/ --secret-seed N\n"
        "  the reference solutions (full marks, or exit 3):\n"
        "    python3 grader/grade.py --self-check --lab 04_reduction"))
    p.add_argument("input", nargs="?", help="a submission, or a folder of submissions")
    g = p.add_argument_group("what to grade, where the grades go (what an instructor types)")
    g.add_argument("--lab", action="append", metavar="LAB", help="grade only this lab (repeat for more)")
    g.add_argument("--roster", type=Path, help="CSV of student ids: students with nothing submitted get a row too")
    g.add_argument("--out", type=Path, default=Path("grader-out"), help="output folder (default ./grader-out)")
    g.add_argument("--secret-seed", metavar="N", help=f"secret data seed for the hidden tests (or ${SECRET_ENV})")
    g.add_argument("--rubric-override", type=Path, metavar="FILE", help="instructor's TOML merged over the default rubrics")
    g.add_argument("--self-check", action="store_true", help="grade the reference solutions as a submission; "
                   "exit 3 unless they get full marks")
    g.add_argument("--quiet", action="store_true", help="no progress and no summary (for scripts)")
    g.add_argument("--progress", action="store_true",
                   help="progress lines on stderr (the default: a line a stage, and one every 10 s while a long "
                        "stage runs, on a terminal or not; --quiet turns them off)")
    g = p.add_argument_group("a class at scale: GPUs, clusters, platforms, reruns")
    g.add_argument("--per-gpu", type=per_gpu_arg, default=0, metavar="N|auto",
                   help="submissions graded at once on each GPU: their tests, checks and sanitizers share it; "
                        "Nsight Compute and the timing have it alone (default auto: one for every 16 GiB free on "
                        "the GPU when grading starts, at most 4: 4 on an idle 80 GB card, 1 on a 16 GB one; the "
                        "count is printed)")
    g.add_argument("--jobs", type=int, default=0, help="CPU jobs for builds (default: all cores)")
    g.add_argument("--cache", type=Path, metavar="DIR", help="where graded labs are kept so that a rerun skips a "
                   "submission-lab graded from the same bytes, kit, rubric and seed (default OUT/.cache)")
    g.add_argument("--no-cache", action="store_true", help="grade everything again and keep nothing")
    g.add_argument("--reference-build", type=Path, metavar="DIR", help="build the reference solutions here, shared "
                   "by several runs (a Slurm array's tasks): the first builds it under a lock, the others reuse it; "
                   "the reference's tests, traces and counters of each lab and GPU model are kept there too "
                   "(DIR/reference-runs), never its timing")
    g.add_argument("--shard", metavar="I/S", help="grade only shard I of S (0-based; submissions sorted by id, "
                   "every S-th) and also write OUT/shard.json for grader/tools/slurm merge")
    g.add_argument("--gradescope-results", type=Path, metavar="FILE",
                   help="single submission: also write Gradescope's results.json here "
                        "(/autograder/results/results.json)")
    g = p.add_argument_group("special cases and kit developers")
    g.add_argument("--batch", action="store_true", help="treat INPUT as a folder of submissions")
    g.add_argument("--single", action="store_true", help="treat INPUT as one submission")
    g.add_argument("--student", help="the student id of a single submission (default: its file or folder name)")
    g.add_argument("--kit", type=Path, default=None, help="the pristine kit (default: the repository holding grader/)")
    g.add_argument("--work", type=Path, help="keep build trees here (default: a temporary folder, removed)")
    g.add_argument("--keep-work", action="store_true", help="do not remove the temporary build folder")
    g.add_argument("--unsafe-no-sandbox", "--no-sandbox", dest="no_sandbox", action="store_true",
                   help="run student code WITHOUT isolation (no bubblewrap); every report says so. Without it the "
                        "grader refuses to run student code where bubblewrap cannot run, except a student's own "
                        "check (one submission, no secret seed)")
    g.add_argument("--cuda-arch", default="",
                   help="CUDA architectures for the builds (default: the GPU grading here, or sm_90 without one; "
                        "$CUDAARCHS is not read: a student's export for their own builds must not change what "
                        "the grader compiles)")
    g.add_argument("--timestamp", default="", help="write this timestamp into result.json (default: none, "
                   "so the same inputs give the same files)")
    g.add_argument("--timings", type=Path, metavar="FILE", help="write build and run seconds per student and lab (JSON)")
    g.add_argument("--fresh-trees", action="store_true", help="configure and build the whole kit for every "
                   "submission (slower; the default builds the pristine kit once and only the student's files after)")
    g.add_argument("--public-tests", choices=("all", "failing"), default="failing",
                   help="failing (default): the kit-only checks first, and the public tests only of the steps they "
                        "do not find right (the others take their verdict; a right submission starts no test "
                        "program); all: every public test program runs, then the kit-only checks (the design "
                        "before 2026-11-29; grader/tools/bench --modes prebuilt,checker-first compares the two, "
                        "verdict for verdict)")
    return p


def _say(quiet: bool, *a) -> None:
    if not quiet:
        print(*a, file=sys.stderr)


def _clean_up_when_stopped(pipe: Pipeline) -> None:
    """Ctrl-C, kill (SIGTERM) or a closed terminal (SIGHUP) ends the run at
    once and removes its temporary build folder (cmlgrade-* in $TMPDIR; not
    --work's or --keep-work's). What was graded is in the results cache
    already: a rerun with the same --out resumes there."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        return

    def stop(signum, frame):
        from .sandbox import kill_all
        kill_all()
        pipe.cleanup()
        print(f"grade.py: stopped ({signal.Signals(signum).name}); its temporary build folder is removed; a rerun "
              f"with the same --out resumes from the labs already graded", file=sys.stderr)
        os._exit(128 + signum)   # the worker threads and their sandboxed processes end with it
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)


def _per_gpu_words(pipe) -> str:
    """How many submissions share each GPU, and why (auto's reason)."""
    n = pipe.per_gpu
    return f" ({pipe.per_gpu_note})" if pipe.per_gpu_note else f" ({n} submission{'s' if n > 1 else ''} at once on each)"


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not args.input and not args.self_check:
        parser().print_usage(sys.stderr)
        print("grade.py: give a submission or a folder of submissions (or --self-check)", file=sys.stderr)
        return EXIT_USAGE
    if args.batch and args.single:
        print("grade.py: --batch and --single exclude each other", file=sys.stderr)
        return EXIT_USAGE
    kit = (args.kit or default_kit()).resolve()
    problems = check_kit(kit)
    if problems:
        print("grade.py: " + "; ".join(problems), file=sys.stderr)
        return EXIT_GRADER
    try:
        known = [d.get("name") for d in kit_description(kit)]
    except LabError as e:
        print(f"grade.py: {e}", file=sys.stderr)
        return EXIT_GRADER
    unknown = sorted(set(args.lab or []) - set(known))
    if unknown:  # a bad option, not the grader's problem
        print(f"grade.py: --lab {', '.join(unknown)}: no such lab (the kit's labs: {', '.join(known)})",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        override = load_override(args.rubric_override) if args.rubric_override else None
        labs = load_labs(kit, override=override, only=args.lab)
        seed_text = args.secret_seed if args.secret_seed is not None else os.environ.get(SECRET_ENV)
        secret = parse_seed(seed_text) if seed_text else None
    except (RubricError, LabError, GraderError) as e:
        print(f"grade.py: {e}", file=sys.stderr)
        return EXIT_GRADER
    if not labs:
        print(f"grade.py: no lab to grade in {kit}", file=sys.stderr)
        return EXIT_GRADER
    for lab in labs:
        if lab.rubric.is_default:
            _say(args.quiet, f"note: {lab.name} has no rubric file (labs/{lab.name}/rubric.toml): "
                             f"graded with the default policy (docs/grading.md)")
        if not has_checker(lab.name):
            _say(args.quiet, f"note: {lab.name} has no kit-only checker (labs/{lab.name}/spec.c and "
                             f"common/labs/{lab.name}/harness.c): its hidden tests are its test program run on the secret "
                             f"data, the student's code in the same process, where a forged outcome is not caught "
                             f"(docs/grading.md section 8)")
    lab_files = {lab.name: list(lab.files) for lab in labs}
    kit_names = kit_file_names(kit) - {f for lab in labs for f in lab.files}

    subs: list[Submission] = []
    batch_problems: list[str] = []
    roster = None
    if args.roster:
        try:
            roster = read_roster(args.roster)
        except (OSError, UnicodeDecodeError) as e:
            print(f"grade.py: cannot read the roster {args.roster}: {e}", file=sys.stderr)
            return EXIT_GRADER
    if args.self_check:
        no_sol = [lab.name for lab in labs if not lab.solution_dir]
        if no_sol:
            print(f"grade.py: --self-check needs the reference solutions; this kit has none for "
                  f"{', '.join(no_sol)}", file=sys.stderr)
            return EXIT_GRADER
        files = {lab.name: {f: (kit / lab.solution_dir / f).read_bytes() for f in lab.files} for lab in labs}
        subs.append(Submission(student="reference", source="solutions/", files=files))
    else:
        path = Path(args.input)
        if not path.exists():
            print(f"grade.py: {path} does not exist", file=sys.stderr)
            return EXIT_USAGE
        single = args.single or is_archive(path) or (
            not args.batch and path.is_dir() and looks_like_one_submission(path, lab_files))
        if single:
            subs.append(read_submission(path.resolve(), lab_files, args.student, kit_names))
        elif path.is_dir():
            b = read_batch(path, lab_files, roster, kit_names)
            subs, batch_problems = b.submissions, b.problems
        else:
            print(f"grade.py: {path} is neither a folder nor a .zip/.tar.gz", file=sys.stderr)
            return EXIT_USAGE
    for p in batch_problems:
        _say(args.quiet, f"note: {p}")
    shard = None
    if args.shard:
        try:
            shard = parse_shard(args.shard)
        except ShardError as e:
            print(f"grade.py: {e}", file=sys.stderr)
            return EXIT_USAGE
        subs = shard_of(subs, *shard)

    hide = [Path(args.input).resolve()] if args.input else []
    hide += [args.out.resolve()] + ([args.rubric_override.resolve()] if args.rubric_override else [])
    cache = None if args.no_cache else (args.cache or args.out / ".cache").resolve()
    if cache is not None:
        hide.append(cache)
    if args.roster:
        hide.append(args.roster.resolve())
    opts = Options(kit=kit, work=args.work, keep_work=args.keep_work, secret_seed=secret, jobs=args.jobs,
                   sandbox=not args.no_sandbox, arch=args.cuda_arch, hide=hide,
                   require_isolation=secret is not None or len(subs) > 1 or args.batch,
                   progress=not args.quiet, fresh_trees=args.fresh_trees, public_tests=args.public_tests,
                   cache=cache, reference_build=args.reference_build, per_gpu=args.per_gpu)
    present = {name for sub in subs for name in sub.files}
    absent = [lab.name for lab in labs if lab.name not in present]
    if not args.lab and present and absent:
        # an assignment of some labs graded without --lab: out of every lab, the others scored 0 for everyone
        _say(args.quiet, f"note: no submission has files of {', '.join(absent)}: every output counts them (0 points, "
                         f"not submitted). If the assignment is {', '.join(sorted(present))}, grade it with "
                         + " ".join(f"--lab {n}" for n in sorted(present)) + ": every output is then out of those")
    pipe = Pipeline(opts, labs)
    _clean_up_when_stopped(pipe)
    t0 = time.monotonic()
    edition = not any(lab.solution_dir for lab in labs)   # tools/release's student edition
    try:
        pipe.prepare()
        nothing = sum(1 for sub in subs if not sub.files)   # roster students with nothing submitted
        _say(args.quiet, f"grading {len(subs) - nothing} submission(s)"
                         + (f" (and {nothing} on the roster with nothing submitted)" if nothing else "")
                         + f", labs {', '.join(l.name for l in labs)}; "
                         f"GPUs: {', '.join(g for g in pipe.gpus if g is not None) or 'none'}"
                         f"{_per_gpu_words(pipe) if pipe.gpu_ok else ' (' + pipe.no_gpu_reason + ')'}; "
                         f"{pipe.sandbox.note}")
        results, errors = pipe.grade(subs)
    except GraderError as e:
        print(f"grade.py: {e}", file=sys.stderr)
        pipe.cleanup()
        return EXIT_GRADER
    note = "; ".join(pipe.notes)
    write_all(args.out, results, [l.name for l in labs], args.timestamp, note)
    if pipe.cache is not None and pipe.cache.hits:
        _say(args.quiet, f"{pipe.cache.hits} submission-lab(s) already graded from the same files, kit, rubric and "
                         f"seed: their results were reused from {pipe.cache.folder} (--no-cache grades them again)")
    if shard is not None:
        write_shard(args.out, shard, results, [l.name for l in labs], args.timestamp, note, errors)
    if args.gradescope_results and len(results) == 1:
        args.gradescope_results.parent.mkdir(parents=True, exist_ok=True)
        args.gradescope_results.write_text(gradescope_json(results[0]), encoding="utf-8")
    if args.timings:
        t = {r.student: r.timings for r in results}
        args.timings.write_text(json.dumps({"students": t, "wall_s": round(time.monotonic() - t0, 1)},
                                           indent=2, sort_keys=True) + "\n", encoding="utf-8")
    pipe.cleanup()
    if not args.quiet:
        if edition:
            print(f"{STUDENT_EDITION}.", file=sys.stderr)
        for r in results:
            per = ", ".join(f"{ls.lab} {fmt(ls.points)}/{fmt(ls.max_points)}" for ls in r.labs)
            print(f"{r.student}: {fmt(r.points)}/{fmt(r.max_points)} ({per})", file=sys.stderr)
        print(f"outputs in {args.out}/ (gradebook.csv, junit.xml, students/<id>/feedback.md ...)", file=sys.stderr)
    for e in errors:
        print(f"grader error: {e}", file=sys.stderr)
    if errors:
        return EXIT_GRADER
    if args.self_check:
        return self_check_verdict(results[0], args.quiet)
    return EXIT_OK


def self_check_verdict(res, quiet: bool) -> int:
    """The reference must earn every point that could be measured here; what
    could not run (no GPU, no counters) is "not measured", never a failure
    of the reference."""
    short = [f"{ls.lab} {fmt(ls.points)}/{fmt(ls.max_points)}" for ls in res.labs if ls.points < ls.max_points]
    if short:
        print("self-check FAILED: the reference solutions lose points: " + ", ".join(short), file=sys.stderr)
        return EXIT_GRADER
    # A test the reference itself fails here is left out of every student's
    # score (not counted); in the self-check it is the reference that is wrong.
    own = [f"{ls.lab}: {line}" for ls in res.labs for line in ls.not_counted if REFERENCE_FAILED in line]
    if own:
        print("self-check FAILED: the reference solutions fail their own tests here (students are not docked "
              "for these tests, but the reference or this machine is wrong): " + "; ".join(own[:6])
              + (f"; and {len(own) - 6} more" if len(own) > 6 else ""), file=sys.stderr)
        return EXIT_GRADER
    unmeasured = {}
    for ls in res.labs:
        n = sum(1 for it in ls.items if it.status == "not_measured")
        if n:
            unmeasured[ls.lab] = n
    if unmeasured:
        _say(quiet, "self-check passed for what could be measured here: the reference solutions get every "
                    "measured point; not measured: " + ", ".join(f"{lab} ({n} checks)" for lab, n in unmeasured.items())
             + (f" ({res.machine})" if res.machine else "") + "; run it again on a GPU machine")
    else:
        _say(quiet, "self-check passed: the reference solutions get full marks")
    return EXIT_OK

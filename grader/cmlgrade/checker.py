"""The kit-only checker (docs/grading.md §8): a step's verdict comes from
this module and the lab's verifier, never from a process that holds
student code.

For a lab with a spec (labs/<lab>/spec.c) and a harness
(common/labs/<lab>/harness.c) the grader writes the inputs of a step's
cases (made by the lab's verifier from the seed: the seed never reaches the
student's process), runs the student's harness on them (sandboxed, its only
output a file in a folder the grader made) and has the verifier judge the
raw outputs with the spec's judge. The harness's exit status and what it
prints decide nothing.

This module gives a step's verdict (check_step, check_together) and is the
checker's command line (main). The harness's files and CUDA errors' names
are harnessio.py's, the timing checktime.py's, the counters checkcount.py's,
the technique traces checktrace.py's, and the marked Nsight Compute run of
several steps that both share checkmarks.py's."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from . import checks
from .checkbase import Case
from .checktime import _copy_ceiling
from .harnessio import Output, cuda_error, read_output, write_input
from .sandbox import Executor

# names this module defined before harnessio.py, checktime.py, checkcount.py, checkmarks.py and checktrace.py
# were split from it: importable from here still
from .checkcount import counters_report, counters_step, parse_ncu_csv  # noqa: F401
from .checkmarks import MARK_KERNEL, MARK_STEP, csv_text, mark_case, marked_ncu_run, split_ncu_by_marks  # noqa: F401
from .checktime import GatedRun, Timed, run_timed, run_timed_cases, same_answers  # noqa: F401
from .checktrace import SHARED_METRICS, KernelUse, StepTrace, parse_cpu_launches, parse_ncu_launches  # noqa: F401
from .checktrace import shared_use, trace_cases, trace_step, trace_steps  # noqa: F401
from .harnessio import SAMPLES, VERSION, _cuda_error_names  # noqa: F401

MAX_MESSAGES = 3


@dataclass
class StepVerdict:
    ok: bool | None                 # None: not measured (no device for the harness)
    failed: int = 0
    total: int = 0
    messages: list[str] = field(default_factory=list)
    note: str = ""


CHECKERS = checks.load()


def has_checker(lab_name: str) -> bool:
    return lab_name in CHECKERS


_CACHE: dict[tuple, list[Case]] = {}
_LOCK = threading.Lock()


def make_cases(lab_name: str, seed: int, cpu: bool) -> list[Case]:
    """The cases of every step of a lab for one seed (made once per run)."""
    key = (lab_name, seed, cpu)
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = CHECKERS[lab_name].make(seed, cpu)
        return _CACHE[key]


def bind_build(build_dir: Path) -> None:
    """The labs' verifiers (specs.py) are those of this build of the kit;
    the cases another build's made are forgotten."""
    with _LOCK:
        _CACHE.clear()
    checks.bind(build_dir, CHECKERS)


def check_step(exe: Executor, harness: Path, lab_name: str, step: int, seed: int, out_dir: Path, timeout: float,
               env: dict[str, str], readable: list[Path], cpu: bool, tag: str) -> StepVerdict:
    """One step's verdict: cases from the seed, the student's harness run on
    them, the outputs compared here."""
    if not harness.is_file():
        return StepVerdict(False, note="the kit-only check could not run: its harness did not build")
    chk = CHECKERS[lab_name]
    cases = chk.step_cases(make_cases(lab_name, seed, cpu), step)
    got, why, judged = _run_harness(exe, harness, chk, out_dir / f"check-{tag}-step{step}", [step] * len(cases),
                                    cases, timeout, env, readable)
    return _verdict(step, cases, why, judged)


def check_together(exe: Executor, harness: Path, lab_name: str, wanted: list[tuple[str, int, int]], out_dir: Path,
                   timeout: float, env: dict[str, str], readable: list[Path],
                   cpu: bool) -> dict[tuple[str, int, int], StepVerdict]:
    """The verdicts of many steps from one harness process (one CUDA
    context, one start): `wanted` lists (kind, seed, step), whose cases run
    in that order. A (kind, seed, step) is settled by this run when every
    one of its cases is right and no case before it ended in a CUDA error
    or has no output (an error can leave the context unusable, and a step's
    leaked memory can starve a later one): those are returned. The caller
    runs the others a step a process (check_step), whose verdict stands:
    a step is never failed for what another step of the same process left
    behind, and a run that hung or died part way costs nothing. A step that answers
    a case with another step's answer from the same process (lab 02's steps
    6-8 convolve the same images) gives the answer that calling that step's
    launcher would give; what each step launched is the technique checks'
    part, on a run of its own (trace_steps)."""
    if len(wanted) < 2 or not harness.is_file():
        return {}
    chk = CHECKERS[lab_name]
    order: list[int] = []
    cases: list[Case] = []
    spans = []
    for key in wanted:
        mine = _key_cases(lab_name, key, cpu)
        spans.append((key, len(cases), len(cases) + len(mine)))
        cases += mine
        order += [key[2]] * len(mine)
    work = out_dir / f"check-together-{wanted[0][0]}-step{wanted[0][2]}"
    got, why, judged = _run_harness(exe, harness, chk, work, order, cases, timeout, env, readable)
    settled, left = {}, []
    for n, (key, a, b) in enumerate(spans):
        part = got[a:b]
        bad = next((k for k, g in enumerate(part) if g is None or g.err != 0), None)
        if bad is not None:
            g = part[bad]
            left += [f"{key[0]} step {key[2]}: case {bad + 1} ({cases[a + bad].label}): "
                     + (f"no output ({why or 'the file ends before it'})" if g is None else cuda_error(g.err))]
            left += [f"{k[0]} step {k[2]}: after that case" for k, _, _ in spans[n + 1:]]
            break
        v = _verdict(key[2], cases[a:b], why, judged[a:b])
        if v.ok:   # a wrong answer is checked again alone (above)
            settled[key] = v
        else:
            left.append(f"{key[0]} step {key[2]}: {v.failed} of {v.total} cases wrong: "
                        + "; ".join(v.messages[:2]))
    if left:   # why each step runs again alone: the grader's own record, in the lab's work folder
        (work / "not-settled.txt").write_text("\n".join(left) + "\n", encoding="utf-8")
    return settled


def _key_cases(lab_name: str, key: tuple[str, int, int], cpu: bool) -> list[Case]:
    """The cases of (kind, seed, step)."""
    return CHECKERS[lab_name].step_cases(make_cases(lab_name, key[1], cpu), key[2])


def together_parts(lab_name: str, wanted: list[tuple[str, int, int]], cpu: bool,
                   parts: int) -> list[list[tuple[str, int, int]]]:
    """`wanted` shared among `parts` harness runs (check_together) of about
    the same data each, every (kind, seed, step) in one of them, in their
    order: on a GPU several processes run side by side, where one process
    for a lab's large cases would take as long as all of them in turn."""
    if parts <= 1 or len(wanted) <= 1:
        return [list(wanted)]
    size = {k: sum(c.count + 1 for c in _key_cases(lab_name, k, cpu)) for k in wanted}
    groups: list[list[tuple[str, int, int]]] = [[] for _ in range(min(parts, len(wanted)))]
    load = [0] * len(groups)
    for k in sorted(wanted, key=lambda k: -size[k]):   # the largest first, each to the lightest part
        g = load.index(min(load))
        groups[g].append(k)
        load[g] += size[k]
    order = {k: i for i, k in enumerate(wanted)}
    return [sorted(g, key=order.get) for g in groups if g]


def _run_harness(exe: Executor, harness: Path, chk, work: Path, steps: list[int], cases: list[Case], timeout: float,
                 env: dict[str, str], readable: list[Path]) -> tuple[list[Output | None], str, list[str]]:
    """The harness run on the cases (case k by steps[k]) in a folder of its
    own: each case's Output (None where there is none), why a missing one
    is missing, and the verifier's verdict line on each case."""
    work.mkdir(parents=True, exist_ok=True)
    inp, outp = work / "input.bin", work / "output.bin"
    write_input(inp, steps, cases)
    outp.unlink(missing_ok=True)
    r = exe.run([str(harness), str(inp), str(outp)], cwd=work, timeout=timeout, writable=[work],
                readable=readable, env=env)
    # the grader runs a harness only where it knows there is a device (a GPU, or the CPU path): a
    # harness that says "no device" (exit 77) has no excuse, it fails like any other missing output
    got = read_output(outp, cases, [chk.out_bytes(c) for c in cases])
    judged = chk.judge_file(outp, steps, cases)
    for p in (inp, outp):
        p.unlink(missing_ok=True)
    return got, (f"timed out after {timeout:.0f} s" if r.timed_out else
                 f"no output (the harness ended with status {r.rc})"), judged


def _spec_why(line: str, missing: str) -> str | None:
    """What a verifier's verdict line (cml_spec.h) tells the student; None when right."""
    word, _, rest = line.partition("\t")
    if word == "right":
        return None
    if word.startswith("error "):
        return cuda_error(int(word.split()[1]))
    if word == "changed":
        return "the kernel changed its input"
    if word == "wrong":
        return rest or "wrong output"
    return missing


def _verdict(step: int, cases: list[Case], missing: str, judged: list[str]) -> StepVerdict:
    """A step's verdict from the verifier's lines on its cases (missing: why
    an absent output is absent)."""
    v = StepVerdict(True, total=len(cases))
    for c, line in zip(cases, judged):
        why = _spec_why(line, missing)
        if why:
            v.failed += 1
            if len(v.messages) < MAX_MESSAGES:
                v.messages.append(f"step {step}, {c.label}: {why}")
    v.ok = v.failed == 0
    return v


def main(argv: list[str] | None = None) -> int:
    """The checker on one harness, for the kit's own tests (CTest
    <lab>.cpu.checker.*): python3 -m cmlgrade.checker --lab L --harness H
    --expect pass|fail --steps 1,2 [--cpu] [--seed N]."""
    import argparse
    import sys
    import tempfile
    from .sandbox import Sandbox
    ap = argparse.ArgumentParser(prog="python3 -m cmlgrade.checker",
                                 description="Run the kit-only checker on one lab's harness and say each step's verdict.")
    ap.add_argument("--lab", required=True, help="lab name, e.g. 04_reduction")
    ap.add_argument("--harness", required=True, type=Path, help="the harness program (e.g. build-cpu/reduction_harness_ref_cpu)")
    ap.add_argument("--steps", help="comma-separated step numbers")
    ap.add_argument("--expect", choices=("pass", "fail"), help="what every listed step must do")
    ap.add_argument("--copy-ceiling", action="store_true",
                    help="instead: time the harness's device-to-device copy (the timing's ceiling) and say its "
                         "bandwidth (emulated on the CPU path)")
    ap.add_argument("--cpu", action="store_true", help="the CPU path's case sizes")
    ap.add_argument("--seed", type=int, default=20261125, help="the cases' seed (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per step (default: %(default)s)")
    a = ap.parse_args(argv)
    bind_build(a.harness.resolve().parent)   # the lab's verifier beside its harness (the kit's build folder)
    if a.lab not in CHECKERS:
        print(f"checker: no checker for lab {a.lab!r} (have: {', '.join(sorted(CHECKERS))})", file=sys.stderr)
        return 2
    if not a.harness.is_file():
        print(f"checker: no harness at {a.harness}", file=sys.stderr)
        return 2
    if a.copy_ceiling:
        return _copy_ceiling(a.harness.resolve(), a.cpu, a.timeout)
    if not a.steps or not a.expect:
        ap.error("--steps and --expect are needed (or --copy-ceiling)")
    bad = 0
    exe = Executor(Sandbox(None, ""))
    with tempfile.TemporaryDirectory(prefix="cml-checker-") as tmp:
        for step in [int(x) for x in a.steps.split(",") if x]:
            v = check_step(exe, a.harness.resolve(), a.lab, step, a.seed, Path(tmp), a.timeout, {}, [], a.cpu, "public")
            ok = v.ok is (a.expect == "pass")
            bad += not ok
            print(f"step {step}: {'right' if v.ok else 'wrong'} ({v.failed} of {v.total} cases wrong)"
                  f"{'' if ok else '  <-- expected ' + ('every case right' if a.expect == 'pass' else 'a wrong case')}")
            for m in v.messages + ([v.note] if v.note else []):
                print(f"    {m}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())

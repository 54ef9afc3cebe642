"""The kit-only checker (docs/grading.md §8): a step's verdict comes from
this module and the lab's verifier, never from a process that holds
student code.

For a lab with a spec (labs/<lab>/spec.c) and a harness
(common/labs/<lab>/harness.c) the grader writes the inputs of a step's
cases (made by the lab's verifier from the seed: the seed never reaches the
student's process), runs the student's harness on them (sandboxed, its only
output a file in a folder the grader made) and has the verifier judge the
raw outputs with the spec's judge. The harness's exit status and what it
prints decide nothing."""
from __future__ import annotations

import functools
import os
import re
import shutil
import struct
import threading
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from . import checks
from .checkbase import FILL_INTS, Case, ordinary
from .gpushare import alone_on
from .sandbox import Executor

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


@functools.cache
def _cuda_error_names() -> dict[int, str]:
    """cudaError_t's names by number, read from the toolkit's driver_types.h
    where there is one, else from the CPU path's cuda_runtime_api.h (the
    codes that runtime returns)."""
    heads = [Path(__file__).resolve().parents[2] / "common/cpu/include/cuda_runtime_api.h"]
    nvcc = shutil.which("nvcc")
    homes = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
    homes += [str(Path(nvcc).resolve().parent.parent)] if nvcc else []
    heads += [Path(h) / "include/driver_types.h" for h in homes if h]
    names: dict[int, str] = {}
    for h in heads:   # the toolkit's last: its names win
        try:
            text = h.read_text(errors="replace")
        except OSError:
            continue
        names.update({int(n): name for name, n in re.findall(r"\b(cudaError\w*)\s*=\s*(\d+)", text)})
    return names


def cuda_error(code: int) -> str:
    """'CUDA error 700 (cudaErrorIllegalAddress)': the number a student can
    look up and the name that says what it is."""
    name = _cuda_error_names().get(code)
    return f"CUDA error {code} ({name})" if name else f"CUDA error {code}"


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
    """The labs' verifiers (specs.py) are those of this build of the kit."""
    checks.bind(build_dir, CHECKERS)


VERSION = 2          # harness.h's file format
SAMPLES = 32         # HN_SAMPLES


def write_input(path: Path, step: int | list[int], cases: list[Case]) -> None:
    """The harness's input: every case run by `step` (or case k by step[k]).
    Checked cases of every step and both seeds share a process
    (check_together); timed cases of several steps share one too
    (reftime.perf_lab), each step's case with a seed of its own."""
    steps = step if isinstance(step, list) else [step] * len(cases)
    with path.open("wb") as f:
        f.write(b"CMLH" + struct.pack("<II", VERSION, len(cases)))
        for s, c in zip(steps, cases):
            f.write(struct.pack("<IIQQQIIQ", s, c.kind, c.a, c.b, c.count, c.fill, c.repeats, c.seed))
            if not c.fill:
                f.write(c.data)


@dataclass
class Output:
    err: int                      # the case's CUDA error
    out: bytes                    # its output (empty for a timed case)
    after: bytes                  # its input as read back (empty for a timed case)
    times: list[float] = field(default_factory=list)                       # ms per timed repeat
    samples: list[list[tuple[int, int]]] = field(default_factory=list)     # per repeat: (word, u32 value)
    timed_err: int = 0


def read_output(path: Path, cases: list[Case], expect_out: list[int]) -> list[Output | None]:
    """Each case's Output, or None where the file ends early or is
    malformed. Never reads more than the cases can hold, whatever the
    file's size."""
    res: list[Output | None] = [None] * len(cases)
    try:
        f = path.open("rb")
    except OSError:
        return res
    with f:
        head = f.read(12)
        if len(head) != 12 or head[:4] != b"CMLO" or struct.unpack("<II", head[4:]) != (VERSION, len(cases)):
            return res
        for k, c in enumerate(cases):
            h = f.read(12)
            if len(h) != 12:
                break
            err, nb = struct.unpack("<iQ", h)
            if nb > (0 if c.repeats else max(expect_out[k], 4)) or nb > (1 << 31):
                break
            out = f.read(nb)
            ib = f.read(8)
            want_in = 0 if c.repeats else len(c.data)
            if len(out) != nb or len(ib) != 8 or struct.unpack("<Q", ib)[0] != want_in:
                break
            after = f.read(want_in)
            nr = f.read(4)
            if len(after) != want_in or len(nr) != 4:
                break
            nrep = struct.unpack("<I", nr)[0]
            if nrep not in (0, c.repeats):
                break
            o = Output(err, out, after)
            rec = 4 + 12 * SAMPLES
            for _ in range(nrep):
                r = f.read(rec)
                if len(r) != rec:
                    break
                o.times.append(struct.unpack_from("<f", r)[0])
                o.samples.append([struct.unpack_from("<QI", r, 4 + 12 * j) for j in range(SAMPLES)])
            te = f.read(4)
            if len(o.times) != nrep or len(te) != 4:
                break
            o.timed_err = struct.unpack("<i", te)[0]
            res[k] = o
    return res


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


# ------------------------------------------------------------ timing (a kit-only harness, events around the launch)

@dataclass
class Timed:
    """A timed case's result: per repeat the ms and the sampled output words."""
    times: list[float] = field(default_factory=list)
    samples: list[list[tuple[int, int]]] = field(default_factory=list)
    note: str = ""      # why there is no timing ("" when there is)


def run_timed(exe: Executor, harness: Path, c: Case, step: int, work: Path, timeout: float,
              env: dict[str, str], readable: list[Path]) -> Timed:
    """One harness run of a timed case (harness.h): the launch timed with
    CUDA events by the harness's kit code, every output poisoned again and
    one input word changed before each repeat, output words sampled after."""
    return run_timed_cases(exe, harness, [(step, c)], work, timeout, env, readable)[0]


def run_timed_cases(exe: Executor, harness: Path, cases: list[tuple[int, Case]], work: Path, timeout: float,
                    env: dict[str, str], readable: list[Path]) -> list[Timed]:
    """One harness run of several timed cases (step, case), in order: each
    case's Timed. Step COPY_STEP (checkbase) is the device's copy ceiling,
    for the reference's harness only."""
    work.mkdir(parents=True, exist_ok=True)
    inp, outp = work / "timed-input.bin", work / "timed-output.bin"
    only = [c for _, c in cases]
    write_input(inp, [s for s, _ in cases], only)
    outp.unlink(missing_ok=True)
    r = exe.run([str(harness), str(inp), str(outp)], cwd=work, timeout=timeout, writable=[work],
                readable=readable, env=env)
    got = read_output(outp, only, [0] * len(only))
    for p in (inp, outp):
        p.unlink(missing_ok=True)
    res = []
    for c, g in zip(only, got):
        if g is None:
            res.append(Timed(note=f"timed out after {timeout:.0f} s" if r.timed_out else
                             f"no timing (the harness ended with status {r.rc})"))
        elif g.err or g.timed_err:
            res.append(Timed(note=f"{cuda_error(g.err or g.timed_err)} in a timed run"))
        elif len(g.times) != c.repeats or not all(t > 0 for t in g.times):
            res.append(Timed(note="the timed run is incomplete"))
        else:
            res.append(Timed(g.times, g.samples))
    return res


def same_answers(lab_name: str, c: Case, step: int, mine: Timed, ref: Timed) -> str | None:
    """None when every sampled word of every timed repeat matches the
    reference's (the same places: the same case), else why not."""
    chk = CHECKERS[lab_name]
    for r, (a, b) in enumerate(zip(mine.samples, ref.samples)):
        for (wa, va), (wb, vb) in zip(a, b):
            if wa != wb:
                return "the timed run's samples are not where the harness puts them"
            if not chk.close(c, step, vb, va):
                return (f"timed repeat {r + 1} gave a wrong answer (output word {wa}: "
                        f"{va:#010x}, the reference's {vb:#010x}): every repeat must compute its answer")
    return None


# ------------------------------------------------------------ counters (ncu run by the grader on the harness)

def parse_ncu_csv(text: str, metric: str) -> tuple[float, int]:
    """The sum of `metric` over the kernels ncu's CSV lists, and how many
    launches it lists."""
    import csv
    import io
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    # ncu writes its own "==PROF==" lines into the log too: the table starts at its header row
    start = next((i for i, r in enumerate(rows) if "Metric Name" in r and "Metric Value" in r), None)
    if start is None:
        return 0.0, 0
    rows = rows[start:]
    head = rows[0]
    try:
        name_at, value_at = head.index("Metric Name"), head.index("Metric Value")
    except ValueError:
        return 0.0, 0
    total, n = 0.0, 0
    for r in rows[1:]:
        if len(r) > max(name_at, value_at) and r[name_at] == metric:
            try:
                total += float(r[value_at].replace(",", ""))
            except ValueError:
                continue
            n += 1
    return total, n


def counters_step(exe: Executor, harness: Path, lab_name: str, step: int, seed: int, metric: str,
                  out_dir: Path, timeout: float, env: dict[str, str], readable: list[Path],
                  tag: str) -> tuple[float | None, str]:
    """A step's counter, measured by Nsight Compute run by the grader on the
    harness (the checker's counter cases of the step): ncu writes its CSV into
    a file of the grader's folder, which no student code can write (the
    object checks refuse file access), so what the student's code prints
    counts for nothing. (value, "") or (None, why not)."""
    from .run import find_tool
    ncu = find_tool("ncu")
    if ncu is None:
        return None, "ncu not found"
    chk = CHECKERS[lab_name]
    cases = chk.counter_cases(chk.step_cases(make_cases(lab_name, seed, False), step), step)
    work = out_dir / f"counters-{tag}-step{step}"
    work.mkdir(parents=True, exist_ok=True)
    inp, outp, log = work / "input.bin", work / "output.bin", work / "ncu.csv"
    write_input(inp, step, cases)
    for p in (outp, log):
        p.unlink(missing_ok=True)
    # every kernel the step launches: the harness runs nothing else (the manifest's kernel regex is the
    # runner's, which launches copies and references too)
    with alone_on(env):   # Nsight Compute has the GPU to itself (gpushare.py)
        r = exe.run([ncu, "--csv", "--log-file", str(log), "--clock-control", "none", "--metrics", metric,
                     str(harness), str(inp), str(outp)],
                    cwd=work, timeout=timeout, writable=[work], readable=readable, env=env)
    try:
        text = log.read_text(encoding="utf-8", errors="replace")[:1 << 22] if log.is_file() else ""
    except OSError:
        text = ""
    total, n = parse_ncu_csv(text, metric)
    if r.timed_out:
        return None, f"timed out after {timeout:.0f} s"
    if n == 0:
        why = next((ln.strip() for ln in (r.stdout + r.stderr).splitlines() if "ERR_" in ln or "==ERROR==" in ln), "")
        return None, why or "ncu profiled no kernel of the step"
    return total, ""


def counters_report(exe: Executor, harness: Path, lab, steps: list[int], seed: int, out_dir: Path, timeout: float,
                    env: dict[str, str], readable: list[Path], tag: str):
    """A CounterReport (parsers.py) of the lab's counter checks for `steps`,
    every value from the grader's own ncu run on the harness."""
    from .parsers import CounterReport
    rep = CounterReport(True, "")
    metrics = {c.metric for c in lab.counter_checks if c.step in steps}
    if len(metrics) == 1:   # the steps' counters from one marked run (a step that failed in it: alone, below)
        ck = CHECKERS[lab.name]
        every = make_cases(lab.name, seed, False)
        per = {s: ck.counter_cases(ck.step_cases(every, s), s) for s in dict.fromkeys(
            c.step for c in lab.counter_checks if c.step in steps)}
        metric = next(iter(metrics))
        for s, text in marked_ncu_run(exe, harness, lab.name, per, [metric], out_dir / f"counters-{tag}-steps",
                                      timeout * len(per), env, readable).items():
            total, n = parse_ncu_csv(text, metric)
            if n:
                rep.conflicts[s] = total
    for chk in lab.counter_checks:
        if chk.step not in steps or chk.step in rep.conflicts:
            continue
        v, why = counters_step(exe, harness, lab.name, chk.step, seed, chk.metric, out_dir, timeout,
                               env, readable, tag)
        if v is None:
            rep.missing[chk.step] = why
        else:
            rep.conflicts[chk.step] = v
    if not rep.conflicts and rep.missing and len(set(rep.missing.values())) == 1:
        return CounterReport(False, next(iter(rep.missing.values())))
    return rep


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


def parse_ncu_launches(text: str) -> dict[str, KernelUse]:
    """ncu's CSV (--print-kernel-base mangled, SHARED_METRICS), summed by
    kernel; a launch is one "ID" of the table."""
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
        try:
            v = float(r[at["Metric Value"]].replace(",", ""))
        except ValueError:
            continue
        name = r[at["Kernel Name"]]
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
    with nullcontext() if cpu else alone_on(env):   # Nsight Compute has the GPU to itself (gpushare.py)
        r = exe.run(cmd, cwd=work, timeout=timeout, writable=[work], readable=readable, env=env)
    try:
        text = log.read_text(encoding="utf-8", errors="replace")[:1 << 22] if log.is_file() else ""
    except OSError:
        text = ""
    if r.timed_out:
        return None, f"timed out after {timeout:.0f} s"
    if cpu:   # no launch line at all: no launch, no shared memory either
        return StepTrace(parse_cpu_launches(text), len(cases)), ""
    kernels = parse_ncu_launches(text)
    if not kernels:
        why = next((ln.strip() for ln in (r.stdout + r.stderr).splitlines() if "ERR_" in ln or "==ERROR==" in ln), "")
        if not why and r.rc == 0:
            return StepTrace({}, len(cases)), ""
        return None, why or f"ncu ended with status {r.rc}"
    return StepTrace(kernels, len(cases)), ""


MARK_STEP = 0xFFFFFFFF     # harness.h's HN_MARK_STEP
MARK_KERNEL = "cml_hn_mark"   # hn_mark.cu's kernel: where a step's launches begin


def mark_case(step: int) -> Case:
    """The mark before a step's cases in a traced run of several steps."""
    return Case(step, 0, 0, b"", f"mark of step {step}", fill=FILL_INTS)


def split_ncu_by_marks(text: str, steps: list[int]) -> dict[int, str] | None:
    """ncu's CSV of a marked run of several steps split at the kit's marks:
    each step's own CSV (the header and the rows of its launches); None
    unless the marks are exactly one per step, before any other launch."""
    import csv
    import io
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    start = next((i for i, r in enumerate(rows) if "Metric Name" in r and "Kernel Name" in r), None)
    if start is None:
        return None
    head = rows[start]
    at = {c: head.index(c) for c in ("ID", "Kernel Name") if c in head}
    if len(at) < 2:
        return None
    mine: dict[int, list[list[str]]] = {}
    marks, seen = 0, set()
    for r in rows[start + 1:]:
        if len(r) <= max(at.values()):
            continue
        launch = (r[at["ID"]], r[at["Kernel Name"]])   # ncu's IDs count launches in order
        if launch[1] == MARK_KERNEL:
            if launch not in seen:
                if marks >= len(steps):
                    return None
                mine[steps[marks]] = []
                marks += 1
            seen.add(launch)
            continue
        if not marks:
            return None   # a launch before the first mark: not the harness's order
        mine[steps[marks - 1]].append(r)
    return {s: csv_text([head] + got) for s, got in mine.items()} if marks == len(steps) else None


def csv_text(rows: list[list[str]]) -> str:
    import csv
    import io
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    return buf.getvalue()


def marked_ncu_run(exe: Executor, harness: Path, lab_name: str, per: dict[int, list[Case]], metrics: list[str],
                   work: Path, timeout: float, env: dict[str, str], readable: list[Path]) -> dict[int, str]:
    """One Nsight Compute run of the harness over several steps' cases, each
    step's after the kit's mark (MARK_STEP, hn_mark.cu): each step's own CSV
    (split_ncu_by_marks), for the steps whose mark and cases all ended
    without a CUDA error. A step left out (a sticky error, a hang, marks
    that are not the grader's) is for the caller to measure alone."""
    from .run import find_tool
    ncu = find_tool("ncu")
    if ncu is None or len(per) < 2:
        return {}
    chk = CHECKERS[lab_name]
    steps = list(per)
    cases: list[Case] = []
    order: list[int] = []
    for s in steps:
        cases += [mark_case(s)] + per[s]
        order += [MARK_STEP] + [s] * len(per[s])
    work.mkdir(parents=True, exist_ok=True)
    inp, outp, log = work / "input.bin", work / "output.bin", work / "ncu.csv"
    write_input(inp, order, cases)
    for p in (outp, log):
        p.unlink(missing_ok=True)
    cmd = [ncu, "--csv", "--log-file", str(log), "--clock-control", "none", "--print-kernel-base", "mangled",
           "--metrics", ",".join(metrics), str(harness), str(inp), str(outp)]
    with alone_on(env):   # Nsight Compute has the GPU to itself (gpushare.py)
        r = exe.run(cmd, cwd=work, timeout=timeout, writable=[work], readable=readable, env=env)
    try:
        text = log.read_text(encoding="utf-8", errors="replace")[:1 << 24] if log.is_file() else ""
    except OSError:
        text = ""
    outs = read_output(outp, cases, [0 if o == MARK_STEP else chk.out_bytes(c) for o, c in zip(order, cases)])
    split = None if r.timed_out else split_ncu_by_marks(text, steps)
    if split is None:
        return {}
    got, k = {}, 0
    for s in steps:
        ended = outs[k:k + 1 + len(per[s])]   # its mark and its cases
        k += 1 + len(per[s])
        if all(o is not None and o.err == 0 for o in ended):
            got[s] = split[s]
    return got


def trace_steps(exe: Executor, harness: Path, lab_name: str, steps: list[int], seed: int, out_dir: Path,
                timeout: float, env: dict[str, str], readable: list[Path], cpu: bool,
                tag: str = "student", total: float | None = None) -> dict[int, tuple[StepTrace | None, str]]:
    """trace_step for several steps: on a GPU in one Nsight Compute run
    (marked_ncu_run); a step whose part of that run failed is traced again
    in a run of its own, as trace_step does, so one step's failure never
    costs another its trace. On the CPU path each step is traced in a run
    of its own. `timeout` is a step's limit; the run of them all has
    `total` (default: a step's limit per step)."""
    steps = list(dict.fromkeys(steps))
    got: dict[int, tuple[StepTrace | None, str]] = {}
    if not cpu and len(steps) > 1:
        per = {s: trace_cases(lab_name, seed, cpu, s) for s in steps}
        for s, text in marked_ncu_run(exe, harness, lab_name, per, list(SHARED_METRICS),
                                      out_dir / f"technique-{tag}-steps", total or timeout * len(steps), env,
                                      readable).items():
            got[s] = (StepTrace(parse_ncu_launches(text), len(per[s])), "")
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


def _copy_ceiling(harness: Path, cpu: bool, timeout: float) -> int:
    """The harness's device-copy case (harness.h HN_COPY_STEP): its times
    came back, and the bandwidth they give."""
    import statistics
    import tempfile
    from .checkbase import COPY_STEP, copy_case, copy_gbs
    from .sandbox import Sandbox
    c = copy_case(1 << 20 if cpu else 1 << 28, 5, 20261128)
    with tempfile.TemporaryDirectory(prefix="cml-checker-") as tmp:
        t = run_timed_cases(Executor(Sandbox(None, "")), harness, [(COPY_STEP, c)], Path(tmp), timeout, {}, [])[0]
    if t.note or len(t.times) != c.repeats:
        print(f"{c.label}: no timing ({t.note or 'incomplete'})")
        return 1
    if any(len(s) != SAMPLES for s in t.samples) or any(v != 0x3C3C3C3C for s in t.samples for _, v in s):
        print(f"{c.label}: the copy's sampled words are not the source's (0x3c bytes)")
        return 1
    ms = statistics.median(t.times)
    print(f"{c.label}: median {ms:.4f} ms of {c.repeats}, {copy_gbs(c, ms):.1f} GB/s"
          + (" (emulated: the CPU path, not a GPU)" if cpu else ""))
    return 0


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

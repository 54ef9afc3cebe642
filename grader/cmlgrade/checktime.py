"""The kit-only harness's timing (harness.h): a timed case run by the
harness, the launch timed with CUDA events around it (run_timed,
run_timed_cases), the check that every timed repeat computed the
reference's answer (same_answers), and the device's copy ceiling for the
checker's command line (_copy_ceiling). The cases and the checkers are
checker.py's."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from .checkbase import Case
from .harnessio import SAMPLES, HarnessGate, cuda_error, read_output, write_input
from .sandbox import Executor


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
    inp, outp = _timed_files(work, cases)
    r = exe.run([str(harness), str(inp), str(outp)], cwd=work, timeout=timeout, writable=[work],
                readable=readable, env=env)
    return _timed_results(work, [c for _, c in cases], r, timeout)


def _timed_files(work: Path, cases: list[tuple[int, Case]]) -> tuple[Path, Path]:
    """A timed run's input file (written) and output file (not there yet), in `work`."""
    work.mkdir(parents=True, exist_ok=True)
    inp, outp = work / "timed-input.bin", work / "timed-output.bin"
    write_input(inp, [s for s, _ in cases], [c for _, c in cases])
    outp.unlink(missing_ok=True)
    return inp, outp


def _timed_results(work: Path, only: list[Case], r, timeout: float) -> list[Timed]:
    """Each case's Timed from a timed run's output (r: its ProcResult, None
    where it never ran); its files are removed."""
    inp, outp = work / "timed-input.bin", work / "timed-output.bin"
    got = read_output(outp, only, [0] * len(only)) if r is not None else [None] * len(only)
    for p in (inp, outp):
        p.unlink(missing_ok=True)
    res = []
    for c, g in zip(only, got):
        if g is None:
            res.append(Timed(note="not run" if r is None else f"timed out after {timeout:.0f} s" if r.timed_out
                             else f"no timing (the harness ended with status {r.rc})"))
        elif g.err or g.timed_err:
            res.append(Timed(note=f"{cuda_error(g.err or g.timed_err)} in a timed run"))
        elif len(g.times) != c.repeats or not all(t > 0 for t in g.times):
            res.append(Timed(note="the timed run is incomplete"))
        else:
            res.append(Timed(g.times, g.samples))
    return res


class GatedRun:
    """A timed harness run started now that makes its CUDA context and then
    waits at its gate (harness.h: a FIFO, the third argument) until go():
    the reference's timing runs start before the GPU is held alone, so that
    their contexts are made while other work still runs there, not in the
    time the GPU is held. The reference's harness only, never a student's.
    The process holds no share of the GPU while it waits (the caller's
    alone() would wait for it), and may wait up to `timeout` in all."""

    def __init__(self, exe: Executor, harness: Path, cases: list[tuple[int, Case]], work: Path, timeout: float,
                 env: dict[str, str], readable: list[Path]):
        inp, outp = _timed_files(work, cases)
        self.work, self.cases, self.timeout = work, [c for _, c in cases], timeout
        self.gate = HarnessGate(work / "gate")
        self.result = None
        self.done: list[Timed] | None = None
        argv = [str(harness), str(inp), str(outp), str(self.gate.path)]

        def run():
            self.result = exe.run(argv, cwd=work, timeout=timeout, writable=[work], readable=readable, env=env,
                                  shared=False)
        self._thread = threading.Thread(target=run, name="gated-timing", daemon=True)
        self._thread.start()

    def _end(self, go: bool) -> list[Timed]:
        """Once: lets the run go ('g') or stops it ('s': status 3, no case
        run), waits for it to end; each case's Timed ("not run" if stopped)."""
        if self.done is None:
            self.gate.release(b"g" if go else b"s", self._thread.is_alive)
            self._thread.join()
            self.done = _timed_results(self.work, self.cases, self.result if go else None, self.timeout)
            self.gate.remove()
        return self.done

    def go(self) -> list[Timed]:
        """Lets the run go, waits for it to end: each case's Timed."""
        return self._end(True)

    def stop(self) -> None:
        """Ends a run never let go; nothing once it has gone."""
        self._end(False)


def same_answers(lab_name: str, c: Case, step: int, mine: Timed, ref: Timed) -> str | None:
    """None when every sampled word of every timed repeat matches the
    reference's (the same places: the same case), else why not."""
    from .checker import CHECKERS   # read when called: checker.py imports this module
    chk = CHECKERS[lab_name]
    for r, (a, b) in enumerate(zip(mine.samples, ref.samples)):
        for (wa, va), (wb, vb) in zip(a, b):
            if wa != wb:
                return "the timed run's samples are not where the harness puts them"
            if not chk.close(c, step, vb, va):
                return (f"timed repeat {r + 1} gave a wrong answer (output word {wa}: "
                        f"{va:#010x}, the reference's {vb:#010x}): every repeat must compute its answer")
    return None


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

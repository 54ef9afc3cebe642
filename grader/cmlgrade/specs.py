"""A lab's kit-only checker made from its spec (labs/<lab>/spec.c,
common/include/cml/cml_spec.h): the cases, their data and every verdict
come from the lab's verifier program, <stem>_verify, built from the spec
and the kit's host code only (no student code). This module only asks it:
there is nothing here of any lab.

The verifier is built in the grader's own build of its kit (the
reference's); bind() says where that build is."""
from __future__ import annotations

import json
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from .checkbase import Case, floats_close, ordinary

VERIFY_TIMEOUT = 600   # seconds for one verifier run (the largest judge: a billion multiply-adds)


class SpecError(RuntimeError):
    """The verifier is missing or failed: the grader's own kit is broken."""


@dataclass
class SpecCase(Case):
    index: int = 0            # its place in the verifier's list
    out_n: int = 0            # its output bytes
    steps: tuple[int, ...] = ()   # the steps that run it (empty: every step)
    counters_only: bool = False   # only the hardware counters are read on it
    group: str = ""
    spec_seed: int = 0        # the seed that made it (the verifier makes it again to judge it)
    spec_cpu: bool = False    # ... with the CPU path's sizes


class SpecChecker:
    """A lab's kit-only checker: what checker.py asks of a lab (its cases,
    the steps that run them, their output sizes and verdicts, the timed
    cases), answered by the lab's verifier."""

    def __init__(self, lab: str, stem: str) -> None:
        self.lab, self.stem = lab, stem
        self.verifier: Path | None = None
        self._described: dict[tuple[int, bool], dict] = {}
        self._lock = threading.Lock()

    def bind(self, build_dir: Path) -> None:
        """Use the verifier of this build of the kit (what another one
        described is forgotten)."""
        verifier = Path(build_dir) / f"{self.stem}_verify"
        with self._lock:
            if verifier != self.verifier:
                self._described.clear()
            self.verifier = verifier

    def _run(self, args: list[str], what: str) -> str:
        if self.verifier is None or not self.verifier.is_file():
            raise SpecError(f"{self.lab}: the lab's verifier ({self.stem}_verify) is not built"
                            + (f" in {self.verifier.parent}" if self.verifier else ""))
        try:
            r = subprocess.run([str(self.verifier)] + args, capture_output=True, text=True, timeout=VERIFY_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SpecError(f"{self.lab}: the verifier could not {what}: {e}") from e
        if r.returncode != 0:
            raise SpecError(f"{self.lab}: the verifier could not {what} (status {r.returncode}): "
                            f"{r.stderr.strip()[-500:]}")
        return r.stdout

    def _cpu(self, cpu: bool) -> list[str]:
        return ["--cpu"] if cpu else []

    def describe(self, seed: int, cpu: bool) -> dict:
        """The verifier's description of the cases of a seed (once)."""
        key = (seed, cpu)
        with self._lock:
            if key not in self._described:
                d = json.loads(self._run(["describe", str(seed)] + self._cpu(cpu), "describe its cases"))
                if d.get("lab") != self.lab:
                    raise SpecError(f"{self.verifier} describes lab {d.get('lab')!r}, not {self.lab!r}")
                self._described[key] = d
            return self._described[key]

    def make(self, seed: int, cpu: bool) -> list[Case]:
        """Every case of a seed with its data (written by the verifier)."""
        d = self.describe(seed, cpu)
        with tempfile.TemporaryDirectory(prefix="cml-spec-") as tmp:
            blob = Path(tmp) / "cases.data"
            self._run(["data", str(seed)] + self._cpu(cpu) + [str(blob)], "write the cases' data")
            raw = blob.read_bytes()
        out, at = [], 0
        for i, c in enumerate(d["cases"]):
            n = 4 * c["count"]
            out.append(SpecCase(c["kind"], c["a"], c["b"], raw[at:at + n], c["label"], limit=bool(c["limit"]),
                                index=i, out_n=c["out_bytes"], steps=tuple(c["steps"]),
                                counters_only=bool(c["counters_only"]), group=c["group"], spec_seed=seed,
                                spec_cpu=cpu))
            at += n
        if at != len(raw):
            raise SpecError(f"{self.lab}: the verifier's data is {len(raw)} bytes, its cases hold {at}")
        return out

    def step_cases(self, cases: list[Case], step: int) -> list[Case]:
        """The cases a step is checked on."""
        return [c for c in cases if not c.counters_only and (not c.steps or step in c.steps)]

    def counter_cases(self, cases: list[Case], step: int) -> list[Case]:
        """The cases a step's hardware counters are read on
        (checker.counters_step): the spec's own for counters where it has
        them, else the step's two largest ordinary cases."""
        own = [c for c in cases if c.counters_only and (not c.steps or step in c.steps)]
        return own or sorted(ordinary(self.step_cases(cases, step)), key=lambda c: c.count)[-2:]

    def out_bytes(self, c: Case) -> int:
        return c.out_n

    def judge_file(self, output: Path, steps: list[int], cases: list[Case]) -> list[str]:
        """The verifier's verdict on each case of a harness's output file
        (case k run by steps[k]): one line each (cml_spec.h)."""
        if not cases:
            return []
        got: dict[int, str] = {}
        for seed, cpu in dict.fromkeys((c.spec_seed, c.spec_cpu) for c in cases):   # one run per seed
            mine = [k for k, c in enumerate(cases) if (c.spec_seed, c.spec_cpu) == (seed, cpu)]
            lines = self._judge(output, seed, cpu, steps, cases, mine)
            got.update(zip(mine, lines))
        return [got[k] for k in range(len(cases))]

    def _judge(self, output: Path, seed: int, cpu: bool, steps: list[int], cases: list[Case],
               mine: list[int]) -> list[str]:
        """The verdicts of cases `mine` (all of one seed); the others' records are read past."""
        entries = ",".join(f"{steps[k]}:{cases[k].index if k in mine else 'x'}" for k in range(len(cases)))
        lines = self._run(["judge", str(seed)] + self._cpu(cpu) + [str(output), entries],
                          "judge the harness's outputs").splitlines()
        if len(lines) != len(mine):
            raise SpecError(f"{self.lab}: the verifier judged {len(lines)} cases of {len(mine)}")
        return lines

    def _timing(self, step: int) -> dict | None:
        return self.describe(0, False)["timing"].get(str(step))

    def timing_case(self, step: int, repeats: int, seed: int) -> Case | None:
        t = self._timing(step)
        if t is None:
            return None
        return SpecCase(t["kind"], t["a"], t["b"], b"", t["label"], fill=t["fill"], repeats=repeats, seed=seed,
                        words=t["count"])

    def close(self, c: Case, step: int, ref: int, got: int) -> bool:
        """A sampled output word (u32 bits) of a timed repeat against the
        reference's: exact unless the spec gives a tolerance."""
        t = self._timing(step) or {}
        rel, abs_ = t.get("close_rel", 0.0), t.get("close_abs", 0.0)
        return ref == got or (bool(rel or abs_) and floats_close(ref, got, rel, abs_))

    def traffic(self, c: Case, step: int) -> int:
        """The fewest bytes of device memory a timed case's launch must move
        (the spec's): over the copy bandwidth, the least time any kernel can
        take (reftime: a faster time is impossible)."""
        t = self._timing(step)
        return t["traffic"] if t else 8 * c.count

    def flops(self, c: Case, step: int) -> int | None:
        """The floating-point operations a timed case's launch must do, for a
        lab whose harness times a library on the same case (lab 03's cuBLAS
        SGEMM); None for the others."""
        t = self._timing(step)
        return (t["flops"] or None) if t else None

    @property
    def host_copies_in(self) -> tuple[str, ...]:
        """The interface functions that take host data to upload and so may
        call cudaMemcpy and friends (objcheck refuses host copies elsewhere)."""
        return tuple(x for x in self.describe(0, False)["host_copies_in"].split(",") if x)

"""The reference's runs (pipeline.Pipeline's part): its tests on the
public and secret data, its traces and counters, once per lab and GPU
model (cached); in a student edition, the test programs' own lists stand in."""
from __future__ import annotations

import re
import threading
from functools import partial
from pathlib import Path

from . import gpuhold
from . import run as R
from .checkprofile import lab_profile
from .labs import Lab
from .parsers import TestOutcome
from .refstore import complete
from .results import BinaryRun, LabRun
from .stagebase import PUBLIC_SEED, _Job
from .trust import reference_traces


def criterion_list(text: str) -> dict[str, TestOutcome]:
    """suite::test -> PASSED (SKIPPED for a disabled test) from a Criterion
    binary's --list: "suite: N tests" lines, then one line per test after a
    tree glyph ("├── ", "└── ", or "|-- ", "`-- " with --ascii)."""
    out: dict[str, TestOutcome] = {}
    suite = None
    for line in text.splitlines():
        m = re.fullmatch(r"(\S+): \d+ tests?", line.strip())
        if m:
            suite = m.group(1)
            continue
        m = re.fullmatch(r"(?:├── |└── |\|-- |`-- )(\S+)( \(skipped\))?", line.strip())
        if m and suite:
            o = TestOutcome(suite, m.group(1), "SKIPPED" if m.group(2) else "PASSED")
            out[o.key] = o
    return out


def _shares(lab: Lab) -> bool:
    """The lab's shared steps are compared with the reference's (a
    [technique] min_share): its reference harness is built and traced."""
    return bool(lab.rubric.technique.shared_steps and lab.rubric.technique.min_share)


class RefStage:
    """Pipeline's reference runs (a mixin: the state is Pipeline's)."""

    def _seeds(self) -> list[tuple[str, int | None]]:
        seeds = [("public", None)]
        if self.opts.secret_seed is not None:
            seeds.append(("hidden", self.opts.secret_seed))
        return seeds

    @staticmethod
    def _ref_key(lab: Lab, gpu: str | None) -> tuple:
        """Whose reference run a lab on `gpu` shares: every GPU of the same
        model shares one (its tests' lists and verdicts, its traces and
        counters are the model's, not the card's); a GPU whose model cannot
        be told has its own."""
        model = gpuhold.gpu_model(gpu) if gpu is not None else None
        return (lab.name, f"model {model}" if model else gpu)

    def reference(self, lab: Lab, gpu: str | None) -> LabRun:
        """The reference's runs of a lab on `gpu`'s model: run on the first
        GPU of that model a worker asks for it on, once per batch."""
        if not lab.solution_dir:   # a student edition: nothing to run (_listed stands in)
            return LabRun(lab.name, gpu=gpu or "")
        key = self._ref_key(lab, gpu)
        with self.ref_lock:
            if key in self.refs:
                return self.refs[key]
            once = self.ref_once.setdefault(key, threading.Lock())
        with once:   # workers sharing a GPU (--per-gpu): the first runs the reference there, the others wait
            with self.ref_lock:
                if key in self.refs:
                    return self.refs[key]
            return self._run_reference(lab, gpu, key)

    def _kept_key(self, lab: Lab, gpu: str | None, key: tuple) -> str | None:
        """The key of this lab's reference runs in the shared reference
        build's store (refstore.py); None where nothing is kept: no
        --reference-build, or a GPU whose model cannot be told."""
        if self.ref_store is None or (gpu is not None and not str(key[1]).startswith("model ")):
            return None
        names = list(lab.ref_targets()) + [f"{lab.stem}_harness_ref{cpu}" for cpu in ("", "_cpu")] \
            + [f"{lab.stem}_verify"]
        # str(key[1]): the GPU model, or None on the CPU path (why there is no GPU is in the store's context)
        return self.ref_store.key(lab, str(key[1]), [self.ref_build / n for n in names])

    def _run_reference(self, lab: Lab, gpu: str | None, key: tuple) -> LabRun:
        kept = self._kept_key(lab, gpu, key)
        ref = self.ref_store.get(kept) if kept else None
        if ref is not None:   # run before on this GPU model, from the same kit, programs, rubric and seeds
            ref.gpu = gpu or ""
            self.say(f"reference: {lab.name}'s tests, traces and counters as an earlier run on this "
                     f"{'GPU model' if gpu is not None else 'machine'} left them ({self.ref_store.folder}): "
                     f"not run again")
            with self.ref_lock:
                self.refs[key] = ref
            return ref
        ref = self._reference_runs(lab, gpu)
        if kept and complete(ref, self.gpu_ok and bool(lab.counter_checks), self._ref_harness(lab)[2]):
            self.ref_store.put(kept, ref)
        with self.ref_lock:
            self.refs[key] = ref
        return ref

    def _ref_harness(self, lab: Lab) -> tuple[Path, bool, list[int]]:
        """The reference's harness for the lab (the CPU path's where the
        lab's is), whether it is the CPU path's, and the shared steps it
        traces: what a student's shared steps must reach (none where the lab
        compares none, or the harness was not built)."""
        cpu = lab.harness.endswith("_cpu")
        harness = self.ref_build / (f"{lab.stem}_harness_ref" + ("_cpu" if cpu else ""))
        traced = bool(lab.harness) and (self.gpu_ok or lab.cpu) and _shares(lab) and harness.is_file()
        return harness, cpu, list(lab.rubric.technique.shared_steps) if traced else []

    def _reference_runs(self, lab: Lab, gpu: str | None) -> LabRun:
        ref = LabRun(lab.name, gpu=gpu or "")
        env = self._gpu_env(gpu)
        out = self.work / "reference" / "results" / f"{lab.name}-gpu{gpu}"
        seeds = self._seeds()
        self.say(f"reference: {lab.name}'s tests on the {' and '.join(k for k, _ in seeds)} data"
                 f"{'' if gpu is None else ' (GPU ' + gpu + ')'}")
        runs = [(kind, seed, b) for kind, seed in seeds for b in lab.test_binaries()]
        # on a GPU the data sets' runs side by side (their time is mostly the CPU's: building data, checking
        # answers); on the CPU path each test program uses every core already
        got = R.side_by_side([partial(R.run_tests, self.trusted, self.ref_build / lab.ref_name(b), out, kind, seed,
                                      lab.rubric.lab.time_limit_s, env, []) for kind, seed, b in runs],
                             2 if self.gpu_ok else 1)
        for kind, _ in seeds:
            ref.tests[kind] = {}
        for (kind, _, b), br in zip(runs, got):
            ref.tests[kind][b] = br
        harness, cpu, shared = self._ref_harness(lab)
        if self.gpu_ok and lab.counter_checks and self._counted_by_harness(lab):
            # on a GPU the traces and the counters in one profiled run
            got, ref.counters = lab_profile(self.trusted, harness, lab, shared, [c.step for c in lab.counter_checks],
                                            PUBLIC_SEED, out, lab.rubric.tests.step_time_limit_s,
                                            lab.rubric.counters.timeout_s, env, [], "reference")
            ref.traces = {s: tr for s, (tr, _) in got.items() if tr is not None}
        else:
            if shared:
                ref.traces = reference_traces(self.trusted, lab, harness, PUBLIC_SEED, out,
                                              lab.rubric.tests.step_time_limit_s, env, cpu)
            if self.gpu_ok and lab.counter_checks:   # the student-linked runner's --counters lines
                ref.counters = R.run_counters(self.trusted, self.ref_build / lab.ref_targets()[-1],
                                              [c.step for c in lab.counter_checks],
                                              lab.rubric.counters.timeout_s, out, env, [])
        return ref

    def _gpu_env(self, gpu: str | None) -> dict[str, str]:
        """What a process run on `gpu` gets: the GPU, and where several
        workers share it (--per-gpu), the share of its memory the kit's test
        binaries size their parallel tests by (criterion_main.c: the GPU's
        memory over CML_GPU_SLOTS, 4 GiB a test)."""
        if gpu is None:
            return {}
        env = {"CUDA_VISIBLE_DEVICES": gpu}
        if self.gpu_ok and self.per_gpu > 1:
            env["CML_GPU_SLOTS"] = str(gpuhold.DEFAULT_SLOTS * self.per_gpu)
        return env

    def _listed(self, job: _Job, out: Path) -> LabRun:
        """What stands in for the reference's results where the kit has no
        solutions/ (a student edition): the tests the submission's test
        programs list (Criterion --list: the kit's tests, made from the step
        table), each to pass. A step none of whose tests is listed because
        its test program did not build (or list) gets one placeholder test
        there, so it reads failed, not unmeasured."""
        lab, ref = job.lab, LabRun(job.lab.name, gpu=job.run.gpu)
        listed: dict[str, BinaryRun] = {}
        for b in lab.test_binaries():
            listed[b] = BinaryRun(b, job.run.build_ok.get(b, False))
            if listed[b].built:
                r = self.student_exe.run([str(job.build_dir / b), "--list"], cwd=out, timeout=60, writable=[out],
                                         readable=[job.tree])
                listed[b].outcomes = criterion_list(r.stdout)
                listed[b].problem = "" if listed[b].outcomes else f"--list listed no tests (exit {r.rc})"
        unbuilt = [br for br in listed.values() if not br.outcomes]
        if unbuilt:
            have = {lab.step_of_suite(o.suite) for br in listed.values() for o in br.outcomes.values()}
            for s in lab.steps:
                if s.num not in have:
                    o = TestOutcome(lab.suite.replace("{num}", str(s.num)), "(its tests)", "PASSED")
                    unbuilt[0].outcomes[o.key] = o
        for kind, _seed in self._seeds():
            ref.tests[kind] = {b: BinaryRun(br.binary, br.built, dict(br.outcomes), br.problem)
                               for b, br in listed.items()}
        return ref

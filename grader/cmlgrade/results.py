"""Dataclasses for what the grader gathers (facts from builds and runs) and
what it concludes (scored items). Facts come from run/build; score.py turns
them into items; report.py writes items out."""
from __future__ import annotations

from dataclasses import dataclass, field

from .objcheck import ObjectReport
from .parsers import CounterReport, SanitizerReport, TestOutcome


@dataclass
class BinaryRun:
    """One Criterion test binary, one seed."""
    binary: str
    built: bool
    outcomes: dict[str, TestOutcome] = field(default_factory=dict)
    problem: str = ""      # no report, rejected report, timed out, not built ...
    seconds: float = 0.0


@dataclass
class PerfResult:
    step: int
    student_ms: float | None
    ref_ms: float | None
    correct: bool
    note: str = ""
    samples_student: list[float] = field(default_factory=list)
    samples_ref: list[float] = field(default_factory=list)
    floor_ms: float | None = None   # faster than this is impossible on this GPU (reftime.LabTiming)
    ceiling: str = ""               # how floor_ms was found (or why there is none)
    impossible: bool = False        # the student's time is below floor_ms: no credit, flagged
    bound: str = "move the step's data"   # what floor_ms is the least time for (IMPOSSIBLE's words)
    order: str = "student and reference alternating"   # how the runs were ordered (the feedback's words)
    tries: int = 1                  # how many times the step was timed (reftime.best_of_tries): the best counts


@dataclass
class StaticResult:
    name: str
    ok: bool
    detail: str = ""
    measured: bool = True    # False: could not be checked here (no CUDA build, no cuobjdump)


@dataclass
class LabRun:
    """Everything measured for one lab of one submission (or the reference)."""
    lab: str
    submitted: bool = True
    build_ok: dict[str, bool] = field(default_factory=dict)      # target -> built
    build_errors: list[str] = field(default_factory=list)        # compiler messages for the student
    build_problem: str = ""                                      # configure failed, not submitted ...
    tests: dict[str, dict[str, BinaryRun]] = field(default_factory=dict)   # seed kind -> binary -> run
    sanitizers: dict[str, SanitizerReport] = field(default_factory=dict)  # tool -> report (worst config)
    sanitizer_configs: dict[str, str] = field(default_factory=dict)       # tool -> runner args of that report
    # diagnosis only (no points): a tool the mistake catalog names, run on the
    # failing steps it can explain; tool -> (steps, report)
    diagnoses: dict[str, tuple[list[int], SanitizerReport]] = field(default_factory=dict)
    counters: CounterReport | None = None
    perf: dict[int, PerfResult] = field(default_factory=dict)
    static: list[StaticResult] = field(default_factory=list)
    gpu_note: str = ""               # why GPU checks were not run (no GPU, not built, time limit)
    timed_out: list[str] = field(default_factory=list)           # what the lab's wall clock cut off
    seconds: dict[str, float] = field(default_factory=dict)      # stage -> seconds
    gpu: str = ""
    untouched: list[str] = field(default_factory=list)           # files identical to the kit's skeleton
    not_started: list[int] = field(default_factory=list)         # steps whose TODO blocks are unchanged
    machine_note: str = ""           # no GPU on this machine: GPU checks are not measured for anyone
    objects: ObjectReport | None = None   # the checks on the compiled objects (objcheck.py)
    refused: list[str] = field(default_factory=list)   # why none of the student's code was run
    checks: dict[str, dict[int, object]] = field(default_factory=dict)  # seed kind -> step -> checker.StepVerdict
    technique: dict[int, str] = field(default_factory=dict)  # step -> what checker.trace_step measured
    traces: dict[int, object] = field(default_factory=dict)  # the reference's: step -> checker.StepTrace
    # the CPU path's own word that it cannot run the file (cooperative launches, wider tiles ...): the lab is
    # graded on a GPU, never scored as a compile error
    cpu_unsupported: str = ""

    def outcomes(self, seed: str) -> dict[str, TestOutcome]:
        merged: dict[str, TestOutcome] = {}
        for br in self.tests.get(seed, {}).values():
            merged.update(br.outcomes)
        return merged


@dataclass
class Item:
    """One scored line: a step's tests, a sanitizer, a counter check, a
    static check or a step's performance."""
    name: str
    category: str          # tests | hidden | sanitizer | counters | static | performance
    max_points: float
    points: float
    status: str            # passed | partial | failed | not_measured | excluded
    visibility: str
    feedback: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)

    @property
    def counted(self) -> bool:
        return self.status not in ("not_measured", "excluded")


@dataclass
class LabScore:
    lab: str
    title: str
    submitted: bool
    items: list[Item]
    points: float
    max_points: float
    notes: list[str] = field(default_factory=list)
    build_errors: list[str] = field(default_factory=list)
    not_counted: list[str] = field(default_factory=list)   # tests the reference fails, not counted


@dataclass
class StudentResult:
    student: str
    source: str
    labs: list[LabScore]
    problems: list[str]
    ignored: list[str]
    points: float
    max_points: float
    sandbox: str
    seed: str              # "public" | "secret"
    on_roster: bool = True
    missing: bool = False
    timings: dict[str, dict[str, float]] = field(default_factory=dict)  # lab -> stage -> s (not in outputs)
    machine: str = ""      # why the GPU checks were not measured on this machine (said once per report)

    @property
    def gradable(self) -> bool:
        """Something was submitted and at least one lab could be graded from
        it (the gradebook, Gradescope and PrairieLearn all use this)."""
        return not self.missing and any(ls.submitted for ls in self.labs)

    @property
    def status(self) -> str:
        if self.missing:
            return "no submission"
        if not self.gradable:
            return "nothing graded"
        return "graded" if self.on_roster else "not on roster"

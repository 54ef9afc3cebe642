"""What a rubric is once validated (rubricbuild.py makes one, rubric.py
loads it): a dataclass per part (the lab, tests, sanitizers, counters,
static checks, performance, technique, an override's mistake feedback)
and the check that the steps a rubric names are the manifest's. Every rubric problem raises RubricError."""
from __future__ import annotations

from dataclasses import dataclass, field


class RubricError(Exception):
    pass


@dataclass
class LabInfo:
    title: str
    time_limit_s: float
    build_timeout_s: float


@dataclass
class TestsRubric:
    default_points: float
    points: dict[int, float]
    hidden_share: float
    visibility: str
    hidden_visibility: str
    feedback: str
    step_feedback: dict[int, str]
    step_time_limit_s: float = 240.0  # one step's tests (a Criterion suite) of a submission

    def step_points(self, step: int) -> float:
        return self.points.get(step, self.default_points)


@dataclass
class SanitizersRubric:
    points: dict[str, float]
    timeout_s: float
    max_configs: int     # run the first N of the manifest's "sanitize" strings (0: all of them)
    visibility: str
    feedback: str        # {tool} {summary}
    cpu_feedback: str    # the CPU path's stand-in for a tool (score.CPU_CHECKS): {check} {tool} {summary}


@dataclass
class CounterCheck:
    step: int
    expect: str  # "zero" | "nonzero"
    points: float
    feedback: str
    metric: str = ""    # the manifest's ncu metric (read by the grader's own ncu run on the harness)


@dataclass
class CountersRubric:
    default_points: float
    points: dict[int, float]      # step -> points of its counter check
    feedback: dict[int, str]      # step -> the line shown when it fails
    visibility: str
    timeout_s: float

    def step_points(self, step: int) -> float:
        return self.points.get(step, self.default_points)


@dataclass
class StaticCheck:
    """A check of the student's code. With `steps` (the kit's kind) it reads
    what was compiled: the kernels each of those steps launches while the
    kit-only harness runs it (whatever their names) must together hold
    (require) an instruction matching each of `patterns` in their SASS, or
    none of them one (forbid); static.run_sass_checks. With `sass_kernel`,
    the same of every device function whose demangled name matches that
    regex. With neither, a regex over the source text after comments are
    removed (an instructor's own check; the kit's rubrics use none).
    With `steps`, `max_registers` and `local_memory` judge the resources
    ptxas gave those kernels (registers per thread, local memory and
    spills), with or without instruction patterns."""
    name: str
    file: str  # a student file, or "*" for all of them
    pattern: str
    mode: str  # "require" | "forbid"
    points: float
    feedback: str
    zero_lab: bool
    strings: str  # "strip" | "keep": string literals removed before matching
    visibility: str
    sass_kernel: str = ""                                  # regex over demangled device function names
    steps: list[int] = field(default_factory=list)         # the kernels these steps launch (SASS checks)
    scope: str = "launched"   # "template": the launched kernels' other instantiations count too
    patterns: list[str] = field(default_factory=list)     # instruction regexes (SASS checks)
    step: int | None = None                                # credit needs this step's tests to pass
    # resources of the step's compiled kernels (cuobjdump -res-usage; with `steps` only)
    max_registers: int | None = None                       # each kernel uses at most this many registers
    local_memory: str = ""     # "none": no kernel has local memory or spills; "required": one of them has


@dataclass
class PerformanceRubric:
    steps: list[int]
    points_per_step: float
    full_credit_ratio: float
    repeats: int
    runner_args: str
    timeout_s: float
    visibility: str
    feedback: str


@dataclass
class TechniqueSass:
    """A rule on the compiled kernels a step launches that decides the
    step's verdict (a technique the step is about, not a point of its own):
    together they must hold an instruction matching each of `require`, and
    none of them one matching `forbid` (e.g. lab 02's global-memory steps:
    LDG, and no read of the constant bank c[0x3])."""
    steps: list[int]
    require: list[str]
    forbid: list[str]
    feedback: str


@dataclass
class TechniqueRubric:
    """Steps whose launches must load from and store to shared memory
    (measured: Nsight Compute on a GPU, the runtime's tracing on the CPU
    path; checker.trace_step). A step that does not loses its tests' verdict."""
    shared_steps: list[int] = field(default_factory=list)
    feedback: str = ("step {step} must stage its data in shared memory, but its launches made "
                     "{loads:.0f} shared-memory loads and {stores:.0f} stores")
    # a step's shared loads must be at least min_share x the fewest the reference's shared steps make on the
    # same cases (0: only more than none); the rubric says why its lab's share is what it is
    min_share: float = 0.125
    sass: list[TechniqueSass] = field(default_factory=list)
    share_feedback: str = ("step {step} must do its work from shared memory, but its launches made "
                           "{loads:.0f} shared-memory loads where the reference's make at least {ref:.0f} on the "
                           "same cases (a result staged once in shared memory is not a tile)")


@dataclass
class MistakeFeedback:
    feedback: str
    kernel: str = ""
    finding: str = ""


@dataclass
class Rubric:
    source: str
    lab: LabInfo
    tests: TestsRubric
    sanitizers: SanitizersRubric
    counters: CountersRubric
    static: list[StaticCheck]
    performance: PerformanceRubric
    mistakes: dict[str, MistakeFeedback] = field(default_factory=dict)  # an override's feedback lines
    technique: TechniqueRubric = field(default_factory=TechniqueRubric)
    is_default: bool = False    # no rubric file: the default policy

    def check_steps(self, nums: list[int], counter_steps: list[int]) -> None:
        known = set(nums)
        used = ([("tests.points", s) for s in self.tests.points]
                + [("tests.step_feedback", s) for s in self.tests.step_feedback]
                + [("performance.steps", s) for s in self.performance.steps]
                + [("technique.shared_steps", s) for s in self.technique.shared_steps]
                + [("technique.sass: steps", s) for x in self.technique.sass for s in x.steps]
                + [(f"static {c.name}: steps", s) for c in self.static for s in c.steps])
        for where, s in used:
            if s not in known:
                raise RubricError(f"{self.source}: {where} names step {s}, but the lab's manifest has "
                                  f"steps {min(nums)}..{max(nums)}")
        for where, steps in (("counters.points", self.counters.points), ("counters.feedback", self.counters.feedback)):
            for s in steps:
                if s not in counter_steps:
                    raise RubricError(f"{self.source}: {where} names step {s}, but the manifest's counters expect "
                                      f"something of steps {', '.join(map(str, counter_steps)) or 'none'} only")

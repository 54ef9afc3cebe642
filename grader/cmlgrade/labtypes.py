"""What a lab is to the grader (labs.py makes each one): its steps, the
catalogue's mistakes, the pictures of its steps' memory access, its build targets and the Lab itself, with what
follows from them (the targets to build and their reference's names, the
runner's arguments for the sanitizers, a Criterion suite's step, the
points the rubric can give). Nothing here reads a file."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .rubrictypes import CounterCheck, Rubric


@dataclass(frozen=True)
class Step:
    num: int
    ident: str
    what: str
    where: str = ""  # the student file of the step


@dataclass(frozen=True)
class Mistake:
    name: str
    file: str
    step: int
    summary: str
    caught_by: str
    expect_failing: str = ""
    expect_message: str = ""
    feedback: str = ""   # the line a student reads when the results show this mistake
    kernel: str = ""     # regex: a sanitizer finding must name a matching kernel or device function
    finding: str = ""    # regex: ... and its first line must match
    tests: str = ""      # regex: a test (suite::name) whose failure is this mistake's signature (score.py)
    message: str = ""    # regex: ... and a message of that test's own that shows it
    gpu_only: str = ""   # why no test of the CPU path can catch it ("": the CPU path's tests do)


@dataclass(frozen=True)
class Picture:
    """A step whose memory access the CPU path draws (the manifest's "pictures")."""
    step: int
    args: str    # the runner's size options for a quick CPU-path run
    shows: str   # one line: what the reference's picture shows


@dataclass(frozen=True)
class Targets:
    runner: str
    tests: str
    model_tests: str
    ref_suffix: str


@dataclass
class Lab:
    name: str
    stem: str
    title: str
    files: tuple[str, ...]
    model_file: str
    steps: tuple[Step, ...]
    rubric: Rubric
    sanitize: tuple[str, ...]                # runner arguments, one sanitizer run each
    counter_checks: tuple[CounterCheck, ...]
    kernels: str                             # regex: the lab's kernel and device function names
    suite: str                               # Criterion suite name of a step: "step{num}"
    targets: Targets
    dir: str                                 # labs/<lab>
    solution_dir: str                        # solutions/<lab>, or "" in a kit without solutions
    mistakes: tuple[Mistake, ...] = field(default_factory=tuple)
    harness: str = ""   # the kit-only checker's harness target (checker.py), set by the pipeline
    extra_targets: tuple[str, ...] = ()   # built for the object checks only (the CUDA kernels on the CPU path:
                                          # an object library, kernels_library)
    cpu: bool = False   # graded on the CPU path (no GPU here): the *_cpu test programs and runner
    pictures: tuple[Picture, ...] = ()   # the manifest's pictures of steps' memory access

    @property
    def kernel_file(self) -> str:
        return self.files[0]

    @property
    def runner(self) -> str:
        return self.targets.runner + ("_cpu" if self.cpu else "")

    def step(self, num: int) -> Step | None:
        for s in self.steps:
            if s.num == num:
                return s
        return None

    def picture(self, num: int) -> Picture | None:
        """The manifest's picture of step `num` (one a step), if any."""
        return next((p for p in self.pictures if p.step == num), None)

    def picture_command(self, num: int) -> str:
        """The command that draws step `num`'s memory access from the
        student's own kernel on the CPU path (no GPU needed), in a build
        folder build/ (the runner built first: beside a CUDA build it is left
        out of the default build); "" where the manifest has no picture of it."""
        p = self.picture(num)
        if p is None:
            return ""
        runner = self.targets.runner + "_cpu"
        return (f"cmake --build build --target {runner} && ./build/{runner} --step {num} "
                f"--picture step{num}.svg {p.args}").rstrip()

    def step_of_suite(self, suite: str) -> int | None:
        """The step whose suite this is (step<num>): the tests the kit-only
        checker stands in for."""
        m = re.fullmatch(suite_regex(self.suite), suite)
        return int(m.group(1)) if m else None

    def step_of_test(self, o) -> int | None:
        """The step a test outcome counts for: its suite's, or, in a suite of
        no step, the step its name starts with (step<num>_..., e.g. lab 04's
        past_2_pow_31::step7_...: one step on a case the checker does not
        have, so it runs whatever the checker found, and counts with that
        step's tests)."""
        n = self.step_of_suite(o.suite)
        if n is None:
            m = re.match(suite_regex(self.suite) + "_", o.name)
            n = int(m.group(1)) if m else None
        return n

    def sanitizer_args(self) -> list[str]:
        """The runner arguments of each sanitizer run: the manifest's, the
        first rubric.sanitizers.max_configs of them when that is set."""
        n = self.rubric.sanitizers.max_configs
        return list(self.sanitize[:n] if n else self.sanitize)

    def test_binaries(self) -> tuple[str, ...]:
        tests = self.targets.tests + ("_cpu" if self.cpu and self.targets.tests else "")
        return tuple(t for t in (self.targets.model_tests, tests) if t)

    def kernels_library(self) -> str:
        """The CMake object library of the student's CUDA files (the kit's
        Kit.cmake: <stem>_kernels_student): objects only, no binary."""
        return f"{self.stem}_kernels_student"

    def student_targets(self) -> list[str]:
        """Build targets, in build order: each is built on its own so that one
        file's compile error costs only what depends on it."""
        return (list(self.test_binaries()) + [self.runner] + ([self.harness] if self.harness else [])
                + list(self.extra_targets))

    def ref_name(self, target: str) -> str:
        """The reference's build of a student target (the CPU path's suffix last)."""
        if self.cpu and target.endswith("_cpu"):
            return target.removesuffix("_cpu") + self.targets.ref_suffix + "_cpu"
        return target + self.targets.ref_suffix

    def ref_targets(self) -> list[str]:
        """The reference's test programs and runner (last)."""
        return [self.ref_name(t) for t in list(self.test_binaries()) + [self.runner]]

    def max_points(self, hidden: bool) -> float:
        """Everything the rubric can give (before exclusions). A step's test
        points are the same with or without the hidden run: with a secret
        seed, hidden_share of them move to the hidden data."""
        r = self.rubric
        return (sum(r.tests.step_points(s.num) for s in self.steps) + sum(r.sanitizers.points.values())
                + sum(c.points for c in self.counter_checks) + sum(c.points for c in r.static)
                + r.performance.points_per_step * len(r.performance.steps))


class LabError(Exception):
    pass


def suite_regex(pattern: str) -> str:
    """'step{num}' -> 'step(\\d+)'."""
    if pattern.count("{num}") != 1:
        raise LabError(f"suite pattern '{pattern}' must hold {{num}} once")
    a, b = pattern.split("{num}")
    return re.escape(a) + r"(\d+)" + re.escape(b)

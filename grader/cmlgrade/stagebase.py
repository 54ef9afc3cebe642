"""What the batch's stages share (pipeline.Pipeline, building.BuildStage,
labrun.LabStage): the options, the grader's constants and errors, a job."""
from __future__ import annotations

import argparse
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from .intake import Submission
from .labs import Lab
from .results import LabRun

NO_GPU_ARCH = "90"   # the CUDA build's architecture where no GPU is listed (--cuda-arch overrides)
HARNESS_REPEATS = 20   # timed launches per harness run (after harness.h's warm-up)

CPU_PATH = ("the CPU path (no GPU here): the tests, the kit-only checks and the CPU path's bounds and race checks "
            "ran on the CPU; compute-sanitizer, Nsight Compute counters and timings need a GPU")
PUBLIC_SEED = 20261122  # the kit's default (common/include/cml/cml_rng.h)
# A kit without solutions/ (tools/release's student edition): what needs the
# reference solution is not measured, and the run says so once.
NO_REFERENCE = "no reference solution in this student edition (the instructor's grading compares with it)"
STUDENT_EDITION = ("self-check of a student edition (no solutions/): the tests that count are those the kit's "
                   "test programs list; what needs the reference solution (timing against it) is not measured "
                   "here, and with labs/ the only copy of the skeletons no file is called untouched; the "
                   "instructor's grading compares with the reference")


class GraderError(Exception):
    pass


@dataclass
class Options:
    kit: Path
    work: Path | None = None
    keep_work: bool = False
    secret_seed: int | None = None
    jobs: int = 0
    sandbox: bool = True            # False: --unsafe-no-sandbox (named in every report)
    require_isolation: bool = True  # refuse to run student code without it (a student's own check may)
    cpu_path: bool | None = None    # grade on the CPU path (common/cpu); None: when no GPU is listed
    arch: str = ""
    hide: list[Path] = field(default_factory=list)   # also hidden from student code (inputs, override, outputs)
    progress: bool = False
    fresh_trees: bool = False   # each submission in its own configured tree (the old way) instead of the prebuilt kit
    cache: Path | None = None   # the content-hash cache of graded labs (cache.py); None: none
    retime_reference: bool = False   # time the reference beside every submission (the old way), not once per batch
    reference_build: Path | None = None   # a reference build folder shared by several runs (built under a lock)
    # submissions graded at once on each GPU (their untimed phases share it; gpushare.py); 0: auto, by the GPUs'
    # free memory when the run is prepared (gpuhold.auto_per_gpu; Pipeline.per_gpu holds the count used)
    per_gpu: int = 0
    # "failing" (grade.py's default): where a lab has a kit-only checker it runs first, and Criterion runs the
    # public tests of the steps it does not find right only, the others taking its verdict (labrun.LabStage._tests;
    # the same verdicts as "all" over every catalogued mistake, docs/grading.md §9); "all": every public test program
    # runs (Criterion's outcomes, then the kit-only checks)
    public_tests: str = "failing"


def per_gpu_arg(text: str) -> int:
    """--per-gpu of grade.py and the bench: 1 to 16, or auto (0)."""
    if text.strip().lower() == "auto":
        return 0
    try:
        n = int(text)
    except ValueError:
        n = -1
    if not 1 <= n <= 16:
        raise argparse.ArgumentTypeError(f"{text!r}: give 1 to 16 submissions at once per GPU, or auto")
    return n


def cuda_arch(given: str, gpus: list[str]) -> str:
    """The CUDA build's architectures: those given (--cuda-arch); else the
    GPU grading here ("": the kit's CMake finds it); else NO_GPU_ARCH, one
    architecture with every feature the labs' students may use (sm_80's
    __reduce_add_sync ...): never the kit's portable list, whose sm_75 would
    fail honest code ("does not compile"), and never a CUDAARCHS the shell
    happens to hold (sandbox.ENV_KEEP leaves it out)."""
    return given or ("" if gpus else NO_GPU_ARCH)


def parse_seed(text: str) -> int:
    t = text.strip()
    try:
        v = int(t, 16) if t.lower().startswith("0x") else int(t, 10)
    except ValueError as e:
        raise GraderError(f"the secret seed '{text}' is not a number (decimal or 0x hex)") from e
    if not 0 <= v < 2**64:
        raise GraderError("the secret seed must be between 0 and 2^64-1")
    return v


def safe_name(student: str) -> str:
    """A folder name for a student id: distinct ids give distinct names
    ("a b" and "a_b"; ids that differ past 80 characters), and an id that
    needs no change keeps it."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", student)[:80].lstrip(".") or "student"
    if name != student:
        name += "-" + hashlib.sha256(student.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return name


# What the CPU path's headers say where a file uses what cannot run on the CPU (common/cpu/include)
CPU_CANNOT_RUN = re.compile(r"cml-cpu: (the CPU path cannot run [^\"\n]*)")


@dataclass
class _Job:
    sub: Submission
    lab: Lab
    run: LabRun
    build_dir: Path
    tree: Path
    gpu_key: str | None = None
    ref: LabRun | None = None   # what the job was scored against (reference() or, without solutions, _listed())

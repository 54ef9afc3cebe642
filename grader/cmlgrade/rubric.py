"""Rubrics: one TOML file per lab (labs/<lab>/rubric.toml), read with
tomllib, an instructor's override merged key by key, then validated into
dataclasses. Errors name the file and the key. A rubric holds grading
policy only (points, visibility, feedback, limits): what a lab is (files,
steps, sanitizer arguments, counter expectations, targets) is its manifest,
labs/<lab>/lab.json, and the mistakes' feedback is in the catalogue.

This module reads the files and merges the override (and holds the policy
of a lab without a rubric file); the dataclasses are rubrictypes.py's, and
validating the data into them rubricbuild.py's."""
from __future__ import annotations

import copy
import tomllib
from pathlib import Path

from .rubricbuild import build_rubric
from .rubrictypes import RubricError

# names this module defined before rubricbuild.py and rubrictypes.py were split from it: importable from here still
from .rubricbuild import MOVED, SANITIZER_TOOLS, VISIBILITIES  # noqa: F401
from .rubrictypes import CounterCheck, CountersRubric, LabInfo, MistakeFeedback, PerformanceRubric, Rubric  # noqa: F401
from .rubrictypes import SanitizersRubric, StaticCheck, TechniqueRubric, TechniqueSass, TestsRubric  # noqa: F401


def default_rubric_data() -> dict:
    """The policy of a lab that has a manifest but no rubric file: 10 points a
    step, the four sanitizers, the counters' checks at 1 point, no
    performance points. (Code that reaches outside its lab is refused by the
    object checks, for every lab: docs/grading.md §8.)"""
    return {"tests": {"default_points": 10, "hidden_share": 0.3},
            "sanitizers": {"points": {"memcheck": 3, "racecheck": 3, "synccheck": 2, "initcheck": 1}}}


def merge(base: dict, over: dict) -> dict:
    """Deep merge: tables merge key by key, everything else (lists included)
    is replaced."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def load_rubric(path: Path, override: dict | None, files: list[str] | tuple[str, ...]) -> Rubric:
    try:
        with Path(path).open("rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise RubricError(f"{path}: not valid TOML: {e}") from e
    source = str(path)
    if override:
        data = merge(data, override)
        source += " (+ override)"
    return build_rubric(data, source, files)


def load_override(path: Path) -> dict:
    """An instructor's override file: one table per lab, e.g.
    [04_reduction.performance] points_per_step = 10. Top-level keys must be
    lab names."""
    try:
        with Path(path).open("rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise RubricError(f"{path}: cannot read the rubric override: {e.strerror}") from e
    except tomllib.TOMLDecodeError as e:
        raise RubricError(f"{path}: not valid TOML: {e}") from e
    for k, v in data.items():
        if not isinstance(v, dict):
            raise RubricError(f"{path}: top-level key '{k}' must be a lab table like [04_reduction.tests]")
    return data

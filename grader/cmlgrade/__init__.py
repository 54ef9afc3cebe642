"""cmlgrade: the auto-grader of CUDA Memory Labs (Python 3 standard library only).

Modules by role: labs (registry from data), rubric (TOML, overrides), intake
(submissions and archives), buildtree/build (temporary kit trees, CMake),
sandbox (bubblewrap or a scrubbed environment), parsers (Criterion JSON,
compute-sanitizer, counters, runner JSON), run (the GPU stage), static
(source checks), score (arithmetic), report (every output format), pipeline
(batch orchestration) and cli.
"""

__version__ = "0.1.0"

"""What the run stage's parts share: the lab's wall clock (Deadline), from
which every command's limit comes, the calls run side by side (a
submission-lab's independent GPU processes) and a text's first lines."""
from __future__ import annotations

import time


# How many of one submission-lab's GPU processes run at once where they are independent (kit-only checks of
# different steps, the compute-sanitizer tools): they spend their time starting, making inputs and checking
# outputs, not on the GPU (one process at a time left an H200 at 0-3 % busy).
GPU_SIDE_BY_SIDE = 4


def side_by_side(calls: list, workers: int) -> list:
    """calls() each, up to `workers` at once (threads: each mostly waits on
    a process), their results in the calls' order; an exception is raised
    as if the calls had run one after another."""
    if workers <= 1 or len(calls) <= 1:
        return [c() for c in calls]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=min(workers, len(calls))) as pool:
        futures = [pool.submit(c) for c in calls]
        return [f.result() for f in futures]


class Deadline:
    """The lab's wall clock: every command gets min(its own limit, what is left)."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def limit(self, own: float) -> float:
        return max(1.0, min(own, self.left()))

    def expired(self) -> bool:
        return self.left() <= 1.0


def first_lines(text: str, n: int = 5) -> str:
    return "\n".join(ln for ln in text.splitlines() if ln.strip())[:n]

"""The grader's progress lines on stderr (pipeline.Pipeline's)."""
from __future__ import annotations

import sys
import threading
import time


class Progress:
    """The progress lines on stderr: one a stage, and where no line came for
    HEARTBEAT_S seconds (a long build, a lab's tests on the CPU path, the
    hidden-seed reference runs) a line saying what is still running and for
    how long, so that a run is never silent for long, on a terminal or not."""

    HEARTBEAT_S = 10.0

    def __init__(self, enabled: bool, total: int):
        self.enabled, self.total, self.done = enabled, total, 0
        self.lock = threading.Lock()
        self.running: dict[str, tuple[str, float]] = {}   # who -> (what, since)
        self.waiting: dict[str, str] = {}   # who -> what it waits for (built, its lab not yet started)
        self.last = time.monotonic()
        self._stop = threading.Event()
        if enabled:
            threading.Thread(target=self._beat, daemon=True).start()

    def _print(self, line: str) -> None:   # under self.lock
        print(line, file=sys.stderr, flush=True)
        self.last = time.monotonic()

    def _beat(self) -> None:
        while not self._stop.wait(1.0):
            with self.lock:
                now = time.monotonic()
                if now - self.last < self.HEARTBEAT_S or not (self.running or self.waiting):
                    continue
                self._print(f"[{self.done}/{self.total}] {self._summary(now)}")

    def _summary(self, now: float) -> str:   # under self.lock
        """What runs, the first four with their seconds; then how many labs
        are built and wait (for a GPU), so that a wait never reads as a
        long build."""
        parts = []
        if self.running:
            what = "; ".join(f"{who}: {w} ({now - t0:.0f} s)" for who, (w, t0) in list(self.running.items())[:4])
            more = f" and {len(self.running) - 4} more" if len(self.running) > 4 else ""
            parts.append(f"still running: {what}{more}")
        if self.waiting:
            counts: dict[str, int] = {}
            for w in self.waiting.values():
                counts[w] = counts.get(w, 0) + 1
            parts.append("; ".join(f"{n} lab{'s' if n > 1 else ''} built, {w}" for w, n in counts.items()))
        return "; ".join(parts)

    def start(self, total: int) -> None:
        with self.lock:
            self.total, self.done = total, 0

    def idle(self) -> None:
        """Nothing runs now (the outputs are written next): no heartbeat."""
        with self.lock:
            self.running.clear()
            self.waiting.clear()

    def close(self) -> None:
        self._stop.set()

    def note(self, what: str) -> None:
        """A stage of the run itself (the reference build), not a student's."""
        with self.lock:
            self.running["grader"] = (what, time.monotonic())
            if self.enabled:
                self._print(f"[grader] {what}")

    def queued(self, student: str, lab: str, what: str) -> None:
        """A built lab that waits for its turn (`what`: "waiting for a GPU"):
        no line of its own, and the heartbeat counts it apart from what
        runs. Its next say() ends the wait."""
        with self.lock:
            who = f"{student} {lab}"
            self.running.pop(who, None)
            self.waiting[who] = what

    def say(self, student: str, lab: str, what: str, finished: bool = False, line: bool = True) -> None:
        """A student's lab at a new stage: a line (unless `line` is False:
        the heartbeat still names the stage)."""
        with self.lock:
            self.running.pop("grader", None)
            who = f"{student} {lab}"
            self.waiting.pop(who, None)
            if finished:
                self.done += 1
                self.running.pop(who, None)
            else:
                self.running[who] = (what, time.monotonic())
            if self.enabled and line:
                self._print(f"[{self.done}/{self.total}] {student} {lab}: {what}")

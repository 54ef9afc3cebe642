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
                if now - self.last < self.HEARTBEAT_S or not self.running:
                    continue
                what = "; ".join(f"{who}: {w} ({now - t0:.0f} s)" for who, (w, t0) in list(self.running.items())[:4])
                more = f" and {len(self.running) - 4} more" if len(self.running) > 4 else ""
                self._print(f"[{self.done}/{self.total}] still running: {what}{more}")

    def start(self, total: int) -> None:
        with self.lock:
            self.total, self.done = total, 0

    def idle(self) -> None:
        """Nothing runs now (the outputs are written next): no heartbeat."""
        with self.lock:
            self.running.clear()

    def close(self) -> None:
        self._stop.set()

    def note(self, what: str) -> None:
        """A stage of the run itself (the reference build), not a student's."""
        with self.lock:
            self.running["grader"] = (what, time.monotonic())
            if self.enabled:
                self._print(f"[grader] {what}")

    def say(self, student: str, lab: str, what: str, finished: bool = False) -> None:
        with self.lock:
            self.running.pop("grader", None)
            who = f"{student} {lab}"
            if finished:
                self.done += 1
                self.running.pop(who, None)
            else:
                self.running[who] = (what, time.monotonic())
            if self.enabled:
                self._print(f"[{self.done}/{self.total}] {student} {lab}: {what}")

"""The benchmark's CPU clock (bench.py --clock cpu): every child process's
CPU seconds, its own waited-for children included, added up for the
thread that waited for it, and made the clock the grader's stages are
timed with (use_cpu_clock)."""
from __future__ import annotations

import os
import resource
import subprocess
import threading

from .build import set_clock


_CPU = threading.local()


class _MeteredPopen(subprocess.Popen):
    """Popen that adds each child's CPU seconds (user + system, its own
    waited-for children included: make, nvcc, cc1 ...) to the waiting
    thread's total. The grader runs a submission's build, and a lab's run,
    in one thread each, so the difference of that total around a stage is
    the stage's CPU seconds, whatever else the machine is doing."""

    def _try_wait(self, wait_flags):   # wait()
        try:
            pid, sts, ru = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            return self.pid, 0
        if pid == self.pid:
            _CPU.s = getattr(_CPU, "s", 0.0) + ru.ru_utime + ru.ru_stime
        return pid, sts

    def poll(self):   # poll() reaps without _try_wait
        if self.returncode is None:
            pid, sts = self._try_wait(os.WNOHANG)
            if pid == self.pid:
                self._handle_exitstatus(sts)
        return self.returncode


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def cpu_clock() -> float:
    return getattr(_CPU, "s", 0.0)


def use_cpu_clock() -> None:
    """Stage seconds become the CPU seconds of the stage's processes."""
    subprocess.Popen = _MeteredPopen
    set_clock(cpu_clock)

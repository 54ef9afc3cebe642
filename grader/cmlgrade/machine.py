"""What this machine offers the run stage: the CUDA tools (find_tool: on
the PATH or in the CUDA toolkit), the GPUs to spread work over
(list_gpus), and whether a GPU is usable, asked of a trusted runner
(probe_gpu), with a reason that says what is missing where none is
(no_gpu_reason)."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from .process import run_process
from .sandbox import scrubbed_env

NO_GPU_RC = 77


def find_tool(name: str) -> str | None:
    hit = shutil.which(name)
    if hit:
        return hit
    for base in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if base:
            p = Path(base) / "bin" / name
            if p.is_file() and os.access(p, os.X_OK):
                return str(p)
            p = Path(base) / "compute-sanitizer" / name
            if p.is_file() and os.access(p, os.X_OK):
                return str(p)
    return None


def list_gpus(env: dict[str, str] | None = None) -> list[str]:
    """The GPUs to spread work over: CUDA_VISIBLE_DEVICES when set, else
    nvidia-smi -L. Empty when there is none."""
    env = os.environ if env is None else env
    vis = env.get("CUDA_VISIBLE_DEVICES")
    if vis is not None:
        return [v.strip() for v in vis.split(",") if v.strip() and v.strip() != "-1"]
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    r = run_process([smi, "-L"], timeout=30, env=scrubbed_env())
    if r.rc != 0:
        return []
    return [str(i) for i, ln in enumerate(l for l in r.stdout.splitlines() if l.startswith("GPU "))]


GPU_FAILED = "the GPU is not usable"


def probe_gpu(runner: Path, gpu: str | None) -> tuple[bool, str]:
    """Asks a (trusted, reference) runner whether a GPU is usable. The
    runner exits 77 where there is no GPU; any other failure means a GPU is
    there but failed its probe, and the reason then starts with GPU_FAILED."""
    if not runner.is_file():   # not built: it says nothing of a GPU
        return False, f"no CUDA device found: the probe ({runner.name}) was not built"
    env = scrubbed_env({"CUDA_VISIBLE_DEVICES": gpu} if gpu is not None else None)
    r = run_process([str(runner), "--probe"], timeout=60, env=env)
    if r.rc == 0:
        return True, ""
    why = (r.output.strip().splitlines() or [f"exit {r.rc}"])[-1]
    if r.rc in (126, 127):   # the runner did not start (prlimit's exit): it says nothing of a GPU
        return False, f"no CUDA device found: the probe ({runner.name}) did not run: {why}"
    if r.rc != 77:
        return False, why if why.startswith(GPU_FAILED) else f"{GPU_FAILED}: its probe ended with {why}"
    return False, no_gpu_reason(why if "CUDA" in why or "device" in why else f"no CUDA device: {why}")


def no_gpu_reason(why: str, dev: Path = Path("/dev"), smi: str | None = "") -> str:
    """CUDA says "driver version is insufficient" on a machine with no driver
    at all, which sends people to upgrade a driver they do not have: say
    what is missing instead. (smi "" looks nvidia-smi up on the PATH.)"""
    if "driver version is insufficient" not in why:
        return why
    smi = shutil.which("nvidia-smi") if smi == "" else smi
    if not any(dev.glob("nvidia*")) and not smi:
        return ("no NVIDIA GPU or driver on this machine (no /dev/nvidia*, no nvidia-smi): the GPU checks need "
                "a machine with an NVIDIA GPU and its driver")
    return why


def is_no_gpu(text: str) -> bool:
    return re.search(r"no CUDA device", text) is not None

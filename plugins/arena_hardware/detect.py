"""Recognising NVIDIA hardware: GB10 (DGX Spark) and the known discrete GPUs.

NVML (``nvidia-ml-py``) is asked first for the first GPU's name and memory; ``nvidia-smi`` is
the fallback where the bindings cannot load the library. Both answer names even on GB10, where
the memory query says "Not Supported" -- the sign of unified memory.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
from collections.abc import Callable, Mapping

from arena_core import HardwareDetection, HardwareProfile

QUERY = ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"]

#: Substrings of the GPU name as nvidia-smi prints it, most specific first.
NAME_TO_PROFILE = (
    ("GB10", "gb10"),
    ("H200", "h200"),
    ("H100", "h100-sxm"),
    ("B200", "b200"),
    ("RTX PRO 6000", "rtx-pro-6000"),
    ("RTX 5090", "rtx-5090"),
    ("RTX 4090", "rtx-4090"),
)


def run_nvidia_smi() -> str | None:
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        done = subprocess.run(QUERY, capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def query_nvml() -> str | None:
    """The first GPU as ``nvidia-smi``'s CSV line would give it (name, memory.total), or None."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        if pynvml.nvmlDeviceGetCount() == 0:
            return None
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        name = pynvml.nvmlDeviceGetName(handle)
        name = name.decode() if isinstance(name, bytes) else name
        try:
            memory = f"{pynvml.nvmlDeviceGetMemoryInfo(handle).total // 2**20} MiB"
        except pynvml.NVMLError as exc:
            memory = f"[{exc}]"  # GB10: "Not Supported"
        return f"{name}, {memory} (NVML)"
    except pynvml.NVMLError:
        return None
    finally:
        pynvml.nvmlShutdown()


def query_gpu() -> str | None:
    return query_nvml() or run_nvidia_smi()


def detect_nvidia(profiles: Mapping[str, HardwareProfile], query: Callable[[], str | None] = query_gpu, machine: str | None = None) -> HardwareDetection | None:
    """The profile of the first GPU nvidia-smi names, with the evidence; None if none matches."""
    output = query()
    if not output:
        return None
    first = output.strip().splitlines()[0]
    name, _, memory = (part.strip() for part in first.partition(","))
    for needle, profile_name in NAME_TO_PROFILE:
        if needle in name and profile_name in profiles:
            arch = machine or platform.machine()
            source = "NVML" if memory.endswith("(NVML)") else "nvidia-smi"
            memory = memory.removesuffix(" (NVML)")
            note = f"{source} names the GPU {name!r} (memory.total: {memory or 'n/a'}) on {arch}"
            if profile_name == "gb10" and ("Not Supported" in memory or "N/A" in memory):
                note += "; memory is unified, so it is read from /proc/meminfo"
            return HardwareDetection(profile=profiles[profile_name], reason=note)
    return None

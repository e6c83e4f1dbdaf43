"""Recognising NVIDIA hardware from ``nvidia-smi``: GB10 (DGX Spark) and the known discrete GPUs.

``nvidia-smi`` rather than NVML bindings: it is on every machine with the driver, needs no
Python package, and answers names even on GB10 where NVML's memory queries say "Not Supported".
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


def detect_nvidia(
    profiles: Mapping[str, HardwareProfile], query: Callable[[], str | None] = run_nvidia_smi, machine: str | None = None
) -> HardwareDetection | None:
    """The profile of the first GPU nvidia-smi names, with the evidence; None if none matches."""
    output = query()
    if not output:
        return None
    first = output.strip().splitlines()[0]
    name, _, memory = (part.strip() for part in first.partition(","))
    for needle, profile_name in NAME_TO_PROFILE:
        if needle in name and profile_name in profiles:
            arch = machine or platform.machine()
            note = f"nvidia-smi names the GPU {name!r} (memory.total: {memory or 'n/a'}) on {arch}"
            if profile_name == "gb10" and ("Not Supported" in memory or "N/A" in memory):
                note += "; memory is unified, so it is read from /proc/meminfo"
            return HardwareDetection(profile=profiles[profile_name], reason=note)
    return None

"""Reading the host's CPU model, core count and memory, on Linux and elsewhere."""

from __future__ import annotations

import os
import platform
from pathlib import Path

from attrs import frozen


@frozen(kw_only=True)
class HostFacts:
    cpu_model: str
    cores: int
    memory_gb: float | None
    source: str


def _meminfo_total_gb(meminfo: Path) -> float | None:
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024 / 1e9  # the value is in KiB
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cpuinfo_model(cpuinfo: Path) -> str | None:
    try:
        text = cpuinfo.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        # x86 says "model name"; many Arm kernels only say "CPU part" or nothing useful.
        if key.strip() in ("model name", "Hardware", "Model") and value.strip():
            return value.strip()
    return None


def read_host(proc: Path = Path("/proc")) -> HostFacts:
    """What this machine is; ``proc`` is a parameter so tests can hand in a fake ``/proc``."""
    memory = _meminfo_total_gb(proc / "meminfo")
    source = f"{proc}/cpuinfo, {proc}/meminfo"
    if memory is None:
        try:
            memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
            source = "os.sysconf"
        except (ValueError, OSError, AttributeError):
            source = f"{proc}/cpuinfo (memory size could not be read)"
    model = _cpuinfo_model(proc / "cpuinfo") or platform.processor() or platform.machine() or "unknown CPU"
    return HostFacts(cpu_model=model, cores=os.cpu_count() or 1, memory_gb=memory, source=source)

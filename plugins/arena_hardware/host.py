"""Reading the host's CPU model, core count and memory, on Linux and elsewhere."""

from __future__ import annotations

import os
import platform
import threading
import time
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


def measure_host_bandwidth(megabytes: int = 128, repeats: int = 3) -> float:
    """This machine's copy bandwidth in GB/s (bytes read plus written), one copy per core at once.

    The best of ``repeats`` rounds, so the figure errs high: a ceiling must not be too low.
    """
    import numpy as np

    threads = max(1, os.cpu_count() or 1)
    sources = [np.ones(megabytes * 2**20 // 8) for _ in range(threads)]
    targets = [np.empty_like(s) for s in sources]
    best = 0.0
    for _ in range(repeats):
        workers = [threading.Thread(target=np.copyto, args=(t, s)) for t, s in zip(targets, sources)]
        started = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        elapsed = time.perf_counter() - started
        best = max(best, 2 * sum(s.nbytes for s in sources) / elapsed / 1e9)
    return best


#: FP32 FLOPs one core can start per cycle: two FMA units of 16 lanes (AVX-512), of 8 (AVX2), else scalar-ish.
FLOPS_PER_CYCLE = (("avx512f", 64), ("avx2", 32))


def estimated_peak_tflops(proc: Path = Path("/proc")) -> float | None:
    """A nominal dense peak of this CPU: cores x clock x FLOPs a cycle by its widest vector unit
    (/proc/cpuinfo). An upper bound the step simulator's compute efficiency is fitted against."""
    try:
        text = (proc / "cpuinfo").read_text(errors="replace")
    except OSError:
        return None
    clocks = [float(v) for line in text.splitlines() if line.startswith("cpu MHz") and (v := line.partition(":")[2].strip()).replace(".", "", 1).isdigit()]
    flags = next((line.partition(":")[2].split() for line in text.splitlines() if line.startswith("flags")), [])
    if not clocks:
        return None
    per_cycle = next((n for flag, n in FLOPS_PER_CYCLE if flag in flags), 8)
    return (os.cpu_count() or 1) * max(clocks) * 1e6 * per_cycle / 1e12


def measured_bandwidth() -> tuple[dict[str, object], str]:
    """A CPU host publishes no bandwidth: measure it when a run starts, for the decode ceiling;
    its dense peak is estimated from /proc/cpuinfo, for the step simulator (``arena predict``)."""
    bandwidth = measure_host_bandwidth()
    found: dict[str, object] = {"memory_bandwidth_gbs": bandwidth}
    source = f"memory bandwidth {bandwidth:.1f} GB/s measured at run time (copy, all cores)"
    if (peak := estimated_peak_tflops()) is not None:
        found["dense_tflops"] = {"fp32": round(peak, 3), "bf16": round(peak, 3)}
        source += f"; dense peak {peak:.2f} TFLOPS estimated from /proc/cpuinfo (cores x clock x vector width)"
    return found, source

"""Hardware profiles and detection.

``cpu-host`` is read off the machine it runs on and is the detection fallback (``trylast``), so
any plugin that recognises its hardware wins. ``gb10`` carries the DGX Spark's published figures
(``shared/reference/hardware.md``); detecting it and probing its memory arrive with telemetry.
"""

from __future__ import annotations

from collections.abc import Callable

from arena_core import HardwareDetection, HardwareProfile, hookimpl
from arena_hardware.host import read_host

GB10 = HardwareProfile(
    name="gb10",
    title="NVIDIA DGX Spark (GB10)",
    description="NVIDIA DGX Spark: GB10 Grace Blackwell, 128 GB unified LPDDR5X at 273 GB/s.",
    memory_gb=128,
    unified_memory=True,
    memory_bandwidth_gbs=273,
    dense_tflops={"bf16": 125, "fp8": 250, "fp4": 500},
    power_w=140,
    sources=(
        "memory bandwidth 273 GB/s, 128 GB unified: NVIDIA DGX Spark product page and Hot Chips 2025",
        "dense TFLOPS derived from NVIDIA's 1 PFLOP FP4 with sparsity (halved per precision step)",
        "GB10 TDP 140 W: Hot Chips 2025 GB10 presentation",
    ),
)


def cpu_host_profile() -> HardwareProfile:
    """The generic profile, filled in from this machine: CPU model, cores, memory."""
    host = read_host()
    memory = f"{host.memory_gb:.1f} GB" if host.memory_gb else "unknown memory"
    return HardwareProfile(
        name="cpu-host",
        title=f"CPU host: {host.cpu_model}",
        description=f"This machine's CPU ({host.cpu_model}, {host.cores} cores, {memory}).",
        memory_gb=host.memory_gb,
        unified_memory=True,  # a CPU serves from main memory: there is no separate device memory
        sources=(f"read from this machine ({host.source})",),
    )


@hookimpl
def arena_register_hardware(register: Callable[[HardwareProfile], None]) -> None:
    register(cpu_host_profile())
    register(GB10)


@hookimpl(trylast=True)
def arena_detect_hardware() -> HardwareDetection:
    profile = cpu_host_profile()
    return HardwareDetection(
        profile=profile,
        reason="no plugin recognised an accelerator on this machine; using the generic CPU host profile",
    )

"""An Arena plugin that adds the AMD Strix Halo hardware profile.

Figures from the vendor launch material and community measurements (see ``sources``).
"""

from __future__ import annotations

from collections.abc import Callable

from arena_core import HardwareProfile, hookimpl

STRIX_HALO = HardwareProfile(
    name="strix-halo",
    title="AMD Strix Halo (Ryzen AI Max+ 395, Radeon 8060S)",
    description="AMD Ryzen AI Max+ 395: up to 128 GB unified LPDDR5X-8000 at 256 GB/s, Radeon 8060S (40 CU).",
    memory_gb=128,
    unified_memory=True,
    memory_bandwidth_gbs=256,
    dense_tflops={"bf16": 59.4},
    power_w=120,
    sources=(
        "256 GB/s LPDDR5X-8000 on a 256-bit bus, cTDP 45-120 W: AMD launch material (ComputerBase, TechPowerUp)",
        "59.4 TFLOPS BF16 peak via WMMA (40 CU x 2.9 GHz x 512): llm-tracker.info Strix Halo notes",
    ),
)


@hookimpl
def arena_register_hardware(register: Callable[[HardwareProfile], None]) -> None:
    register(STRIX_HALO)

"""Published hardware figures (shared/reference/hardware.md, section 1), each with its sources.

Dense tensor TFLOPS only (serving does not use 2:4 sparsity); "derived" figures are computed
from vendor numbers as hardware.md explains, and say so in their sources.
"""

from __future__ import annotations

from arena_core import HardwareProfile

UNIFIED = ("meminfo", "rapl")
NVIDIA = ("nvml", "rapl")


def _profile(name: str, title: str, description: str, **figures: object) -> HardwareProfile:
    return HardwareProfile(name=name, title=title, description=description, **figures)  # type: ignore[arg-type]


PUBLISHED: tuple[HardwareProfile, ...] = (
    _profile(
        "gb10",
        "NVIDIA DGX Spark (GB10)",
        "NVIDIA DGX Spark: GB10 Grace Blackwell, 128 GB unified LPDDR5X at 273 GB/s.",
        memory_gb=128,
        unified_memory=True,
        memory_bandwidth_gbs=273,
        dense_tflops={"bf16": 125, "fp8": 250, "fp4": 500},
        power_w=140,
        probes=UNIFIED + ("nvml-power",),
        sources=(
            "273 GB/s LPDDR5X 256-bit, 128 GB unified: NVIDIA DGX Spark product page; Hot Chips 2025",
            "dense TFLOPS derived from NVIDIA's 1 PFLOP FP4 with sparsity (halved per precision step)",
            "GB10 TDP 140 W: Hot Chips 2025 GB10 presentation",
            "NVML reports memory 'Not Supported' on GB10: NVIDIA DGX Spark known issues",
        ),
    ),
    _profile(
        "h100-sxm",
        "NVIDIA H100 SXM",
        "NVIDIA H100 SXM: 80 GB HBM3 at 3.35 TB/s.",
        memory_gb=80,
        unified_memory=False,
        memory_bandwidth_gbs=3350,
        dense_tflops={"bf16": 989, "fp8": 1979},
        power_w=700,
        probes=NVIDIA,
        sources=("NVIDIA H100 datasheet",),
    ),
    _profile(
        "h200",
        "NVIDIA H200 SXM",
        "NVIDIA H200 SXM: 141 GB HBM3e at 4.8 TB/s.",
        memory_gb=141,
        unified_memory=False,
        memory_bandwidth_gbs=4800,
        dense_tflops={"bf16": 989, "fp8": 1979},
        power_w=700,
        probes=NVIDIA,
        sources=("NVIDIA H200 datasheet",),
    ),
    _profile(
        "b200",
        "NVIDIA B200 (HGX)",
        "NVIDIA B200: 192 GB HBM3e (about 180 GB usable) at 8 TB/s.",
        memory_gb=180,
        unified_memory=False,
        memory_bandwidth_gbs=8000,
        dense_tflops={"bf16": 2250, "fp8": 4500, "fp4": 9000},
        power_w=1000,
        probes=NVIDIA,
        sources=("NVIDIA HGX B200 datasheet (1,000 W configuration)",),
    ),
    _profile(
        "rtx-4090",
        "NVIDIA GeForce RTX 4090",
        "RTX 4090: 24 GB GDDR6X at 1,008 GB/s.",
        memory_gb=24,
        unified_memory=False,
        memory_bandwidth_gbs=1008,
        dense_tflops={"bf16": 165, "fp8": 330},
        power_w=450,
        probes=NVIDIA,
        sources=("NVIDIA Ada whitepaper (FP32-accumulate rates, which inference kernels use)",),
    ),
    _profile(
        "rtx-5090",
        "NVIDIA GeForce RTX 5090",
        "RTX 5090: 32 GB GDDR7 at 1,792 GB/s.",
        memory_gb=32,
        unified_memory=False,
        memory_bandwidth_gbs=1792,
        dense_tflops={"bf16": 209.5, "fp8": 838, "fp4": 1676},
        power_w=575,
        probes=NVIDIA,
        sources=("NVIDIA Blackwell GeForce whitepaper",),
    ),
    _profile(
        "rtx-pro-6000",
        "NVIDIA RTX PRO 6000 Blackwell",
        "RTX PRO 6000 Blackwell Workstation: 96 GB GDDR7 ECC at 1,792 GB/s.",
        memory_gb=96,
        unified_memory=False,
        memory_bandwidth_gbs=1792,
        dense_tflops={"bf16": 500, "fp8": 1000, "fp4": 2000},
        power_w=600,
        probes=NVIDIA,
        sources=("NVIDIA RTX PRO 6000 datasheet; BF16/FP8 derived from FP4 (4,000 AI TOPS sparse / 2)",),
    ),
    _profile(
        "mi300x",
        "AMD Instinct MI300X",
        "AMD MI300X: 192 GB HBM3 at 5.3 TB/s.",
        memory_gb=192,
        unified_memory=False,
        memory_bandwidth_gbs=5300,
        dense_tflops={"bf16": 1307.4, "fp8": 2614.9},
        power_w=750,
        sources=("AMD Instinct MI300X datasheet",),
    ),
    _profile(
        "m3-ultra",
        "Apple M3 Ultra",
        "Apple M3 Ultra: up to 512 GB unified memory at 819 GB/s.",
        memory_gb=512,
        unified_memory=True,
        memory_bandwidth_gbs=819,
        dense_tflops={"bf16": 28.6},
        probes=UNIFIED,
        sources=("Apple Mac Studio specifications; TFLOPS derived from GPU core count x clock",),
    ),
    _profile(
        "m4-max",
        "Apple M4 Max (40-core GPU)",
        "Apple M4 Max: up to 128 GB unified memory at 546 GB/s.",
        memory_gb=128,
        unified_memory=True,
        memory_bandwidth_gbs=546,
        dense_tflops={"bf16": 17.0},
        probes=UNIFIED,
        sources=("Apple MacBook Pro specifications; TFLOPS derived from GPU core count x clock",),
    ),
)

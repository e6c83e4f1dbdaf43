"""The in-tree plugins register exactly what the specifications say."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena_core import ArenaHooks, make_plugin_manager
from arena_core.config import ArenaConfig
from arena_hardware.host import read_host

# (pp, tg, depth, turns) from shared/spec/workloads.md; all: concurrency 10, 3 runs, generation latency, seed 42.
CLOSED = {
    "chat": (1024, 1024, 0, 1),
    "rag-8k": (8192, 512, 0, 1),
    "long-output": (256, 4096, 0, 1),
    "long-context-25k": (25000, 256, 0, 1),
    "multi-turn": (2048, 512, 0, 5),
}
# (dataset, in, out, range ratio, rate, burstiness, prompts, max concurrency)
OPEN = {
    "office-baseline": ("random", 4000, 500, 0.9, 0.30, 0.7, 200, None),
    "sharegpt": ("sharegpt", None, None, 0.0, 0.30, 0.7, 250, None),
    "monday-peak": ("random", 4000, 500, 0.9, 1.50, 1.0, 300, 25),
    "reasoning": ("random", 1024, 4096, 0.9, 0.20, 1.0, 50, None),  # what the seed site ran (workloads.md)
}


def test_the_nine_workloads_in_card_order(registry):
    standard = [name for name, registration in registry.workloads.items() if not registration.item.optional]
    assert standard == [*CLOSED, *OPEN]


@pytest.mark.parametrize("name", CLOSED)
def test_closed_loop_workload_parameters(registry, name):
    workload = registry.workloads[name].item
    shape = workload.shape
    assert (shape.prompt_tokens, shape.generated_tokens, shape.depth, shape.turns) == CLOSED[name]
    assert (shape.concurrency, shape.runs, shape.latency_mode, workload.seed) == (10, 3, "generation", 42)
    assert (workload.runner, workload.loop) == ("llama-benchy", "closed")


@pytest.mark.parametrize("name", OPEN)
def test_open_loop_workload_parameters(registry, name):
    workload = registry.workloads[name].item
    shape = workload.shape
    actual = (
        shape.dataset,
        shape.input_tokens,
        shape.output_tokens,
        shape.range_ratio,
        shape.request_rate,
        shape.burstiness,
        shape.num_prompts,
        shape.max_concurrency,
    )
    assert actual == OPEN[name]
    assert (workload.runner, workload.loop, workload.seed) == ("vllm-bench", "open", 42)


def test_quality_scores_of_the_seed_models(registry):
    def scores(name):
        return {q.benchmark: q.value for q in registry.models[name].item.quality}

    assert scores("qwen3.6-35b-a3b") == {"MMLU-Pro": 85.2, "GPQA-Diamond": 86.0, "HumanEval": 80.4}
    # The seed card prints 0.0 for HumanEval, but its average excludes it: not published.
    assert scores("qwen3.5-0.8b") == {"MMLU-Pro": 29.7, "GPQA-Diamond": 11.9, "HumanEval": None}
    assert all(q.source.startswith("https://") for m in registry.models.values() for q in m.item.quality)


def test_cpu_host_is_read_from_proc(tmp_path: Path):
    (tmp_path / "cpuinfo").write_text("processor\t: 0\nmodel name\t: Example CPU 9000\n")
    (tmp_path / "meminfo").write_text("MemTotal:       16384000 kB\nMemFree: 1 kB\n")
    host = read_host(tmp_path)
    assert host.cpu_model == "Example CPU 9000"
    assert host.memory_gb == pytest.approx(16384000 * 1024 / 1e9)
    assert host.cores >= 1


def test_cpu_host_dense_peak_is_estimated_from_cpuinfo(tmp_path: Path, monkeypatch):
    """cores x the fastest clock x FLOPs a cycle of the widest vector unit: AVX2 (two 8-lane FMA
    units, 32 FP32 FLOPs a cycle) at 2,500 MHz on 4 cores is 0.32 TFLOPS; AVX-512 doubles it."""
    from arena_hardware.host import estimated_peak_tflops

    monkeypatch.setattr("os.cpu_count", lambda: 4)
    (tmp_path / "cpuinfo").write_text("processor\t: 0\ncpu MHz\t\t: 2500.000\nflags\t\t: fpu sse2 avx avx2 fma\n")
    assert estimated_peak_tflops(tmp_path) == pytest.approx(4 * 2.5e9 * 32 / 1e12)
    (tmp_path / "cpuinfo").write_text("cpu MHz\t\t: 2500.000\nflags\t\t: avx2 avx512f\n")
    assert estimated_peak_tflops(tmp_path) == pytest.approx(4 * 2.5e9 * 64 / 1e12)
    (tmp_path / "cpuinfo").write_text("model name\t: no clock here\n")
    assert estimated_peak_tflops(tmp_path) is None
    assert estimated_peak_tflops(tmp_path / "missing") is None


def test_cpu_host_without_readable_proc_still_answers(tmp_path: Path):
    host = read_host(tmp_path / "missing")
    assert host.cpu_model and host.cores >= 1


def test_cpu_host_profile_is_registered_and_detected(registry):
    profile = registry.hardware["cpu-host"].item
    assert profile.unified_memory and profile.memory_gb and profile.memory_gb > 0
    detection = ArenaHooks(make_plugin_manager(autoload=False)).detect_hardware(ArenaConfig())
    assert detection is not None and detection.profile.name == "cpu-host" and "generic" in detection.reason


# Recorded `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader` answers.
NVIDIA_SMI = {
    "gb10": "NVIDIA GB10, [N/A]\n",  # DGX Spark: NVML memory queries are "Not Supported"
    "h100-sxm": "NVIDIA H100 80GB HBM3, 81559 MiB\n",
    "h200": "NVIDIA H200, 143771 MiB\n",
    "rtx-4090": "NVIDIA GeForce RTX 4090, 24564 MiB\n",
    "rtx-pro-6000": "NVIDIA RTX PRO 6000 Blackwell Workstation Edition, 97887 MiB\n",
}


@pytest.mark.parametrize("expected", NVIDIA_SMI)
def test_nvidia_detection_from_recorded_nvidia_smi(registry, expected):
    from arena_hardware.detect import detect_nvidia

    profiles = {name: reg.item for name, reg in registry.hardware.items()}
    found = detect_nvidia(profiles, query=lambda: NVIDIA_SMI[expected], machine="aarch64" if expected == "gb10" else "x86_64")
    assert found is not None and found.profile.name == expected
    assert "nvidia-smi names the GPU" in found.reason
    if expected == "gb10":
        assert "read from /proc/meminfo" in found.reason and found.profile.unified_memory and "meminfo" in found.profile.probes


@pytest.mark.parametrize(("name", "memory_supported", "expected"), [("NVIDIA GB10", False, "gb10"), ("NVIDIA H200", True, "h200")])
def test_nvidia_detection_through_nvml(registry, monkeypatch, name, memory_supported, expected):
    import types

    from arena_hardware.detect import detect_nvidia, query_nvml

    class NVMLError(Exception):
        def __str__(self):
            return "Not Supported"

    def memory(handle):
        if not memory_supported:
            raise NVMLError()
        return types.SimpleNamespace(total=143771 * 2**20)

    fake = types.SimpleNamespace(
        NVMLError=NVMLError,
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: name.encode(),
        nvmlDeviceGetMemoryInfo=memory,
    )
    monkeypatch.setitem(__import__("sys").modules, "pynvml", fake)
    profiles = {n: reg.item for n, reg in registry.hardware.items()}
    found = detect_nvidia(profiles, query=query_nvml, machine="aarch64")
    assert found is not None and found.profile.name == expected and "NVML names the GPU" in found.reason
    assert ("unified" in found.reason) == (expected == "gb10")


def test_no_nvidia_smi_or_an_unknown_gpu_leaves_detection_to_others(registry):
    from arena_hardware.detect import detect_nvidia

    profiles = {name: reg.item for name, reg in registry.hardware.items()}
    assert detect_nvidia(profiles, query=lambda: None) is None
    assert detect_nvidia(profiles, query=lambda: "Tesla T4, 15360 MiB\n") is None


def test_hardware_detect_on_this_machine_says_cpu_host_with_real_values():
    from arena_core.testing import run_cli

    result = run_cli(make_plugin_manager(autoload=False), ["hardware", "detect"])
    assert result.exit_code == 0
    assert "cpu-host" in result.stdout and "GB" in result.stdout and "meminfo" in result.stdout


def test_every_published_profile_has_its_key_figures_and_sources(registry):
    for name, registration in registry.hardware.items():
        profile = registration.item
        assert profile.memory_gb and profile.sources, name
        if name != "cpu-host":
            assert profile.memory_bandwidth_gbs and profile.dense_tflops.get("bf16"), name


def test_catalog_architecture_gives_the_kv_cache_of_hardware_md(registry):
    # hardware.md 3.2: BF16 KV per token 12 KiB for Qwen3.5-0.8B, 20 KiB for Qwen3.6-35B-A3B
    small = registry.models["qwen3.5-0.8b"].item.architecture
    moe = registry.models["qwen3.6-35b-a3b"].item.architecture
    assert small.kv_bytes_per_token() == 12288 and moe.kv_bytes_per_token() == 20480
    assert moe.kv_bytes_per_token(bytes_per_element=1) == 10240  # FP8 KV
    assert (moe.experts, moe.experts_per_token, moe.linear_attention_layers) == (256, 8, 30)

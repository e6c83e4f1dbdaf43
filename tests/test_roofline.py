"""The physical decode ceiling and bandwidth efficiency."""

from __future__ import annotations

import pytest

from arena_core import ArenaHooks, Verdict, WorkloadResult, make_plugin_manager
from arena_core.roofline import apply_ceiling, decode_ceiling, measure_host_bandwidth, weight_bytes_per_token


@pytest.fixture(scope="module")
def registry():
    return ArenaHooks(make_plugin_manager(autoload=False, strict=True)).registry


def result(**metrics) -> WorkloadResult:
    return WorkloadResult(
        workload="chat", runner="llama-benchy", engine="native", scale=1.0, requests=10, failed=0,
        tokens_per_second=metrics.get("decode_tps_per_user"), ttft_p50_s=0.5, metrics=metrics, verdict=Verdict(valid=True),
    )


def test_ceiling_of_the_seed_models_on_gb10(registry):
    gb10 = registry.get("hardware", "gb10")
    # Qwen3.6-35B-A3B FP8: about 3 B active parameters at one byte -> 273 GB/s / 3 GB = 91 tok/s
    assert decode_ceiling(registry.get("models", "qwen3.6-35b-a3b"), gb10) == pytest.approx(273 / 3.0)
    # Qwen3.5-0.8B BF16: 0.8 B at two bytes -> 273 / 1.6 = 170.6 tok/s
    assert decode_ceiling(registry.get("models", "qwen3.5-0.8b"), gb10) == pytest.approx(273 / 1.6)
    assert weight_bytes_per_token(registry.get("models", "gemma-3-270m")) == pytest.approx(0.27e9 * 0.6)


def test_the_published_figures_are_below_the_ceiling(registry):
    # The seed cards' per-user decode at c=10 (14.9 and 102 tok/s) must pass the check.
    gb10 = registry.get("hardware", "gb10")
    for model, measured in (("qwen3.6-35b-a3b", 14.9), ("qwen3.5-0.8b", 102.0)):
        checked = apply_ceiling(result(decode_tps_per_user=measured), registry.get("models", model), gb10)
        assert checked.verdict.valid and 0 < checked.metrics["bandwidth_efficiency"] < 1


def test_decoding_faster_than_physics_allows_invalidates(registry):
    checked = apply_ceiling(result(decode_tps_per_user=500.0), registry.get("models", "qwen3.5-0.8b"), registry.get("hardware", "gb10"))
    assert not checked.verdict.valid and "exceeds the physical ceiling 170.6 tok/s" in checked.verdict.reasons[0]


def test_open_loop_results_use_the_median_tpot(registry):
    checked = apply_ceiling(result(tpot_median_s=0.02), registry.get("models", "qwen3.5-0.8b"), registry.get("hardware", "gb10"))
    assert checked.metrics["bandwidth_efficiency"] == pytest.approx(50 / (273 / 1.6))


def test_missing_figures_leave_the_result_alone(registry):
    plain = result(decode_tps_per_user=10.0)
    assert apply_ceiling(plain, registry.get("models", "qwen3.5-0.8b"), registry.get("hardware", "cpu-host")) is plain


def test_host_bandwidth_is_measured():
    assert 0.5 < measure_host_bandwidth(megabytes=16, repeats=2) < 10_000

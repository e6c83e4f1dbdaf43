"""The physical decode ceiling and bandwidth efficiency."""

from __future__ import annotations

import pytest

from arena_core import Verdict, WorkloadResult
from arena_core.run.roofline import apply_ceiling, decode_ceiling, weight_bytes_per_token
from arena_hardware.host import measure_host_bandwidth


def result(**metrics) -> WorkloadResult:
    return WorkloadResult(
        workload="chat",
        runner="llama-benchy",
        instrument="native",
        scale=1.0,
        requests=10,
        failed=0,
        tokens_per_second=metrics.get("decode_tps_per_user"),
        ttft_p50_s=0.5,
        metrics=metrics,
        verdict=Verdict(valid=True),
    )


def test_ceiling_of_the_seed_models_on_gb10(registry):
    gb10 = registry.get("hardware", "gb10")
    # one user, empty context: the weights plus the Gated DeltaNet state read and written
    # Qwen3.6-35B-A3B FP8: about 3 B active parameters at one byte + 2 x 64.4 MB -> 87.3 tok/s
    assert decode_ceiling(registry.get("models", "qwen3.6-35b-a3b"), gb10) == pytest.approx(273e9 / (3.0e9 + 2 * 64.389e6), rel=1e-4)
    # Qwen3.5-0.8B BF16: 0.8 B at two bytes + 2 x 19.5 MB -> 166.6 tok/s
    assert decode_ceiling(registry.get("models", "qwen3.5-0.8b"), gb10) == pytest.approx(273e9 / (1.6e9 + 2 * 19.538e6), rel=1e-4)
    assert weight_bytes_per_token(registry.get("models", "gemma-3-270m")) == pytest.approx(0.27e9 * 0.6)


def test_the_published_figures_are_below_the_ceiling(registry):
    # The seed cards' per-user decode at c=10 (14.9 and 102 tok/s) must pass the check.
    gb10 = registry.get("hardware", "gb10")
    for model, measured in (("qwen3.6-35b-a3b", 14.9), ("qwen3.5-0.8b", 102.0)):
        checked = apply_ceiling(result(decode_tps_per_user=measured), registry.get("models", model), gb10)
        assert checked.verdict.valid and 0 < checked.metrics["bandwidth_efficiency"] < 1


def test_decoding_faster_than_physics_allows_invalidates(registry):
    checked = apply_ceiling(result(decode_tps_per_user=500.0), registry.get("models", "qwen3.5-0.8b"), registry.get("hardware", "gb10"))
    assert not checked.verdict.valid and "exceeds the physical ceiling 166.6 tok/s" in checked.verdict.reasons[0]


def test_open_loop_results_use_the_median_tpot(registry):
    checked = apply_ceiling(result(tpot_median_s=0.02), registry.get("models", "qwen3.5-0.8b"), registry.get("hardware", "gb10"))
    assert checked.metrics["bandwidth_efficiency"] == pytest.approx(
        50 / decode_ceiling(registry.get("models", "qwen3.5-0.8b"), registry.get("hardware", "gb10"))
    )


def test_missing_figures_leave_the_result_alone(registry):
    plain = result(decode_tps_per_user=10.0)
    assert apply_ceiling(plain, registry.get("models", "qwen3.5-0.8b"), registry.get("hardware", "cpu-host")) is plain


def test_host_bandwidth_is_measured():
    assert 0.5 < measure_host_bandwidth(megabytes=16, repeats=2) < 10_000


@pytest.mark.parametrize(
    ("model", "kv_per_token", "recurrent_mb", "conv_mb"),
    [("qwen3.5-0.8b", 12288, 18.9, 0.66), ("qwen3.6-35b-a3b", 20480, 62.9, 1.47), ("qwen3.6-27b", 65536, 151.0, 2.9)],
)
def test_cache_and_state_sizes_match_hardware_md(registry, model, kv_per_token, recurrent_mb, conv_mb):
    architecture = registry.get("models", model).architecture
    assert architecture.kv_bytes_per_token() == kv_per_token
    assert architecture.kv_bytes(1000) == 1000 * kv_per_token
    conv = architecture.linear_state_bytes() - architecture.linear_state_bytes(conv_bytes=0)
    assert architecture.linear_state_bytes(conv_bytes=0) / 1e6 == pytest.approx(recurrent_mb, rel=0.01)
    assert conv / 1e6 == pytest.approx(conv_mb, rel=0.02)


def test_sliding_window_layers_stop_growing_at_the_window(registry):
    gemma = registry.get("models", "gemma-3-270m").architecture
    per_layer_token = 2 * 1 * 256 * 2
    assert gemma.kv_bytes(100) == per_layer_token * 18 * 100  # inside the window every layer grows
    assert gemma.kv_bytes(10_000) == per_layer_token * (3 * 10_000 + 15 * 512)


def test_kv_cache_and_state_lower_the_ceiling_with_batch_and_context(registry):
    gb10, model = registry.get("hardware", "gb10"), registry.get("models", "qwen3.6-35b-a3b")
    long_context = registry.get("workloads", "long-context-25k")
    shape = long_context.shape
    per_sequence = model.architecture.kv_bytes(shape.depth + shape.prompt_tokens) + 2 * model.architecture.linear_state_bytes()
    expected = 273e9 / (3.0e9 + shape.concurrency * per_sequence)
    assert decode_ceiling(model, gb10, long_context) == pytest.approx(expected)
    assert decode_ceiling(model, gb10, long_context) < decode_ceiling(model, gb10) / 2  # 25k x 10 users: KV dominates
    # the seed card's 25k figure (43.0 tok/s total at c=10) is still possible
    checked = apply_ceiling(result(decode_tps_per_user=4.3), model, gb10, long_context)
    assert checked.verdict.valid and checked.metrics["decode_ceiling_tps"] == pytest.approx(expected)

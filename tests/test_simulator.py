"""The step simulator's physics against hand-computed cases (prediction.md section 2): the expert
union of a batch, KV bytes, the MoE split, and a queue that is exactly M/D/1."""

from __future__ import annotations

import subprocess
import sys

import attrs
import pytest

from arena_core import ArenaHooks, make_plugin_manager
from arena_core.loadgen.arrivals import arrival_offsets
from arena_core.prediction import predict
from arena_core.simulator import Efficiency, Machine, ModelPhysics, Request, bytes_per_param, expected_experts, physics, simulate


@pytest.fixture(scope="module")
def registry():
    return ArenaHooks(make_plugin_manager(autoload=False, strict=True)).registry


def test_the_experts_a_batch_touches_are_the_union_of_its_tokens_routes():
    # hardware.md 4.1: E = 256, k = 8 -> 8 at B = 1, 30.5 at B = 4, 69.6 at B = 10, 102 at B = 16
    assert expected_experts(256, 8, 1) == pytest.approx(8.0)
    assert [round(expected_experts(256, 8, b), 1) for b in (4, 10, 16)] == [30.5, 69.6, 102.0]
    assert expected_experts(256, 8, 10_000) == pytest.approx(256.0)  # every expert, never more
    assert expected_experts(0, 0, 10) == 0.0


def test_kv_bytes_and_the_moe_split_of_the_35b(registry):
    model = registry.get("models", "qwen3.6-35b-a3b")
    found = physics(model)
    assert found.kv_bytes_per_token == 2 * 10 * 2 * 256 * 2  # K and V x 10 full layers x 2 heads x 256 x BF16 KV = 20 KiB
    per_param = bytes_per_param(model.precision)
    # one token reads the active parameters; ten read the shared part and the union of their experts
    assert found.weight_bytes(1) == pytest.approx(model.params_active_b * 1e9 * per_param + found.lm_head_bytes - found.lm_head_params * per_param, rel=1e-9)
    ten = found.weight_bytes(10) - found.weight_bytes(1)
    assert ten == pytest.approx(found.expert_bytes * (expected_experts(256, 8, 10) - 8), rel=1e-9)
    assert found.experts == 256 and found.top_k == 8


def test_a_queue_of_one_slot_with_a_fixed_service_time_waits_as_m_d_1():
    """Poisson arrivals at λ, one slot, every request one step of D seconds: the mean wait is
    λD² / (2(1 − ρ)) (Pollaczek-Khinchine with no variance of service), here ρ = 0.8."""
    nothing = ModelPhysics(
        shared_bytes=0,
        expert_bytes=0,
        experts=0,
        top_k=0,
        lm_head_bytes=0,
        lm_head_params=0,
        flops_per_token=0,
        kv_bytes_per_token=0,
        state_bytes=0,
        attention_flops_per_context_token=0,
    )
    service, rate, count = 0.01, 80.0, 40_000
    requests = [Request(arrival_s=at, prompt=1, output=1) for at in arrival_offsets(count, rate, 1.0, seed=7)]
    done = simulate(requests, nothing, Machine(bandwidth=1.0, peak_flops=1.0), Efficiency(overhead_s=service), slots=1, token_budget=1)
    waits = [s.admitted_s - s.request.arrival_s for s in done.served]
    rho = rate * service
    assert sum(waits) / len(waits) == pytest.approx(rate * service**2 / (2 * (1 - rho)), rel=0.08)
    assert all(s.end_s - s.admitted_s == pytest.approx(service) for s in done.served)  # served in one step each


def test_a_closed_loop_round_re_times_exactly(registry):
    """A closed-loop round's steps do not depend on their timing: re-timing it at another
    efficiency gives what simulating it there gives."""
    from arena_core.prediction import closed_figures, closed_rounds

    model, hardware, workload = registry.get("models", "qwen3.6-35b-a3b"), registry.get("hardware", "gb10"), registry.get("workloads", "chat")
    machine = Machine.of(hardware, model.precision)
    other = Efficiency(bandwidth=0.5, compute=0.2, overhead_s=0.006)
    there = closed_figures(closed_rounds(workload, model, machine, other, "vllm"))
    retimed = closed_figures(closed_rounds(workload, model, machine, Efficiency(), "vllm"), machine, other)
    assert retimed.per_user_tps == pytest.approx(there.per_user_tps, rel=1e-9) and retimed.ttft_p50_s == pytest.approx(there.ttft_p50_s, rel=1e-9)


def test_a_prediction_has_an_interval_and_says_what_bounds_it(registry):
    found = predict(registry.get("workloads", "chat"), registry.get("models", "qwen3.6-35b-a3b"), registry.get("hardware", "gb10"))
    assert found.low.per_user_tps < found.central.per_user_tps < found.high.per_user_tps
    assert found.high.ttft_p50_s < found.central.ttft_p50_s < found.low.ttft_p50_s
    assert found.central.bound == "bandwidth"  # decode at c=10 is memory-bound on GB10 (hardware.md 4.1)
    # the bandwidth ceiling holds: no user decodes faster than the weights can be read
    assert found.high.per_user_tps < 273e9 / (3e9 * bytes_per_param("fp8"))


def test_arena_predict_prints_every_workload_for_a_model_never_measured(tmp_path):
    done = subprocess.run([sys.executable, "-m", "arena_core", "predict", "qwen3.6-27b", "--hardware", "h100-sxm"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    for name in ("chat", "rag-8k", "long-output", "long-context-25k", "multi-turn", "office-baseline", "sharegpt", "monday-peak", "reasoning"):
        assert name in done.stdout
    assert "tier 0" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "arena_core", "predict", "qwen3.6-27b", "--hardware", "cpu-host-x"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "cpu-host-x" in bad.stderr and "Traceback" not in bad.stderr


def test_an_unknown_precision_is_said_not_guessed(registry):
    model = attrs.evolve(registry.get("models", "qwen3.5-0.8b"), precision="iq1_s")
    with pytest.raises(ValueError, match="iq1_s"):
        physics(model)


def test_leave_one_model_out_over_the_seed_cohort():
    """scripts/prediction_error.py over the seed's 17 models: every closed-loop figure predicted,
    and calibrating on the other models (tier 1) narrows the error of tokens/s and TTFT."""
    from pathlib import Path

    cohort = Path(__file__).resolve().parent / "fixtures" / "seed-cohort.json"  # the seed's published cohort, CC-BY-4.0
    script = Path(__file__).resolve().parent.parent / "scripts" / "prediction_error.py"
    done = subprocess.run([sys.executable, str(script), str(cohort), "--json"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    import json

    found = json.loads(done.stdout)
    rows = found["rows"]
    assert {r["model"] for r in rows} and len({r["model"] for r in rows}) == 17
    for tier in ("tier0", "tier1"):
        assert sum(1 for r in rows if r["tier"] == tier and r["metric"] == "tps") == 85  # 17 models x 5 closed-loop workloads
    medians = {(t, m): sorted(r["error_pct"] for r in rows if r["tier"] == t and r["metric"] == m) for t in ("tier0", "tier1") for m in ("tps", "ttft")}
    middle = {key: values[len(values) // 2] for key, values in medians.items()}
    assert middle["tier1", "tps"] < middle["tier0", "tps"] and middle["tier1", "ttft"] < middle["tier0", "ttft"]

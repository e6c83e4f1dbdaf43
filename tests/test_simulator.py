"""The step simulator's physics against hand-computed cases (prediction.md section 2): the expert
union of a batch, KV bytes, the MoE split, and a queue that is exactly M/D/1."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import attrs
import pytest
from compare import flat

from arena_backends import LLAMA_CPP_SCHEDULING, VLLM_SCHEDULING
from arena_core import ArenaHooks, make_plugin_manager
from arena_core.loadgen.arrivals import arrival_offsets
from arena_core.loadgen.stats import nearest_rank
from arena_core.run.roofline import bytes_per_param
from arena_core.testing import arena
from arena_prediction.simulator import Efficiency, Machine, ModelPhysics, Request, expected_experts, physics, simulate
from arena_prediction.workloads import predict, serving_machine


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


def _weightless() -> ModelPhysics:
    """A model with nothing to read or compute: every step costs the per-step overhead alone."""
    return ModelPhysics(
        shared_bytes=0,
        expert_bytes=0,
        experts=0,
        top_k=0,
        lm_head_bytes=0,
        lm_head_params=0,
        flops_per_token=0,
        lm_head_flops=0,
        kv_bytes_per_token=0,
        state_bytes=0,
        attention_flops_per_context_token=0,
    )


def test_a_queue_of_one_slot_with_a_fixed_service_time_waits_as_m_d_1():
    """Poisson arrivals at λ, one slot, every request one step of D seconds: the mean wait is
    λD² / (2(1 − ρ)) (Pollaczek-Khinchine with no variance of service), here ρ = 0.8."""
    nothing = _weightless()
    service, rate, count = 0.01, 80.0, 40_000
    requests = [Request(arrival_s=at, prompt=1, output=1) for at in arrival_offsets(count, rate, 1.0, seed=7)]
    done = simulate(requests, nothing, Machine(bandwidth=1.0, peak_flops=1.0), Efficiency(overhead_s=service), slots=1, token_budget=1)
    waits = [s.admitted_s - s.request.arrival_s for s in done.served]
    rho = rate * service
    assert sum(waits) / len(waits) == pytest.approx(rate * service**2 / (2 * (1 - rho)), rel=0.08)
    assert all(s.end_s - s.admitted_s == pytest.approx(service) for s in done.served)  # served in one step each


def test_a_client_limit_holds_requests_back_and_ttft_counts_from_the_send():
    """``vllm bench serve --max-concurrency 1``: the second request, due 1 ms after the first, is
    sent when the first ends, and its TTFT counts from that send (one step), not from when it
    was due. Without the limit it is sent when due and waits for the engine's one slot: its TTFT
    is the rest of the first step and its own."""
    nothing, step = _weightless(), 0.01
    requests = [Request(arrival_s=0.0, prompt=1, output=1), Request(arrival_s=0.001, prompt=1, output=1)]
    run = {"slots": 1, "token_budget": 1}
    held = simulate(requests, nothing, Machine(bandwidth=1.0, peak_flops=1.0), Efficiency(overhead_s=step), client_limit=1, **run).served
    assert [s.sent_s for s in held] == pytest.approx([0.0, step]) and [s.ttft_s for s in held] == pytest.approx([step, step])
    due = simulate(requests, nothing, Machine(bandwidth=1.0, peak_flops=1.0), Efficiency(overhead_s=step), **run).served
    assert [s.sent_s for s in due] == pytest.approx([0.0, 0.001]) and due[1].ttft_s == pytest.approx(2 * step - 0.001)


def test_a_request_s_own_cost_comes_before_the_engine_takes_it():
    """A request's own cost (fixed, and per token of its prompt with its history) delays its
    admission: 50 ms + 1 ms x (10 + 5) tokens = 65 ms, then its one step."""
    step = 0.01
    cost = Efficiency(overhead_s=step, request_overhead_s=0.05, prompt_token_overhead_s=0.001)
    done = simulate(
        [Request(arrival_s=1.0, prompt=10, output=1, cached=5)], _weightless(), Machine(bandwidth=1.0, peak_flops=1.0), cost, slots=1, token_budget=64
    )
    assert done.served[0].admitted_s == pytest.approx(1.065) and done.served[0].ttft_s == pytest.approx(0.065 + step)


def test_an_open_loop_run_re_timed_where_it_was_simulated_gives_its_ttfts(registry):
    """The calibration's estimate of an open-loop run at another efficiency (its steps re-timed)
    gives, at the efficiency it was simulated with, every request's TTFT exactly."""
    from arena_prediction.workloads import RetimedOpen, open_simulation

    model, hardware, workload = registry.get("models", "qwen3.5-0.8b"), registry.get("hardware", "gb10"), registry.get("workloads", "monday-peak")
    machine = Machine.of(hardware, model)
    efficiency = Efficiency(request_overhead_s=0.02, prompt_token_overhead_s=1e-5)
    done = open_simulation(workload, model, machine, efficiency, VLLM_SCHEDULING)
    retimed = RetimedOpen(done, efficiency)
    own = efficiency.request_overhead_s + efficiency.prompt_token_overhead_s * retimed.prompts
    assert retimed.engine_ttfts(machine, efficiency) + own == pytest.approx([s.ttft_s for s in done.served], rel=1e-9)
    assert any(s.sent_s > s.request.arrival_s for s in done.served)  # at most 25 in flight: some were held back


def test_calibration_finds_a_request_s_own_cost_from_open_loop_ttfts(registry):
    """Open-loop runs measured with a known cost per request (30 ms and 10 µs a prompt token):
    fitted from no cost at all, the fit finds it, to one step of its grid (the fit re-times each
    run's steps as simulated at the priors instead of simulating it again: an estimate)."""
    from arena_prediction.calibration import OpenResult, fit_request_cost, open_samples_of
    from arena_prediction.workloads import open_run

    hardware, truth = registry.get("hardware", "gb10"), Efficiency(request_overhead_s=0.03, prompt_token_overhead_s=1e-5)
    results = []
    for name, workload in (("qwen3.5-0.8b", "sharegpt"), ("qwen3.5-0.8b", "office-baseline"), ("ministral-3-3b-instruct-bf16", "reasoning")):
        model, spec = registry.get("models", name), registry.get("workloads", workload)
        machine = Machine.of(hardware, model)
        measured = open_run(spec, model, machine, truth, VLLM_SCHEDULING)
        results.append(
            OpenResult(
                run_id=name,
                workload=spec,
                model=model,
                machine=machine,
                scheduling=VLLM_SCHEDULING,
                kv_bytes_per_element=2.0,
                tps=None,
                ttft_s=measured.ttft_p50_s,
            )
        )
    found = fit_request_cost(open_samples_of(results), attrs.evolve(truth, request_overhead_s=0.0, prompt_token_overhead_s=0.0))
    assert found.request_overhead_s == pytest.approx(0.03) and found.prompt_token_overhead_s == pytest.approx(1e-5, abs=2.5e-6)


def test_a_closed_loop_round_re_times_exactly(registry):
    """A closed-loop round's steps do not depend on their timing: re-timing it at another
    efficiency gives what simulating it there gives."""
    from arena_prediction.workloads import closed_figures, closed_rounds

    model, hardware, workload = registry.get("models", "qwen3.6-35b-a3b"), registry.get("hardware", "gb10"), registry.get("workloads", "chat")
    machine = Machine.of(hardware, model)
    other = Efficiency(
        bandwidth=0.5,
        compute=0.2,
        moe_compute=0.15,
        overhead_s=0.006,
        layer_overhead_s=1e-5,
        prefill_ramp_tokens=1024,
        decode_attention_speed=0.3,
        request_overhead_s=0.04,
        prompt_token_overhead_s=2e-5,
    )
    there = closed_figures(closed_rounds(workload, model, machine, other, VLLM_SCHEDULING))
    retimed = closed_figures(closed_rounds(workload, model, machine, Efficiency(), VLLM_SCHEDULING), machine, other)
    assert retimed.per_user_tps == pytest.approx(there.per_user_tps, rel=1e-9) and retimed.ttft_p50_s == pytest.approx(there.ttft_p50_s, rel=1e-9)


def test_rounds_of_different_lengths_re_time_side_by_side_to_the_bit(registry):
    """The calibration re-times rounds laid side by side (zero-padded to the longest); at the
    efficiency they were simulated with, that gives every figure exactly, not nearly."""
    from arena_prediction.workloads import RetimedRounds, closed_figures, closed_rounds

    model, hardware = registry.get("models", "qwen3.6-35b-a3b"), registry.get("hardware", "gb10")
    machine = Machine.of(hardware, model)
    rounds = [
        done
        for name in ("chat", "rag-8k", "multi-turn")
        for done in closed_rounds(registry.get("workloads", name), model, machine, Efficiency(), VLLM_SCHEDULING)
    ]
    assert len({len(done.read) for done in rounds}) == 3  # 1025, 522 and 514 steps
    assert closed_figures(rounds, machine, Efficiency()) == closed_figures(rounds)
    with pytest.raises(ValueError, match="at least one request"):
        RetimedRounds([])


@pytest.mark.parametrize(
    "model, workload",
    [("gemma-3-270m", "chat"), ("gemma-4-26b-a4b-it-bf16-v23", "monday-peak"), ("qwen3.6-35b-a3b", "multi-turn"), ("nemotron-3-nano-4b-bf16", "sharegpt")],
)
@pytest.mark.parametrize("scheduling", [VLLM_SCHEDULING, LLAMA_CPP_SCHEDULING], ids=["vllm", "llama.cpp"])
def test_steps_where_all_only_decode_are_computed_together_to_the_bit(registry, monkeypatch, model, workload, scheduling):
    """Runs of steps in which every sequence only decodes are computed as arrays; every step's
    bytes, FLOPs, bound and end, and every request's times, are those of stepping one by one
    (sliding windows, a mixture of experts, a linear-attention state, the client's arrivals and
    its limit, llama.cpp's few slots and prompt breaks)."""
    import arena_prediction.simulator as simulator
    from arena_core import ClosedLoopShape
    from arena_prediction.workloads import closed_rounds, open_simulation

    model, spec = registry.get("models", model), registry.get("workloads", workload)
    machine = Machine.of(registry.get("hardware", "gb10"), model)
    efficiency = Efficiency(request_overhead_s=0.02, prompt_token_overhead_s=1e-5)
    runs = []
    original = simulator._decode_run
    monkeypatch.setattr(simulator, "_decode_run", lambda *args: runs.append(args[-1]) or original(*args))

    def simulated() -> list:
        if isinstance(spec.shape, ClosedLoopShape):
            return closed_rounds(spec, model, machine, efficiency, scheduling)
        return [open_simulation(spec, model, machine, efficiency, scheduling)]

    together = simulated()
    assert runs and max(runs) >= 100  # long runs of decoding steps were computed at once
    monkeypatch.setattr(simulator, "DECODE_RUN_LEAST", math.inf)
    one_by_one = simulated()
    for fast, slow in zip(together, one_by_one, strict=True):
        assert fast.served == slow.served and fast.layers == slow.layers
        for name in ("read", "flops", "memory_bound", "ramp_flops", "scan_flops", "decode_attention_flops", "sampled_logits"):
            assert getattr(fast, name).tolist() == getattr(slow, name).tolist(), name


@pytest.mark.parametrize(
    "model, hardware",
    [("gemma-3-270m", "gb10"), ("qwen3.6-27b", "gb10"), ("qwen3.6-35b-a3b", "gb10"), ("nemotron-3-nano-omni-30b-a3b-nvfp4", "gb10"), ("qwen3.5-0.8b", "gb10")],
)
def test_a_fit_re_times_a_run_once_per_timing_and_every_efficiency_that_moves_it_is_in_it(registry, model, hardware):
    """A fit's trials that leave a run's steps timed alike (``Machine.timing_of``: an FP4 speedup
    on an FP8 run, a scan's speed where no step scans) are served from the figures kept; every
    efficiency that changes the figures changes the timing."""
    from arena_prediction.workloads import KEPT_TIMINGS, RetimedRounds, closed_rounds

    model = registry.get("models", model)
    machine = Machine.of(registry.get("hardware", hardware), model)
    rounds = closed_rounds(registry.get("workloads", "chat"), model, machine, Efficiency(), VLLM_SCHEDULING)
    laid, base = RetimedRounds(rounds), Efficiency(decode_attention_speed=0.5, logit_overhead_s=1e-9, request_overhead_s=0.01, prompt_token_overhead_s=1e-5)
    moved = 0
    for name in attrs.fields_dict(Efficiency):
        other = attrs.evolve(base, **{name: getattr(base, name) * 1.25 or 0.001})
        alike = machine.timing_of(other, scans=laid.scans) == machine.timing_of(base, scans=laid.scans)
        assert (laid._retimed(machine, other) == laid._retimed(machine, base)) or not alike, name  # a change the timing missed
        moved += not alike
    assert moved >= 9  # bandwidth, compute, the overheads, the ramp, the attention speed, the request's cost, ...
    first = laid.figures(machine, base)
    assert laid.figures(machine, attrs.evolve(base)) is first and len(laid._figures) == 1  # kept
    for step in range(KEPT_TIMINGS + 1):
        laid.figures(machine, attrs.evolve(base, overhead_s=0.001 + step * 1e-4))
    assert len(laid._figures) == KEPT_TIMINGS and laid.figures(machine, base) == first  # at most so many, and the same again


def test_the_ledger_fits_once_per_fold_and_a_run_keeps_its_fold():
    from arena_prediction.ledger import ledger_folds

    few = [f"run-{i:02d}" for i in range(17)]
    assert sorted(ledger_folds(few).values()) == list(range(17))  # up to 20 runs: each left out alone
    many = [f"run-{i:03d}" for i in range(45)]
    folds = ledger_folds(list(reversed(many)))
    assert folds == ledger_folds(many) and sorted(set(folds.values())) == list(range(20))
    assert sorted(list(folds.values()).count(k) for k in range(20)) == [2] * 15 + [3] * 5


def test_the_ledger_fits_once_per_fold_never_on_the_run_it_predicts(monkeypatch, tmp_path):
    import arena_prediction.ledger as ledger_module
    from arena_core.results.cards import load_cards
    from arena_core.testing import run_cli

    manager = make_plugin_manager()
    assert run_cli(manager, ["import", "--seeds", "--output", str(tmp_path)]).exit_code == 0
    hooks = ArenaHooks(manager)
    cards = load_cards(tmp_path, hooks.registry)[0][:6]
    fitted: list[set[str]] = []
    fit = ledger_module.fit
    monkeypatch.setattr(ledger_module, "fit", lambda samples, prior, **kw: fitted.append({s.run_id for s in samples}) or fit(samples, prior, **kw))
    monkeypatch.setattr(ledger_module, "open_results_of", lambda cards, registry: [])  # the fits are the point here
    monkeypatch.setattr(ledger_module, "LEDGER_FOLDS", 2)
    lines = ledger_module.ledger(cards, hooks.registry)
    runs = {c.run_id for c in cards}
    assert len(fitted) == 2 and fitted[0] | fitted[1] == runs and not fitted[0] & fitted[1]  # each fit: the other fold
    assert {line.run_id for line in lines} == runs and all(line.tier == 1 for line in lines)
    only = cards[0].run_id
    fitted.clear()
    assert ledger_module.ledger(cards, hooks.registry, only=only) == [line for line in lines if line.run_id == only]  # a card: its fold, as on the site
    assert len(fitted) == 1 and only not in fitted[0]


def test_llama_cpp_checkpoints_split_each_prompt_and_first_tokens_come_together(registry):
    """llama.cpp checkpoints a sliding-window or recurrent model's memory n_ubatch + 4 and 4
    tokens before each prompt's end, and a prompt's share of a step stops there. Two prompts of
    20 tokens, checkpoints 8 and 2 before the end: 12 + 12 tokens, then 6 + 6, then 2 + 2, and
    both first tokens in the third step; without checkpoints, both in the first. (Measured on the
    embedded Gemma 3: five prompts of 820 tokens, every first token within 0.4 s of the others,
    24.3-24.7 s after they were sent.)"""
    from arena_prediction.workloads import prompt_breaks

    requests = [Request(arrival_s=0.0, prompt=20, output=2) for _ in range(2)]
    machine, every_step = Machine(bandwidth=1.0, peak_flops=1.0), Efficiency(overhead_s=0.01, layer_overhead_s=0.0)
    split = simulate(requests, _weightless(), machine, every_step, slots=2, token_budget=64, prompt_breaks=(8, 2))
    assert [s.first_step for s in split.served] == [2, 2]
    whole = simulate(requests, _weightless(), machine, every_step, slots=2, token_budget=64)
    assert [s.first_step for s in whole.served] == [0, 0]
    # a checkpoint further back than the prompt is long is passed over: 18 tokens, then the last 2
    short = simulate(requests[:1], _weightless(), machine, every_step, slots=1, token_budget=64, prompt_breaks=(30, 2))
    assert short.served[0].first_step == 1
    gemma, dense = physics(registry.get("models", "gemma-3-270m")), physics(registry.get("models", "ministral-3-3b-instruct-bf16"))
    assert prompt_breaks(LLAMA_CPP_SCHEDULING, gemma) == (516, 4) and prompt_breaks(LLAMA_CPP_SCHEDULING, dense) == ()
    assert prompt_breaks(VLLM_SCHEDULING, gemma) == ()


def test_the_seed_g_of_a_closed_loop_round_by_hand():
    """Two users, answers of 3 and 5 tokens, each step 10 ms: one step prefills both (the first
    tokens at 10 ms), then one token a step each, so they end at 30 and 50 ms. G is llama-benchy's
    batch decode t/s: the 2 + 4 tokens after the first over 10-50 ms, 150 t/s; not twice the
    per-user speed (2 x 100), nor the output tokens over the whole round (8 / 50 ms)."""
    from arena_prediction.workloads import closed_figures

    requests = [Request(arrival_s=0.0, prompt=1, output=3), Request(arrival_s=0.0, prompt=1, output=5)]
    done = simulate(
        requests, _weightless(), Machine(bandwidth=1.0, peak_flops=1.0), Efficiency(overhead_s=0.01, layer_overhead_s=0.0), slots=2, token_budget=16
    )
    assert [(s.first_token_s, s.end_s) for s in done.served] == [pytest.approx((0.01, 0.03)), pytest.approx((0.01, 0.05))]
    found = closed_figures([done])
    assert found.site_tps == pytest.approx(150.0) and found.per_user_tps == pytest.approx(100.0) and found.total_tps == pytest.approx(160.0)
    alone = simulate(
        requests[1:], _weightless(), Machine(bandwidth=1.0, peak_flops=1.0), Efficiency(overhead_s=0.01, layer_overhead_s=0.0), slots=1, token_budget=16
    )
    assert closed_figures([alone]).site_tps == pytest.approx(100.0)  # one user: llama-benchy's t/s of the request itself
    both = closed_figures([done, alone])
    assert both.site_tps == pytest.approx(125.0)  # a mean over rounds (a conversation's turns)
    assert both.total_tps == pytest.approx(13 / 0.1)  # 8 + 5 tokens over the rounds one after another: 50 + 50 ms


def test_the_seed_g_of_open_loop_requests_by_hand():
    """G open loop: (input + output tokens) / duration / vLLM's max_concurrent_requests, which
    counts the requests that touch each whole second from the first send. Here four requests of
    10 in, 5 out over 3 s: at most 2 overlap, but 3 touch second 1 and second 2, so G = 60 / 3 / 3.
    With --max-concurrency the client sends a request when it is let through, not when due."""
    from arena_prediction.simulator import Served
    from arena_prediction.workloads import open_figures

    def served(due: float, sent: float, end: float) -> Served:
        return Served(
            request=Request(arrival_s=due, prompt=10, output=5), sent_s=sent, admitted_s=sent, first_token_s=sent + 0.05, end_s=end, first_step=0, last_step=1
        )

    spans = [(0.0, 0.0, 1.5), (0.5, 0.5, 2.2), (1.0, 2.3, 3.0), (1.6, 1.6, 2.25)]
    requests = [served(*span) for span in spans]
    assert open_figures(requests, "bandwidth").site_tps == pytest.approx(60 / 3.0 / 3)
    # had the third been sent when due, at 1.0 s, it would touch second 1 with the first, second and fourth
    due = [served(due, due, end) for due, _, end in spans]
    assert open_figures(due, "bandwidth").site_tps == pytest.approx(60 / 3.0 / 4)


def test_a_prediction_has_an_interval_and_says_what_bounds_it(registry):
    found = predict(registry.get("workloads", "chat"), registry.get("models", "qwen3.6-35b-a3b"), registry.get("hardware", "gb10"), scheduling=VLLM_SCHEDULING)
    assert found.low.per_user_tps < found.central.per_user_tps < found.high.per_user_tps
    assert found.high.ttft_p50_s < found.central.ttft_p50_s < found.low.ttft_p50_s
    assert found.central.bound == "bandwidth"  # decode at c=10 is memory-bound on GB10 (hardware.md 4.1)
    # the bandwidth ceiling holds: no user decodes faster than the weights can be read
    assert found.high.per_user_tps < 273e9 / (3e9 * bytes_per_param("fp8"))


@pytest.mark.slow
def test_arena_predict_prints_every_workload_for_a_model_never_measured(tmp_path):
    done = arena("predict", "qwen3.6-27b", "--hardware", "h100-sxm")
    assert done.returncode == 0, done.stderr[-2000:]
    for name in ("chat", "rag-8k", "long-output", "long-context-25k", "multi-turn", "office-baseline", "sharegpt", "monday-peak", "reasoning"):
        assert name in done.stdout
    header = next(line for line in done.stdout.splitlines() if line.startswith("workload"))
    assert "tier 0" in done.stdout and "seed's G" in header and "[interval]" not in header  # each interval under its figure
    found = arena("predict", "qwen3.6-27b", "--hardware", "h100-sxm", "--workloads", "chat,monday-peak", "--json")
    chat, peak = json.loads(found.stdout)["workloads"]
    assert chat["low"]["site_tps"] < chat["central"]["site_tps"] < chat["high"]["site_tps"]
    assert chat["central"]["site_tps"] > chat["central"]["per_user_tps"]  # ten users decode together
    assert peak["central"]["site_tps"] > 0 and peak["workload"] == "monday-peak"
    bad = arena("predict", "qwen3.6-27b", "--hardware", "cpu-host-x")
    assert bad.returncode == 2 and "cpu-host-x" in bad.stderr and "Traceback" not in bad.stderr


def test_every_model_of_the_seed_cohort_is_in_the_catalog_with_its_layout(registry):
    from pathlib import Path

    import arena_core

    seed = json.loads((Path(arena_core.__file__).parent / "data" / "seed-cards.json").read_text())
    for card in seed["cards"]:
        model = registry.get("models", card["model"])
        assert model.architecture is not None and model.architecture.source, card["model"]
        # the seed gives the names' round figures; the catalog the published counts (Ministral 3 3B: 3.4B)
        assert model.params_total_b == pytest.approx(card["model_facts"]["params_total_b"], rel=0.15), card["model"]
        assert model.params_active_b == pytest.approx(card["model_facts"]["params_active_b"], rel=0.15), card["model"]
        assert not physics(model).notes, (card["model"], physics(model).notes)  # nothing assumed: no layout guessed


def test_sliding_window_layers_with_heads_of_their_own_gemma_4(registry):
    """Gemma 4 26B-A4B: 25 sliding-window layers (1024 tokens, 8 KV heads of 256) and 5 global
    layers whose 2 KV heads of 512 share K and V: 200 + 10 = 210 KiB a token inside the window."""
    found = physics(registry.get("models", "gemma-4-26b-a4b-it-bf16-v23"))
    assert found.window_kv_bytes_per_token == 25 * 2 * 8 * 256 * 2 and found.kv_bytes_per_token == 5 * 2 * 512 * 2
    assert found.kv_read((1000,)) == 1000 * 210 * 1024
    assert found.kv_read((25_000,)) == 25_000 * 10 * 1024 + 1024 * 200 * 1024  # the window stops growing at 1024
    # attention FLOPs: 4 x layers x query width per context token, the window's capped the same way
    assert found.attention_flops((25_000,)) == 4 * 5 * 16 * 512 * 25_000 + 4 * 25 * 16 * 256 * 1024


def test_mamba_2_state_of_nemotron_3_super(registry):
    """40 Mamba-2 layers of 128 heads of 64 with a state of 128, in FP32 (4 MiB a layer), and the
    convolution state over x, B and C (8 groups of 128) for the kernel of 4."""
    found = physics(registry.get("models", "nemotron-3-super-120b-a12b-nvfp4"))
    recurrent = 40 * 128 * 64 * 128 * 4
    conv = 40 * (2 * 8 * 128 + 128 * 64) * 3 * 2
    assert found.state_bytes == recurrent + conv
    assert found.kv_bytes_per_token == 8 * 1024  # 8 GQA layers x 2 KV heads of 128: 8 KiB a token


def test_a_low_precision_speeds_up_the_prefill_only_where_the_hardware_has_its_roof(registry):
    """Compute counts from the 16-bit roof; FP8 GEMMs add the FP8 speedup (dense) or the MoE one
    (a mixture of experts), NVFP4 the FP4 one, and a GPU without that roof adds nothing."""
    import numpy as np

    from arena_prediction.simulator import step_seconds

    gb10, h100 = registry.get("hardware", "gb10"), registry.get("hardware", "h100-sxm")
    moe, dense = Machine.of(gb10, registry.get("models", "qwen3.6-35b-a3b")), Machine.of(gb10, registry.get("models", "qwen3.6-27b"))
    nvfp4, bf16 = Machine.of(gb10, registry.get("models", "mistral-small-3.2-24b-it-nvfp4")), Machine.of(gb10, registry.get("models", "qwen3.5-0.8b"))
    assert {m.peak_flops for m in (moe, dense, nvfp4, bf16)} == {gb10.dense_tflops["bf16"] * 1e12}
    assert (moe.mixture_of_experts, moe.low_precision, dense.low_precision, nvfp4.low_precision, bf16.low_precision) == (True, "fp8", "fp8", "fp4", "")
    assert "fp4" not in h100.dense_tflops and Machine.of(h100, registry.get("models", "mistral-small-3.2-24b-it-nvfp4")).low_precision == ""
    efficiency = Efficiency(
        bandwidth=1.0, compute=0.5, moe_compute=0.25, overhead_s=0.0, layer_overhead_s=0.001, fp8_speedup=2.0, fp4_speedup=1.5, moe_speedup=1.25
    )
    flops = np.array([gb10.dense_tflops["bf16"] * 1e12])  # one second at the 16-bit roof
    seconds = {
        name: step_seconds(np.array([0.0]), flops, machine, efficiency)[0][0]
        for name, machine in (("moe", moe), ("dense", dense), ("nvfp4", nvfp4), ("bf16", bf16))
    }
    assert seconds == pytest.approx({"moe": 1 / (0.25 * 1.25), "dense": 1 / (0.5 * 2.0), "nvfp4": 1 / (0.5 * 1.5), "bf16": 1 / 0.5})
    assert step_seconds(np.array([0.0]), flops, moe, efficiency, layers=40)[0][0] == pytest.approx(3.2 + 0.04)  # and 1 ms a layer


def test_layers_a_low_precision_checkpoint_keeps_in_16_bits_are_read_and_multiplied_at_16_bits(registry):
    """Nemotron 3 Nano 4B's FP8 checkpoint keeps its attention and the Mamba layers feeding it in
    BF16: those weights are read at two bytes, and their share of the GEMMs' FLOPs runs at the
    16-bit speed, so the prefill's speedup is the harmonic blend of FP8's and none. A 16-bit
    build, or an engine that computes the FP8 one in 16 bits, keeps nothing apart."""
    gb10 = registry.get("hardware", "gb10")
    fp8 = registry.get("models", "nemotron-3-nano-4b-fp8")
    whole = attrs.evolve(fp8, params_sixteen_bit_b=None)  # the same checkpoint, all of it in FP8
    arch = fp8.architecture
    kept = fp8.params_sixteen_bit_b * 1e9
    assert kept == pytest.approx(4 * (arch.attention_params() + arch.linear_layer_params()), rel=1e-9)
    assert physics(fp8).shared_bytes - physics(whole).shared_bytes == pytest.approx(kept * (2.0 - bytes_per_param("fp8")), rel=1e-9)
    assert physics(fp8).flops_per_token == physics(whole).flops_per_token  # the same FLOPs, at another speed
    share = kept / (fp8.params_active_b * 1e9 - arch.vocab * arch.hidden)
    efficiency = Efficiency(compute=0.5, fp8_speedup=2.0)
    peak = gb10.dense_tflops["bf16"] * 1e12
    assert Machine.of(gb10, fp8).sixteen_bit_share == pytest.approx(share, rel=1e-9)
    assert Machine.of(gb10, fp8).compute_flops(efficiency) == pytest.approx(peak * 0.5 / ((1 - share) / 2.0 + share), rel=1e-9)
    assert Machine.of(gb10, whole).compute_flops(efficiency) == pytest.approx(peak * 0.5 * 2.0, rel=1e-9)
    assert Machine.of(gb10, fp8, sixteen_bit=True).compute_flops(efficiency) == pytest.approx(peak * 0.5, rel=1e-9)
    _, said = serving_machine(gb10, fp8, VLLM_SCHEDULING)  # and a prediction says so
    assert said == [f"{fp8.params_sixteen_bit_b:.2f}B parameters its checkpoint keeps in 16 bits: read at two bytes each, multiplied without the FP8 speedup"]
    bf16 = registry.get("models", "nemotron-3-nano-4b-bf16")
    stated = attrs.evolve(bf16, params_sixteen_bit_b=fp8.params_sixteen_bit_b)
    assert physics(stated) == physics(bf16) and Machine.of(gb10, stated) == Machine.of(gb10, bf16)


def test_linear_attention_scan_flops_by_hand_and_at_their_own_efficiencies(registry):
    """Qwen3.5-0.8B: 18 DeltaNet layers x 16 value heads of 128; per head and token, 2·64·(128 + 128)
    within the chunk and 4·128·128 for the state. Nemotron 3 Super: 40 Mamba-2 layers; its scores
    once per group, 8 groups x 2·128·128 (C·Bᵀ over a state of 128, in chunks of 128), then each
    of 128 heads of 64: 2·128·64 within the chunk and 4·128·64 for the state. Nemotron 3 Nano 4B
    scans in chunks of 256 (its config's chunk_size). Each scan runs at its own efficiency
    (DeltaNet's ``scan_compute``, Mamba-2's ``ssd_compute``), beside the GEMMs."""
    import numpy as np

    from arena_prediction.simulator import step_seconds

    small = physics(registry.get("models", "qwen3.5-0.8b"))
    assert small.scan_flops_per_token == 18 * 16 * (2 * 64 * 256 + 4 * 128 * 128)
    super_ = registry.get("models", "nemotron-3-super-120b-a12b-nvfp4")
    assert physics(super_).scan_flops_per_token == 40 * (8 * 2 * 128 * 128 + 128 * (2 * 128 * 64 + 4 * 128 * 64))
    nano = physics(registry.get("models", "nemotron-3-nano-4b-bf16"))
    assert nano.scan_flops_per_token == 21 * (8 * 2 * 256 * 128 + 96 * (2 * 256 * 80 + 4 * 128 * 80))
    gb10 = registry.get("hardware", "gb10")
    assert Machine.of(gb10, super_).mamba_scan and not Machine.of(gb10, registry.get("models", "qwen3.5-0.8b")).mamba_scan
    efficiency = Efficiency(bandwidth=1.0, compute=0.5, overhead_s=0.0, scan_compute=0.05, ssd_compute=0.25)
    for mamba, scan_s in ((False, 2.0), (True, 0.4)):
        machine = Machine(bandwidth=1e12, peak_flops=1e12, mamba_scan=mamba)
        seconds, _ = step_seconds(np.zeros(1), np.array([1e12]), machine, efficiency, scan_flops=np.array([1e11]))
        assert seconds[0] == pytest.approx(2.0 + scan_s)  # its own kernels: their time adds to the GEMMs'
    fp4 = Machine(bandwidth=1e12, peak_flops=1e12, mamba_scan=True, low_precision="fp4")
    fast = attrs.evolve(efficiency, fp4_speedup=4.0)
    assert step_seconds(np.zeros(1), np.array([0.0]), fp4, fast, scan_flops=np.array([1e11]))[0][0] == pytest.approx(0.4)  # no low precision speeds it up


def test_a_prefilling_step_pays_the_ramp_and_a_decode_step_does_not():
    """Prefilling n tokens costs about (n + ramp) tokens' compute; a decode-only step has no ramp."""
    import numpy as np

    from arena_prediction.simulator import step_seconds

    machine, per_token = Machine(bandwidth=1e12, peak_flops=1e12), 1e9
    efficiency = Efficiency(bandwidth=1.0, compute=1.0, overhead_s=0.0, prefill_ramp_tokens=500)
    flops = np.array([1000 * per_token, 10 * per_token])  # a step prefilling 1000 tokens, a step decoding 10
    seconds, _ = step_seconds(np.zeros(2), flops, machine, efficiency, ramp_flops=np.array([per_token, 0.0]))
    assert seconds.tolist() == pytest.approx([1.5, 0.01])


def test_speculative_decoding_is_in_the_ledger_but_not_in_a_fit(registry):
    from arena_prediction.calibration import Sample, fit
    from arena_prediction.simulator import prior_of
    from arena_prediction.workloads import closed_rounds

    model = registry.get("models", "gemma-4-26b-a4b-it-mtp-v23")
    machine = Machine.of(registry.get("hardware", "gb10"), model)
    chat = registry.get("workloads", "chat")
    rounds = tuple(closed_rounds(chat.scaled(0.05), model, machine, prior_of("vllm"), VLLM_SCHEDULING))
    sample = Sample(run_id="r", workload="chat", rounds=rounds, machine=machine, tps=100.0, ttft_s=0.01, speculative=True)
    assert fit([sample], prior_of("vllm")) == prior_of("vllm")  # nothing left to fit: the priors
    assert fit([attrs.evolve(sample, speculative=False)], prior_of("vllm")) != prior_of("vllm")


def test_a_mixture_of_experts_step_takes_its_read_and_its_math_together_a_dense_one_the_larger(registry):
    """A dense layer's GEMM hides its weights' read behind its math (the larger of the two); a
    mixture of experts' grouped GEMM less (their p-norm), and not at all in a step that only
    decodes (their sum). So on the seed's MoE models five prompts of 256 tokens take longer to a
    first token than one, as measured (Qwen3.6-35B-A3B in BF16: 0.26 s for one, 0.53 s for
    five), where the larger of the two gave both the time of the read."""
    import numpy as np

    from arena_prediction.simulator import prior_of, step_seconds
    from arena_prediction.workloads import closed_figures, closed_rounds

    flat_machine = Machine(bandwidth=1.0, peak_flops=1.0)
    moe_machine = attrs.evolve(flat_machine, mixture_of_experts=True)
    even = Efficiency(bandwidth=1.0, compute=1.0, moe_compute=1.0, overhead_s=0.0)
    prefilling = {"ramp_flops": 1.0}  # a step with a prompt chunk in it
    for ramp in (0.0, 1.0):
        assert step_seconds(2.0, 2.0, flat_machine, even, ramp_flops=ramp)[0] == pytest.approx(2.0)
    assert 1 < even.moe_roof_power < 2
    assert step_seconds(2.0, 2.0, moe_machine, even, **prefilling)[0] == pytest.approx(2.0 * 2 ** (1 / even.moe_roof_power))
    assert step_seconds(2.0, 2.0, moe_machine, attrs.evolve(even, moe_roof_power=1.0), **prefilling)[0] == pytest.approx(4.0)
    assert step_seconds(2.0, 0.0, moe_machine, even, **prefilling)[0] == pytest.approx(2.0)  # nothing to hide: the read alone
    # a step that only decodes: the sum, whatever the prefill's power, unless told otherwise
    assert even.moe_decode_roof_power == 1.0
    assert step_seconds(2.0, 2.0, moe_machine, attrs.evolve(even, moe_roof_power=64.0))[0] == pytest.approx(4.0)
    assert step_seconds(2.0, 2.0, moe_machine, attrs.evolve(even, moe_decode_roof_power=64.0))[0] == pytest.approx(2.0, rel=0.02)
    steps = step_seconds(np.array([2.0, 2.0]), np.array([2.0, 2.0]), moe_machine, even, ramp_flops=np.array([0.0, 1.0]))[0]
    assert steps.tolist() == pytest.approx([4.0, 2.0 * 2 ** (1 / even.moe_roof_power)])  # step by step
    for power in ("moe_roof_power", "moe_decode_roof_power"):
        with pytest.raises(ValueError):
            Efficiency(**{power: 0.5})  # less than their sum is no roof
    model = registry.get("models", "qwen-3.6-35b-a3b-bf16")
    machine = Machine.of(registry.get("hardware", "gb10"), model)
    long_output = registry.get("workloads", "long-output")  # prompts of 256 tokens, as the seed ran them

    def first_token_s(users: int, efficiency: Efficiency) -> float:
        shaped = attrs.evolve(long_output, shape=attrs.evolve(long_output.shape, concurrency=users, generated_tokens=4))
        return closed_figures(closed_rounds(shaped, model, machine, efficiency, VLLM_SCHEDULING)).ttft_p50_s

    prior = prior_of("vllm")
    as_the_larger = attrs.evolve(prior, moe_roof_power=64.0)
    assert first_token_s(5, as_the_larger) < 1.05 * first_token_s(1, as_the_larger)
    assert first_token_s(5, prior) > 1.15 * first_token_s(1, prior)


def test_speculative_decoding_gains_the_drafts_accepted_less_what_verifying_and_drafting_cost(registry):
    """With k draft tokens a decoding sequence gets 1 + a + ... + a^k tokens a step (a: the
    assumed acceptance), and a step verifies every draft and drafts them first: per-user decode
    speeds up, by less than the tokens a step; the first token comes a little later (the drafter
    reads the prompts too, one layer's worth of 64); and none of it without draft tokens."""
    from arena_prediction.simulator import prior_of
    from arena_prediction.speculative import DRAFT_ACCEPTANCE, tokens_per_step
    from arena_prediction.workloads import closed_figures, closed_rounds

    assert tokens_per_step(0) == 1.0
    assert tokens_per_step(3, 0.5) == pytest.approx(1.875)
    assert tokens_per_step(3) == pytest.approx(1 + DRAFT_ACCEPTANCE + DRAFT_ACCEPTANCE**2 + DRAFT_ACCEPTANCE**3)
    model = registry.get("models", "qwen3.6-27b")  # dense: its decode bound by reading its weights
    machine = Machine.of(registry.get("hardware", "gb10"), model)
    long_output = registry.get("workloads", "long-output").scaled(0.05)

    def figures(draft_tokens: int):
        scheduling = attrs.evolve(VLLM_SCHEDULING, draft_tokens=draft_tokens)
        return closed_figures(closed_rounds(long_output, model, machine, prior_of("vllm"), scheduling))

    plain, drafted = figures(0), figures(3)
    assert 1.2 < drafted.per_user_tps / plain.per_user_tps < tokens_per_step(3)
    assert plain.ttft_p50_s < drafted.ttft_p50_s < 1.05 * plain.ttft_p50_s  # the drafter's pass over the prompts: about a layer's
    with pytest.raises(ValueError):
        attrs.evolve(VLLM_SCHEDULING, draft_tokens=65)  # a bounded server setting
    # a recurrent state is written once a position it may roll back to: 2 + k a sequence, not 2
    from arena_prediction.simulator import physics, step_cost

    hybrid = physics(registry.get("models", "nemotron-3-nano-4b-bf16"))
    assert hybrid.state_bytes > 0

    def read(costs, draft_tokens: int) -> float:
        return step_cost(costs, decode_contexts=[1000, 1000], prefill=[], draft_tokens=draft_tokens)[0]

    stateless = attrs.evolve(hybrid, state_bytes=0.0)
    assert read(hybrid, 0) - read(stateless, 0) == pytest.approx(2 * 2 * hybrid.state_bytes)
    assert read(hybrid, 3) - read(stateless, 3) == pytest.approx(2 * (2 + 3) * hybrid.state_bytes)
    # a sequence's drafts count against the step's token budget: a prompt beside it prefills less a step
    from arena_prediction.simulator import Request, simulate

    def prompt_steps(draft_tokens: int) -> int:
        decoding, prompt = Request(arrival_s=0.0, prompt=8, output=200), Request(arrival_s=0.5, prompt=186, output=1)
        done = simulate([decoding, prompt], hybrid, machine, prior_of("vllm"), slots=2, token_budget=64, draft_tokens=draft_tokens)
        (served,) = [s for s in done.served if s.request is prompt]
        return served.first_step - served.admitted_step + 1

    assert (prompt_steps(0), prompt_steps(3)) == (3, 4)  # 63 tokens a step beside one token, 60 beside four


def test_the_drafter_attends_over_the_context_as_one_full_attention_layer(registry):
    """An MTP head is a layer that attends over the whole context (a KV cache of its own, or, in
    Gemma 4's assistant, the target's last full-attention layer's), and vLLM's proposer passes it
    every token a step scheduled: each prompt token costs one full-attention layer's attention
    over what came before it, each draft pass that layer's KV read and attention over its
    sequence's context. A longer context costs the drafting more; none of it without drafts."""
    from arena_prediction.simulator import physics, step_cost
    from arena_prediction.speculative import drafting_cost

    costs = physics(registry.get("models", "qwen3.6-27b"))
    one_layer_flops = costs.attention_flops_per_context_token / costs.full_attention_layers
    one_layer_kv = costs.kv_bytes_per_token / costs.full_attention_layers
    assert costs.full_attention_layers == 16 and one_layer_flops > 0 and one_layer_kv > 0

    late, early = (drafting_cost(costs, decode_contexts=[], prefill=[(1000, before)], draft_tokens=3) for before in (20000, 0))
    assert late.flops - early.flops == pytest.approx(one_layer_flops * 1000 * 20000)  # each token over 20,000 more before it
    assert late.read - early.read == pytest.approx(one_layer_kv * 20000)
    decoding = drafting_cost(costs, decode_contexts=[5000, 3000], prefill=[], draft_tokens=3)
    assert decoding.decode_attention_flops == pytest.approx(3 * one_layer_flops * 8000)
    fresh = drafting_cost(costs, decode_contexts=[1, 1], prefill=[], draft_tokens=3)
    assert decoding.read - fresh.read == pytest.approx(3 * one_layer_kv * (8000 - 2))
    # in a step: the drafting's attention beside the verification's, and nothing without drafts
    plain = step_cost(costs, decode_contexts=[5000, 3000], prefill=[(1000, 20000)])
    drafted = step_cost(costs, decode_contexts=[5000, 3000], prefill=[(1000, 20000)], draft_tokens=3)
    assert drafted[3] == pytest.approx(4 * plain[3] + decoding.decode_attention_flops)
    assert drafted[1] - plain[1] > one_layer_flops * 1000 * 20000


def test_decode_attention_runs_at_a_speed_of_its_own_which_llama_cpp_fits(registry):
    """A decoding token's attention FLOPs run at ``decode_attention_speed`` of the GEMMs' FLOP/s:
    1 GFLOP of GEMMs at 0.5 GFLOP/s is 2 s, 0.1 GFLOP of attention at a tenth of that another 2 s.
    Calibration fits that speed for llama.cpp (its attention on a CPU runs far below its GEMMs)
    and leaves vLLM's at its prior."""
    import numpy as np

    from arena_prediction.calibration import Sample, fit
    from arena_prediction.simulator import prior_of, step_cost, step_seconds
    from arena_prediction.workloads import closed_rounds

    machine, slow = Machine(bandwidth=1e12, peak_flops=1e9), Efficiency(compute=0.5, decode_attention_speed=0.1, overhead_s=0.0)
    seconds, _ = step_seconds(np.array([0.0]), np.array([1e9]), machine, slow, decode_attention_flops=np.array([1e8]))
    assert seconds[0] == pytest.approx(4.0)
    gemma = physics(registry.get("models", "gemma-3-270m"))
    _, flops, _, attention = step_cost(gemma, decode_contexts=[820, 100], prefill=[])
    assert attention == pytest.approx(gemma.attention_flops((820, 100)))
    assert flops == pytest.approx(2 * gemma.flops_per_token + 2 * gemma.lm_head_flops)  # the GEMMs alone
    model, workload = registry.get("models", "gemma-3-270m"), registry.get("workloads", "big-context-8k-c5").scaled(0.1)
    host = Machine(bandwidth=30e9, peak_flops=1.6e11)
    rounds = tuple(closed_rounds(workload, model, host, prior_of("llama-cpp"), LLAMA_CPP_SCHEDULING))
    sample = Sample(run_id="r", workload=workload.name, rounds=rounds, machine=host, tps=6.9, ttft_s=24.1)  # measured on 2 cores
    assert fit([sample], prior_of("llama-cpp"), engine="llama-cpp").decode_attention_speed < 0.5
    assert fit([sample], prior_of("llama-cpp"), engine="vllm").decode_attention_speed == 1.0


def test_llama_cpp_samples_on_the_host_at_a_cost_per_logit_that_grows_with_its_slots(registry):
    """llama.cpp's server copies each sampling sequence's logits (one per vocabulary entry) to the
    host and samples them there, serial with the GEMMs: a step costs ``logit_overhead_s`` for
    each. So ten users of Gemma 3 270M (262,144 logits a token) on an H200 decode at about 84
    tokens/s each, as Arena measured on 2026-12-04 (docs/prediction-notes.md, "On a GPU"), not the 481
    the weights' reads alone gave; one user near the 543 measured. Calibration recovers a cost
    planted in what it is fitted to, for llama.cpp, and keeps vLLM's prior (0: sampled on the GPU)."""
    import numpy as np

    from arena_prediction.calibration import Sample, fit
    from arena_prediction.simulator import prior_of, step_seconds
    from arena_prediction.workloads import closed_rounds

    machine, host = Machine(bandwidth=1e12, peak_flops=1e15), Efficiency(overhead_s=0.0, logit_overhead_s=4e-9)
    seconds, _ = step_seconds(np.zeros(2), np.zeros(2), machine, host, sampled_logits=np.array([262_144.0, 10 * 262_144.0]))
    assert seconds == pytest.approx([262_144 * 4e-9, 10 * 262_144 * 4e-9])  # each sampling sequence a vocabulary's worth
    model, h200 = registry.get("models", "gemma-3-270m"), Machine.of(registry.get("hardware", "h200"), registry.get("models", "gemma-3-270m"))
    chat = registry.get("workloads", "chat").scaled(0.1)

    def per_user(users: int, efficiency: Efficiency) -> float:
        workload = attrs.evolve(chat, shape=attrs.evolve(chat.shape, concurrency=users))
        rounds = tuple(closed_rounds(workload, model, h200, efficiency, LLAMA_CPP_SCHEDULING))
        return Sample(run_id="r", workload="chat", rounds=rounds, machine=h200, tps=None, ttft_s=None).predicted(efficiency)[0]

    llama_cpp = prior_of("llama-cpp")
    assert 84.0 / 1.3 < per_user(10, llama_cpp) < 84.0 * 1.3 and 543 / 1.3 < per_user(1, llama_cpp) < 543 * 1.3
    assert per_user(10, attrs.evolve(llama_cpp, logit_overhead_s=0.0)) > 4 * 84.0  # without it: the weights' reads alone
    planted = attrs.evolve(llama_cpp, logit_overhead_s=16e-9)
    samples = []
    for users in (1, 10):
        workload = attrs.evolve(chat, shape=attrs.evolve(chat.shape, concurrency=users))
        rounds = tuple(closed_rounds(workload, model, h200, llama_cpp, LLAMA_CPP_SCHEDULING))
        tps, ttft = Sample(run_id="r", workload="chat", rounds=rounds, machine=h200, tps=None, ttft_s=None).predicted(planted)
        samples.append(Sample(run_id=f"r{users}", workload="chat", rounds=rounds, machine=h200, tps=tps, ttft_s=ttft))
    assert fit(samples, llama_cpp, engine="llama-cpp").logit_overhead_s == pytest.approx(16e-9)
    assert fit(samples, prior_of("vllm"), engine="vllm").logit_overhead_s == 0.0


def test_an_unknown_precision_is_said_not_guessed(registry):
    model = attrs.evolve(registry.get("models", "qwen3.5-0.8b"), precision="iq1_s")
    with pytest.raises(ValueError, match="iq1_s"):
        physics(model)


@pytest.mark.slow
def test_leave_one_model_out_over_the_seed_cohort(seed_store):
    """scripts/prediction_error.py over the seed's 17 models: every closed-loop figure predicted;
    calibrating on the other models (tier 1) narrows the median error of both metrics; tokens/s
    meets its goals at both tiers, TTFT at tier 0; TTFT at tier 1 is held to what was measured
    (docs/prediction.md has the table)."""
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "scripts" / "prediction_error.py"
    done = subprocess.run([sys.executable, str(script), "--json", "--output", str(seed_store)], capture_output=True, text=True, timeout=600)  # its fits kept
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout)["rows"]
    assert len({r["model"] for r in rows}) == 17
    errors = {}
    for tier in ("tier0", "tier1"):
        mine = [r for r in rows if r["tier"] == tier and not r["open_loop"]]
        assert len(mine) == 85 and all(r["measured_tps"] and r["predicted_tps"] for r in mine)  # 17 models x 5 closed-loop workloads
        opened = [r for r in rows if r["tier"] == tier and r["open_loop"]]  # and their valid open-loop results, apart
        assert {r["workload"] for r in opened} == {"office-baseline", "sharegpt", "monday-peak", "reasoning"}
        assert all(r["predicted_tps"] and r["predicted_ttft_s"] for r in opened)
        for metric, predicted, measured in (("tps", "predicted_tps", "measured_tps"), ("ttft", "predicted_ttft_s", "measured_ttft_s")):
            found = sorted(abs(r[predicted] - r[measured]) / r[measured] for r in mine)
            errors[tier, metric] = found[len(found) // 2]
    assert errors["tier1", "tps"] < errors["tier0", "tps"] and errors["tier1", "ttft"] < errors["tier0", "ttft"], errors
    # issue 32's goals (docs/prediction-notes.md: 14.0 %, 14.1 %, 7.5 %, 9.1 %, the p90s at tier 1 28.4 %
    # and 27.6 % by the nearest rank; open-loop TTFT 13.0 %): a change that makes one of them miss fails here
    assert errors["tier0", "tps"] <= 0.15 and errors["tier0", "ttft"] <= 0.20, errors
    assert errors["tier1", "tps"] <= 0.08 and errors["tier1", "ttft"] <= 0.12, errors
    for metric, predicted, measured in (("tps", "predicted_tps", "measured_tps"), ("ttft", "predicted_ttft_s", "measured_ttft_s")):
        found = sorted(abs(r[predicted] - r[measured]) / r[measured] for r in rows if r["tier"] == "tier1" and not r["open_loop"])
        assert nearest_rank(found, 90) <= 0.30, (metric, nearest_rank(found, 90))
    opened = sorted(abs(r["predicted_ttft_s"] - r["measured_ttft_s"]) / r["measured_ttft_s"] for r in rows if r["tier"] == "tier1" and r["open_loop"])
    assert opened[len(opened) // 2] <= 0.20, opened[len(opened) // 2]
    # the seed's G of every result, as measured on 2026-12-01 (docs/prediction-notes.md): closed loop at
    # tier 0 11.9 %, open loop at tier 1 8.8 %; a change that makes them worse fails here
    for open_loop, tier, held in ((False, "tier0", 0.14), (True, "tier1", 0.11)):
        mine = [r for r in rows if r["tier"] == tier and r["open_loop"] == open_loop]
        assert all(r["predicted_site_tps"] and r["measured_site_tps"] for r in mine)
        found = sorted(abs(r["predicted_site_tps"] - r["measured_site_tps"]) / r["measured_site_tps"] for r in mine)
        assert found[len(found) // 2] < held, (tier, open_loop, found[len(found) // 2])


@pytest.mark.slow
def test_calibrate_predict_and_the_error_ledger_on_the_seed_cohort(seed_store_template, tmp_path):
    """arena calibrate fits the seed's 17 runs and stores the fit; arena predict then predicts at
    tier 1; a card shows predicted against measured (fitted without its run); the leaderboard and
    the site show the ledger. A damaged fit is no fit (tier 0), never a crash."""
    import re
    import shutil
    from pathlib import Path

    store, site = tmp_path / "store", tmp_path / "site"

    empty = arena("calibrate", "--hardware", "gb10", "--backend", "vllm", "--output", str(tmp_path / "empty"))
    assert empty.returncode == 2 and "no stored closed-loop results on gb10 with vllm" in empty.stderr and "Traceback" not in empty.stderr
    shutil.copytree(seed_store_template, store)  # the seed cards, with the ledger's fits kept (calibrate fits afresh)
    kept = store / "calibrations" / "ledger-fits--step-simulator.json"
    before = set(json.loads(kept.read_text())) if kept.is_file() else set()
    fitted = arena("calibrate", "--hardware", "gb10", "--backend", "vllm", "--output", str(store))
    # its leave-outs read the ledger's fits (one run out is the ledger's own) and keep theirs beside them
    assert before and before < set(json.loads(kept.read_text()))
    assert fitted.returncode == 0, fitted.stderr[-2000:]
    assert "fitted to 75 results of 15 runs on gb10 (vllm)" in fitted.stdout  # Super and the MTP build decoded speculatively: left out
    assert "left out: 10 results of speculative decoding (an MTP build, or a server's stated draft tokens)" in flat(fitted.stdout)
    assert max(len(line) for line in fitted.stdout.splitlines()) <= 80  # wrapped to the terminal (80 columns where there is none)
    before, after = (
        float(x) for x in re.search(r"tokens/s per user on these results: ([0-9.]+) % with the priors, ([0-9.]+) % fitted", flat(fitted.stdout)).groups()
    )
    assert after < before
    # the ledger of each situation a prediction is used in: tier 1 no worse than tier 0 on the
    # same results (median and p90), and the 80 % interval holding 75-85 % of them
    said = flat(fitted.stdout)
    for label in ("leave-one-run-out", "leave-model-out", "leave-family-out", "new engine version", "new architecture kind"):
        cell = r"([0-9.]+) / ([0-9.]+) % \(([0-9.]+) / ([0-9.]+) %\)"
        found = re.search(rf"{label} \(\d+ results\): tok/s {cell}; TTFT {cell}; open-loop tok/s {cell}; open-loop TTFT {cell}", said)
        assert found, (label, said)
        figures = [float(x) for x in found.groups()]
        for at in range(0, 16, 4):  # each metric: tier 1 median, p90, then tier 0's
            assert figures[at] <= figures[at + 2] and figures[at + 1] <= figures[at + 3], (label, figures)
        held = int(re.search(rf"{label} \(.*?the 80 % interval holds (\d+) %", said).group(1))
        assert 75 <= held <= 85, (label, held)
    predicted = arena("predict", "qwen3.6-35b-a3b", "--hardware", "gb10", "--output", str(store), "--workloads", "chat")
    assert predicted.returncode == 0 and "tier 1: calibrated on 75 results of 15 runs on gb10" in flat(predicted.stdout)
    # the error a prediction prints is its situation's: a catalog model the fit learnt from, a
    # model given by config.json outside every family of the fit, an engine version outside it
    run_error = re.search(r"leave-one-run-out \(\d+ results\): tok/s ([0-9.]+) / [0-9.]+ % \([0-9.]+ / [0-9.]+ %\); TTFT ([0-9.]+)", said).groups()
    family_error = re.search(r"leave-family-out \(\d+ results\): tok/s ([0-9.]+) / [0-9.]+ % \([0-9.]+ / [0-9.]+ %\); TTFT ([0-9.]+)", said).groups()
    version_error = re.search(r"new engine version \(\d+ results\): tok/s ([0-9.]+) / [0-9.]+ % \([0-9.]+ / [0-9.]+ %\); TTFT ([0-9.]+)", said).groups()
    assert f"predicted for a model the fit learnt from; median error there: {run_error[0]} % tok/s, {run_error[1]} % TTFT (leave-one-run-out)" in flat(
        predicted.stdout
    )
    config = Path(__file__).resolve().parent / "fixtures" / "vllm_real" / "config.json"
    outside = flat(arena("predict", "--model-config", str(config), "--hardware", "gb10", "--output", str(store), "--workloads", "chat").stdout)
    assert f"predicted for a model outside the fit; median error there: {family_error[0]} % tok/s, {family_error[1]} % TTFT (leave-family-out)" in outside, (
        outside
    )
    newer = flat(arena("predict", "qwen3.6-35b-a3b", "--engine-version", "0.31.0", "--hardware", "gb10", "--output", str(store), "--workloads", "chat").stdout)
    assert f"(leave-one-run-out); {version_error[0]} % tok/s, {version_error[1]} % TTFT (new engine version)" in newer, newer
    stored = json.loads((store / "calibrations" / "gb10--vllm.json").read_text())
    (store / "calibrations" / "gb10--vllm.json").write_text(json.dumps({**stored, "efficiency": {**stored["efficiency"], "bandwidth": 50}}))
    impossible = arena("predict", "qwen3.6-35b-a3b", "--hardware", "gb10", "--output", str(store), "--workloads", "chat")
    assert impossible.returncode == 0 and "tier 0" in impossible.stdout  # 5,000 % of the bandwidth is no fit, it is a tampered file
    (store / "calibrations" / "gb10--vllm.json").write_text("{not json")
    damaged = arena("predict", "qwen3.6-35b-a3b", "--hardware", "gb10", "--output", str(store), "--workloads", "chat")
    assert damaged.returncode == 0 and "tier 0" in damaged.stdout
    (store / "calibrations" / "gb10--vllm.json").write_text("[1, 2]")  # JSON of another shape: was "internal error: AttributeError"
    listed = arena("predict", "qwen3.6-35b-a3b", "--hardware", "gb10", "--output", str(store), "--workloads", "chat")
    assert listed.returncode == 0 and "tier 0" in listed.stdout, listed.stderr
    runs = json.loads(arena("runs", "--output", str(store), "--json").stdout)
    run_id = next(run["run_id"] for run in runs if run["model"] == "qwen3.6-35b-a3b")
    card = arena("card", run_id, "--output", str(store), "--format", "json")
    lines = json.loads(card.stdout)["predictions"]
    closed = ["chat", "rag-8k", "long-output", "long-context-25k", "multi-turn"]
    assert [line["workload"] for line in lines if not line["open_loop"]] == closed
    assert {line["workload"] for line in lines if line["open_loop"]} == {"office-baseline", "sharegpt", "monday-peak"}  # the seed has no reasoning result of it
    assert all(line["tier"] == 1 and line["measured_tps"] and line["predicted_tps"] for line in lines)
    shown = flat(arena("card", run_id, "--output", str(store)).stdout)
    assert (
        "Predicted vs measured" in shown
        and "TTFT: the mean over a closed-loop workload's requests (as llama-benchy gives it), the p50 of an open-loop one's" in shown
    )
    board = json.loads(arena("leaderboard", "--output", str(store), "--prediction-error", "--json").stdout)
    assert len(board["rows"]) == 17 and {(r["workload"], r["metric"]) for r in board["prediction_error"]} >= {("chat", "tps"), ("chat", "ttft")}
    assert all(r["results"] == 17 for r in board["prediction_error"] if r["workload"] in closed)
    assert ("office-baseline", "output_tps") in {(r["workload"], r["metric"]) for r in board["prediction_error"]}
    assert arena("publish", str(site), "--output", str(store)).returncode == 0
    index = (site / "index.html").read_text()
    (page,) = [found for found in (site / "cards").glob("*.html") if run_id in found.read_text()]  # named from what it is
    assert "<h2>Prediction error ledger</h2>" in index and "Predicted vs measured" in page.read_text()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:  # CI installs it (scripts/install-test-browser.sh); test_site.py fails there without it
        artifacts = Path(__file__).resolve().parent.parent / "test-artifacts"
        artifacts.mkdir(exist_ok=True)
        shot = artifacts / "site-prediction-ledger.png"
        shot.unlink(missing_ok=True)
        flags = ["--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'chromium'}", "--window-size=1100,5200"]
        taken = subprocess.run([chromium, *flags, f"--screenshot={shot}", (site / "index.html").as_uri()], capture_output=True, text=True, timeout=120)
        assert taken.returncode == 0 and shot.stat().st_size > 10_000, taken.stderr[-2000:]


@pytest.mark.slow
def test_the_80_percent_interval_holds_80_percent_of_the_ledger(seed_store):
    """Each seed result predicted without its own run: its measured tokens/s and TTFT fall inside
    the predicted interval for 80 % ± 5 of the closed-loop results, and apart for 80 % ± 5 of the
    open-loop ones (the widths were set on this ledger: an in-sample check of the efficiencies'
    range on 85 results and of the open loop's further reach on 59, stated in docs/prediction-notes.md)."""
    from arena_core import ArenaHooks, make_plugin_manager
    from arena_core.results.cards import load_cards
    from arena_core.results.predictions import interval_coverage, ledger_of

    hooks = ArenaHooks(make_plugin_manager(autoload=False))
    cards, _ = load_cards(seed_store, hooks.registry)
    lines = ledger_of(seed_store, cards, hooks.registry, whole_store=True)  # the lines the template's ledger kept
    for metric, open_loop, least in (("tps", False, 80), ("ttft", False, 80), ("tps", True, 55), ("ttft", True, 55)):
        inside, judged = interval_coverage(lines, metric, open_loop=open_loop)
        assert judged >= least and 0.75 <= inside / judged <= 0.85, (metric, open_loop, inside, judged)


def test_the_fit_holds_the_prefill_toward_its_priors(registry, monkeypatch):
    """One run's TTFT far from what the priors say pulls the prefill's parameters away from
    them less with the prior's weight than without it: the weight is what keeps a fit to a few
    runs from following their noise (docs/prediction-notes.md, "The prior's weight")."""
    from arena_prediction import calibration
    from arena_prediction.calibration import Sample, fit, prior_distance
    from arena_prediction.simulator import prior_of
    from arena_prediction.workloads import closed_rounds

    model = registry.get("models", "qwen3.6-27b")
    machine = Machine.of(registry.get("hardware", "gb10"), model)
    chat = registry.get("workloads", "chat")
    prior = prior_of("vllm")
    rounds = tuple(closed_rounds(chat.scaled(0.05), model, machine, prior, VLLM_SCHEDULING))
    at_prior = Sample(run_id="r", workload="chat", rounds=rounds, machine=machine, tps=1.0, ttft_s=1.0)
    tps, ttft = at_prior.predicted(prior)
    sample = attrs.evolve(at_prior, tps=tps, ttft_s=ttft / 3)  # prefills three times faster than the priors say
    held = fit([sample], prior)
    monkeypatch.setattr(calibration, "PRIOR_WEIGHT", 0.0)
    free = fit([sample], prior)
    assert 0 < prior_distance(held, prior) < prior_distance(free, prior) / 2
    miss = {name: abs(math.log(sample.predicted(found)[1] / sample.ttft_s)) for name, found in (("held", held), ("free", free))}
    assert miss["free"] < miss["held"]  # the weight trades some fit to the one run for nearness to the priors


def test_a_mixture_of_experts_prefills_faster_the_larger_its_experts(registry):
    """One routed expert's parameters in one layer come from the parameter counts and the layout
    (the MoE layers of Nemotron-H are the layers that are neither Mamba nor attention); experts s
    times the reference's size prefill at s to the fitted exponent of the MoE share, never beyond
    a dense layer's share, and a dense model is untouched."""
    from arena_prediction.simulator import REFERENCE_EXPERT_PARAMS, expert_params, moe_layers

    sizes = {
        name: expert_params(registry.get("models", name))
        for name in ("qwen3.6-35b-a3b", "gemma-4-26b-a4b-it-bf16-v23", "nemotron-3-nano-omni-30b-a3b-bf16", "nemotron-3-super-120b-a12b-nvfp4")
    }
    # the configs' own figures: 3 x 2048 x 512, 3 x 2816 x 704, 2 x 2688 x 1856, 2 x 1024 x 2688
    published = {
        "qwen3.6-35b-a3b": 3.15e6,
        "gemma-4-26b-a4b-it-bf16-v23": 5.95e6,
        "nemotron-3-nano-omni-30b-a3b-bf16": 9.98e6,
        "nemotron-3-super-120b-a12b-nvfp4": 5.5e6,
    }
    for name, size in sizes.items():
        assert size == pytest.approx(published[name], rel=0.06), name
    assert moe_layers(registry.get("models", "nemotron-3-nano-omni-30b-a3b-bf16").architecture) == 23
    assert expert_params(registry.get("models", "qwen3.6-27b")) is None

    gb10 = registry.get("hardware", "gb10")
    omni, qwen = Machine.of(gb10, registry.get("models", "nemotron-3-nano-omni-30b-a3b-bf16")), Machine.of(gb10, registry.get("models", "qwen3.6-35b-a3b"))
    dense = Machine.of(gb10, registry.get("models", "qwen3.5-0.8b"))
    assert omni.expert_scale == pytest.approx(sizes["nemotron-3-nano-omni-30b-a3b-bf16"] / REFERENCE_EXPERT_PARAMS) and dense.expert_scale == 1.0
    flat, sized = Efficiency(compute=0.5, moe_compute=0.2), Efficiency(compute=0.5, moe_compute=0.2, moe_size_exponent=0.5)
    assert omni.compute_flops(sized) / omni.compute_flops(flat) == pytest.approx(omni.expert_scale**0.5)
    assert qwen.compute_flops(sized) == pytest.approx(qwen.compute_flops(flat), rel=0.05)  # the reference's size: as measured
    assert omni.compute_flops(attrs.evolve(sized, moe_size_exponent=1.0)) == dense.compute_flops(sized)  # capped at the dense share
    assert dense.compute_flops(sized) == dense.compute_flops(flat)


def test_the_fit_finds_how_the_moe_prefill_grows_with_the_experts_size(registry):
    """Two mixtures of experts, one with experts of the reference's size prefilling as the priors
    say and one with experts three times larger prefilling s^0.5 faster, each measured in ten
    runs: the fit's exponent comes out near 0.5 (it starts from 0: every size alike), and a fit of
    the first alone leaves it there."""
    from arena_prediction.calibration import Sample, fit
    from arena_prediction.simulator import prior_of
    from arena_prediction.workloads import closed_rounds

    gb10, rag, prior = registry.get("hardware", "gb10"), registry.get("workloads", "rag-8k").scaled(0.25), prior_of("vllm")
    samples = []
    for name, faster in (("qwen3.6-35b-a3b", False), ("nemotron-3-nano-omni-30b-a3b-bf16", True)):
        model = registry.get("models", name)
        machine = Machine.of(gb10, model)
        rounds = tuple(closed_rounds(rag, model, machine, prior, VLLM_SCHEDULING))
        truth = attrs.evolve(prior, moe_size_exponent=0.5) if faster else prior
        tps, ttft = Sample(run_id=name, workload="rag-8k", rounds=rounds, machine=machine, tps=1.0, ttft_s=1.0).predicted(truth)
        samples += [Sample(run_id=f"{name}-{run}", workload="rag-8k", rounds=rounds, machine=machine, tps=tps, ttft_s=ttft) for run in range(10)]
    assert prior.moe_size_exponent == 0.0
    assert fit(samples, prior).moe_size_exponent == pytest.approx(0.5, abs=0.15)
    assert fit(samples[:10], prior).moe_size_exponent == pytest.approx(0.0, abs=0.02)


def test_a_conversation_s_earlier_turns_are_prefilled_again_without_a_prefix_cache():
    """With the server's prefix cache a turn prefills its new tokens beside the cached history;
    without it, the whole conversation, each turn: the same tokens, tokenised alike."""
    from arena_core import ClosedLoopShape
    from arena_prediction.workloads import _closed_requests

    shape = ClosedLoopShape(prompt_tokens=100, generated_tokens=10, concurrency=2, turns=3, depth=50)
    kept, again = _closed_requests(shape), _closed_requests(shape, prefix_caching=False)
    assert [(r.prompt, r.cached) for r in (kept[0][0], kept[2][0])] == [(100, 50), (100, 270)]
    assert [(r.prompt, r.cached) for r in (again[0][0], again[2][0])] == [(150, 0), (370, 0)]
    assert [r.prompt + r.cached for round_ in kept for r in round_] == [r.prompt + r.cached for round_ in again for r in round_]
    one = ClosedLoopShape(prompt_tokens=100, generated_tokens=10, concurrency=2, depth=50)
    assert _closed_requests(one) == _closed_requests(one, prefix_caching=False)  # one turn: nothing kept either way


def test_a_chat_template_s_own_tokens_are_prefilled_with_each_request(registry):
    """Mistral Small 3.2's template adds a default system prompt of 634 tokens to a request without
    a system message. llama-benchy's prompt adaptation takes it out of the prompt it sends (down to
    one token), so a closed-loop request reaches the server at its stated length, or at the
    template's and one where that is longer; ``vllm bench serve`` sends its prompts as they are,
    and its total throughput counts them without the template."""
    from arena_core import ClosedLoopShape
    from arena_prediction.workloads import _closed_requests, open_run, open_simulation

    long_output = ClosedLoopShape(prompt_tokens=256, generated_tokens=8, concurrency=2)
    chat, history = attrs.evolve(long_output, prompt_tokens=1024), attrs.evolve(long_output, depth=4)
    assert [r.prompt for r in _closed_requests(long_output, template_tokens=634)[0]] == [635, 635]
    assert _closed_requests(chat, template_tokens=634) == _closed_requests(chat)  # longer than the template: as stated
    assert _closed_requests(history, template_tokens=634) == _closed_requests(history)  # a system message of its own: no default one
    mistral = registry.get("models", "mistral-small-3.2-24b-it-nvfp4")
    plain = attrs.evolve(mistral, template_tokens=0)
    assert mistral.template_tokens == 634
    hardware, sharegpt = registry.get("hardware", "gb10"), registry.get("workloads", "sharegpt").scaled(0.1)
    machine = Machine.of(hardware, mistral)
    with_template = open_simulation(sharegpt, mistral, machine, Efficiency(), VLLM_SCHEDULING)
    without = open_simulation(sharegpt, plain, machine, Efficiency(), VLLM_SCHEDULING)
    assert [s.request.prompt - 634 for s in with_template.served] == [s.request.prompt for s in without.served]
    assert sorted(s.ttft_s for s in with_template.served)[len(without.served) // 2] > 2 * sorted(s.ttft_s for s in without.served)[len(without.served) // 2]
    # the site's total tok/s counts the dataset's prompts, never the template's
    from arena_core import peak_concurrency

    served = with_template.served
    span = max(s.end_s for s in served) - min(s.request.arrival_s for s in served)
    dataset_tokens = sum(s.request.prompt - 634 + s.request.output for s in served)
    peak = peak_concurrency([(s.sent_s, s.end_s) for s in served])
    assert open_run(sharegpt, mistral, machine, Efficiency(), VLLM_SCHEDULING).site_tps == pytest.approx(dataset_tokens / span / peak)
    notes = predict(registry.get("workloads", "long-output"), mistral, hardware, scheduling=VLLM_SCHEDULING).notes
    assert any("chat template adds 634 tokens" in note for note in notes)


def test_the_p90_of_prediction_errors_is_the_nearest_rank():
    """Of 85 errors the 77th smallest (⌈0.9 · 85⌉), so at most 8 lie above a p90 goal; of 10 the 9th."""
    assert nearest_rank(list(range(1, 86)), 90) == 77 and nearest_rank([5, 1, 4, 2, 3, 10, 9, 8, 7, 6], 90) == 9
    assert nearest_rank([3.0], 90) == 3.0 and nearest_rank([1, 2], 50) == 1
    with pytest.raises(ValueError):
        nearest_rank([], 90)

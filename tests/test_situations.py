"""A calibration cannot make a prediction worse where the leave-outs say it does: the weight of
the fit in each situation is the largest at which tier 1 is no worse than tier 0, and a
prediction in a situation of weight 0 is the priors' own. (The four leave-outs on the seed
cohort, and the printed error of each situation, are checked in
``tests/test_simulator.py::test_calibrate_predict_and_the_error_ledger_on_the_seed_cohort``.)"""

from __future__ import annotations

import attrs
import pytest

from arena_core import Calibration, LedgerLine, PredictionSetup
from arena_prediction import situations
from arena_prediction.leave_out import architecture_kind, family_of, version_said
from arena_prediction.predictor import StepSimulator
from arena_prediction.simulator import prior_of


def _line(run: str, predicted: float, measured: float, tier: int) -> LedgerLine:
    interval = (predicted * 0.9, predicted * 1.1)
    return LedgerLine(
        run_id=run,
        workload="chat",
        tier=tier,
        predicted_tps=predicted,
        measured_tps=measured,
        predicted_ttft_s=1.0,
        measured_ttft_s=1.0,
        predicted_tps_interval=interval,
        predicted_ttft_interval_s=(0.9, 1.1),
    )


def _calibration(fitted, situations, fitted_to) -> Calibration:
    """A stored fit of ``fitted`` efficiencies to two runs, with its situations' figures."""
    return Calibration(
        hardware="gb10",
        backend="vllm",
        efficiency=attrs.asdict(fitted),
        runs=2,
        results=10,
        fitted_at="2026-12-08",
        predictor="step-simulator",
        situations=situations,
        fitted_to=fitted_to,
    )


def test_the_fit_is_trusted_only_as_far_as_its_leave_out_is_no_worse_than_the_priors(registry, monkeypatch):
    """At weight 1 the fit misses a new family by 30 %, the priors by 10 %: the weight falls
    until tier 1 is no worse (here 0.5, 5 %)."""
    misses = {1.0: 1.3, 0.75: 1.2, 0.5: 1.05, 0.25: 1.1, 0.0: 1.1}

    def fake_ledger(cards, registry, only=None, *, calibrated=True, fits=None, leave="run", weight=1.0):
        if not calibrated:
            return [_line(f"r{i}", 110.0, 100.0, 0) for i in range(10)]
        miss = misses[weight] if leave == "family" else 1.0
        return [_line(f"r{i}", 100.0 * miss, 100.0, 1) for i in range(10)]

    monkeypatch.setattr(situations, "ledger", fake_ledger)
    measured = situations.measure([], registry)
    assert set(measured) == {"run", "model", "family", "engine-version", "architecture"}
    assert measured["family"]["weight"] == 0.5 and measured["family"]["tps_median"] == 5.0 and measured["family"]["tier0_tps_median"] == 10.0
    assert measured["run"]["weight"] == 1.0
    # the interval widened until it holds the results it missed (every result 5 % off, the interval ±10 %: already)
    assert measured["family"]["coverage"] == 100 and measured["family"]["widening"] == 1.0


def test_a_situation_of_weight_0_predicts_with_the_priors(registry):
    """A fit the leave-family-out says not to trust, for a model of no family it learnt from:
    the prediction is tier 0's, figure for figure, and its interval is widened as stated."""
    model, hardware, backend = registry.get("models", "gemma-3-270m"), registry.get("hardware", "gb10"), registry.get("backends", "vllm")
    fitted = attrs.evolve(prior_of("vllm"), bandwidth=0.95, compute=0.9)
    calibration = _calibration(
        fitted,
        {"run": {"weight": 1.0, "widening": 1.0}, "family": {"weight": 0.0, "widening": 1.5, "tps_median": 12.0, "ttft_median": 20.0}},
        {"models": ("qwen3.6-27b",), "families": ("qwen3.6",), "engine-versions": ("0.20.1",), "architectures": ("dense", "hybrid", "moe")},
    )
    simulator = StepSimulator(registry)
    workload = registry.get("workloads", "chat")
    outside = simulator.predict(workload, PredictionSetup(model=model, hardware=hardware, backend=backend, calibration=calibration))
    priors = simulator.predict(workload, PredictionSetup(model=model, hardware=hardware, backend=backend))
    assert outside.central == priors.central
    assert outside.low.per_user_tps == pytest.approx(priors.central.per_user_tps * (priors.low.per_user_tps / priors.central.per_user_tps) ** 1.5)
    said = simulator.situation_line(PredictionSetup(model=model, hardware=hardware, backend=backend, calibration=calibration))
    assert (
        said
        == "predicted for a model outside the fit; median error there: 12.0 % tok/s, 20.0 % TTFT (leave-family-out); the fit trusted 0% of the way from the priors there"
    )
    # a model the fit learnt from is predicted with the fit itself
    known = registry.get("models", "qwen3.6-27b")
    inside = simulator.predict(workload, PredictionSetup(model=known, hardware=hardware, backend=backend, calibration=calibration))
    assert inside.central != simulator.predict(workload, PredictionSetup(model=known, hardware=hardware, backend=backend)).central


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("qwen3.5-0.8b", "qwen3.5"),
        ("qwen-3.5-2b-bf16", "qwen3.5"),
        ("gemma-4-26b-a4b-it-nvfp4-v23", "gemma4"),
        ("nemotron-3-nano-omni-30b-a3b-fp8", "nemotron3-nano-omni"),
    ],
)
def test_a_models_family_is_its_name_up_to_its_size(name, family):
    assert family_of(name) == family


def test_kinds_and_versions_are_read_as_a_situation_compares_them(registry):
    assert architecture_kind(registry.get("models", "qwen3.6-27b")) == "hybrid"  # Gated DeltaNet layers
    assert architecture_kind(registry.get("models", "gemma-3-270m")) == "dense"
    assert architecture_kind(None) == "unknown"
    assert version_said("v0.23.0-aarch64-cu129-ubuntu2404") == "0.23.0" and version_said("cu130-nightly") == "cu130-nightly"


def test_a_stored_weight_or_widening_out_of_range_is_none(registry):
    """A calibration file is outside data: a weight of 5 would take the fit past itself, a power
    of 10^9 make an interval of nothing."""
    model, hardware, backend = registry.get("models", "gemma-3-270m"), registry.get("hardware", "gb10"), registry.get("backends", "vllm")
    fitted = attrs.evolve(prior_of("vllm"), bandwidth=0.95)
    calibration = _calibration(fitted, {"family": {"weight": 5.0, "widening": 1e9}}, {"models": ("qwen3.6-27b",), "families": ("qwen3.6",)})
    simulator = StepSimulator(registry)
    setup = PredictionSetup(model=model, hardware=hardware, backend=backend, calibration=calibration)
    assert simulator.efficiency(setup) == prior_of("vllm")  # the cautious reading: the priors
    prediction = simulator.predict(registry.get("workloads", "chat"), setup)
    assert prediction.low.per_user_tps < prediction.central.per_user_tps < prediction.high.per_user_tps < 10 * prediction.central.per_user_tps


def test_a_situation_the_store_cannot_measure_is_predicted_at_the_priors_and_says_so(registry, monkeypatch):
    """A store of one family has no family to leave out: a model of a new family gets the
    priors, not a fit nothing showed it can carry, and its line says the error was not measured."""

    def one_family(cards, registry, only=None, *, calibrated=True, fits=None, leave="run", weight=1.0):
        if leave == "family":
            return []
        return [_line(f"r{i}", 100.0, 100.0, 0 if not calibrated else 1) for i in range(10)]

    monkeypatch.setattr(situations, "ledger", one_family)
    measured = situations.measure([], registry)
    assert measured["family"] == situations.UNMEASURED and measured["run"]["weight"] == 1.0
    assert "  leave-family-out: not measured (nothing to leave out: the store has one of it); predicted there at the priors" in situations.situation_lines(
        measured
    )
    model, hardware, backend = registry.get("models", "gemma-3-270m"), registry.get("hardware", "gb10"), registry.get("backends", "vllm")
    calibration = _calibration(
        attrs.evolve(prior_of("vllm"), bandwidth=0.95), measured, {"models": ("qwen3.6-27b",), "families": ("qwen3.6",), "architectures": ("dense", "hybrid")}
    )
    simulator = StepSimulator(registry)
    setup = PredictionSetup(model=model, hardware=hardware, backend=backend, calibration=calibration)
    assert simulator.efficiency(setup) == prior_of("vllm")
    assert "median error there: not measured (leave-family-out: the fit's store had nothing to leave out)" in simulator.situation_line(setup)

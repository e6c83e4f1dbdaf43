"""Where a calibration is used, and what it is worth there (issue 60).

A prediction is in one of four situations, each measured by a leave-out kind of the ledger
(:mod:`arena_prediction.leave_out`): a model the fit learnt from (``run``), a model of no family
it learnt from (``family``), an engine version it did not learn from (``engine-version``), an
architecture kind it did not learn from (``architecture``). ``arena calibrate`` measures each:
tier 0 and tier 1 on the same results, and

- the **weight**: how far tier 1 goes from the priors toward the fit there, the largest of
  :data:`WEIGHTS` at which tier 1 is no worse than tier 0 (median and p90 of closed- and
  open-loop tokens/s and TTFT): a calibration cannot make that situation's prediction worse;
- the **widening**: the power its 80 % interval is raised to (around the prediction, in log
  space) so that it holds 80 % of that leave-out's results, the nearest of :data:`WIDENINGS`
  (in-sample: set on the ledger it is judged on, as the interval's own width is);
- its **error** there: the median absolute % error of tokens/s and TTFT, which ``arena
  predict`` prints for a prediction in that situation.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

import attrs

from arena_core import Figures, LedgerLine, ModelCard, ModelSpec, Registry, WorkloadPrediction, nearest_rank
from arena_prediction.calibration import model_of
from arena_prediction.leave_out import KINDS, architecture_kind, engine_version, family_of, version_said
from arena_prediction.ledger import ledger

#: The weights tried, most trust in the fit first (1: the fit; 0: the priors).
WEIGHTS = (1.0, 0.75, 0.5, 0.25, 0.0)
#: The interval's widenings tried (1: as the efficiencies' spread gives it).
WIDENINGS = tuple(round(1 + step / 10, 1) for step in range(31))
#: The figures judged: (metric, open loop).
JUDGED = (("tps", False), ("ttft", False), ("tps", True), ("ttft", True))
#: How a prediction's line names each leave-out kind whose error it prints.
LABELS = {"run": "leave-one-run-out", "family": "leave-family-out", "engine-version": "new engine version", "architecture": "new architecture kind"}


def _errors(lines: Sequence[LedgerLine], metric: str, open_loop: bool) -> list[float]:
    return [e for line in lines if line.open_loop == open_loop and (e := line.error(metric)) is not None]


def _no_worse(fitted: Sequence[LedgerLine], priors: Sequence[LedgerLine]) -> bool:
    for metric, loop in JUDGED:
        mine, theirs = _errors(fitted, metric, loop), _errors(priors, metric, loop)
        if mine and theirs and (statistics.median(mine) > statistics.median(theirs) or nearest_rank(mine, 90) > nearest_rank(theirs, 90)):
            return False
    return True


def widened(line: LedgerLine, power: float) -> LedgerLine:
    """``line`` with its intervals raised to ``power`` around its predictions, in log space."""

    def wider(interval: tuple[float, float] | None, centre: float | None) -> tuple[float, float] | None:
        if interval is None or not centre or min(interval) <= 0:
            return interval
        return (centre * (interval[0] / centre) ** power, centre * (interval[1] / centre) ** power)

    return attrs.evolve(
        line,
        predicted_tps_interval=wider(line.predicted_tps_interval, line.predicted_tps),
        predicted_ttft_interval_s=wider(line.predicted_ttft_interval_s, line.predicted_ttft_s),
    )


def _coverage(lines: Sequence[LedgerLine], power: float) -> float:
    judged = [inside for line in lines for metric in ("tps", "ttft") if (inside := widened(line, power).inside(metric)) is not None]
    return 100 * sum(judged) / len(judged) if judged else math.nan


def _figures(lines: Sequence[LedgerLine], prefix: str) -> dict[str, float]:
    found = {}
    for metric, loop in JUDGED:
        if errors := _errors(lines, metric, loop):
            name = f"{prefix}{'open_' if loop else ''}{metric}"
            found[f"{name}_median"], found[f"{name}_p90"] = round(statistics.median(errors), 1), round(nearest_rank(errors, 90), 1)
    return found


def measure(cards: Sequence[ModelCard], registry: Registry) -> dict[str, dict[str, float]]:
    """Each leave-out kind's weight, widening, tier 0 and tier 1 errors and coverage, over ``cards``
    (one hardware and engine's runs)."""
    priors = ledger(cards, registry, calibrated=False)
    fits: dict = {}  # a fit per set of runs learnt from, shared by the kinds and the weights
    found = {}
    for kind in KINDS:
        for weight in WEIGHTS:
            fitted = [line for line in ledger(cards, registry, leave=kind, weight=weight, fits=fits) if line.tier == 1]
            judged = {(line.run_id, line.workload) for line in fitted}
            same = [line for line in priors if (line.run_id, line.workload) in judged]
            if _no_worse(fitted, same):
                break
        if not fitted:
            continue
        power = min(WIDENINGS, key=lambda p: (abs(_coverage(fitted, p) - 80), p))
        found[kind] = {
            "weight": weight,
            "widening": power,
            "results": float(len(judged)),
            "coverage": round(_coverage(fitted, power)),
            **_figures(fitted, ""),
            **_figures(same, "tier0_"),
        }
    return found


def fitted_to(cards: Sequence[ModelCard], registry: Registry) -> dict[str, tuple[str, ...]]:
    """What a calibration learnt from, by what a situation is judged on."""
    models = [model_of(card, registry) for card in cards]
    return {
        "models": tuple(sorted({card.model for card in cards})),
        "families": tuple(sorted({family_of(card.model) for card in cards})),
        "engine-versions": tuple(sorted({engine_version(card) for card in cards})),
        "architectures": tuple(sorted({architecture_kind(model) for model in models})),
    }


def situations_of(model: ModelSpec, version: str, learnt: Mapping[str, Sequence[str]]) -> list[str]:
    """The leave-out kinds a prediction of ``model`` served by engine ``version`` ("" unknown) is in."""
    kinds = ["run" if model.name in learnt.get("models", ()) or family_of(model.name) in learnt.get("families", ()) else "family"]
    if architecture_kind(model) not in learnt.get("architectures", ()):
        kinds.append("architecture")
    if version and version_said(version) not in learnt.get("engine-versions", ()):
        kinds.append("engine-version")
    return kinds


def widened_prediction(prediction: WorkloadPrediction, power: float) -> WorkloadPrediction:
    """``prediction`` with its interval raised to ``power`` around its central figures, in log space."""
    if power == 1:
        return prediction

    def end(side: Figures) -> Figures:
        def wider(value: float | None, centre: float | None) -> float | None:
            return centre * (value / centre) ** power if value and centre and value > 0 else value

        central = prediction.central
        return attrs.evolve(
            side,
            per_user_tps=wider(side.per_user_tps, central.per_user_tps),
            total_tps=wider(side.total_tps, central.total_tps),
            ttft_p50_s=wider(side.ttft_p50_s, central.ttft_p50_s),
            site_tps=wider(side.site_tps, central.site_tps),
        )

    return attrs.evolve(prediction, low=end(prediction.low), high=end(prediction.high))


def situation_lines(measured: Mapping[str, Mapping[str, float]]) -> list[str]:
    """The ledger of each leave-out kind, as ``arena calibrate`` prints it."""
    lines = ["where a prediction is used: each leave-out's median / p90 absolute % error at tier 1 (tier 0 on the same results):"]
    for kind, m in measured.items():
        cells = []
        for name, said in (("tps", "tok/s"), ("ttft", "TTFT"), ("open_tps", "open-loop tok/s"), ("open_ttft", "open-loop TTFT")):
            if f"{name}_median" in m:
                cells.append(f"{said} {m[f'{name}_median']:.1f} / {m[f'{name}_p90']:.1f} % ({m[f'tier0_{name}_median']:.1f} / {m[f'tier0_{name}_p90']:.1f} %)")
        trust = "the fit trusted whole" if m["weight"] == 1 else f"the fit trusted {m['weight']:.0%} of the way from the priors"
        lines.append(f"  {LABELS[kind]} ({m['results']:.0f} results): " + "; ".join(cells))
        lines.append(f"    {trust}; the 80 % interval holds {m['coverage']:.0f} % (widened ×{m['widening']:g})")
    return lines

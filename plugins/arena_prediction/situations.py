"""Where a calibration is used, and what it is worth there.

A prediction is in one or more situations, each measured by a leave-out kind of the ledger
(:mod:`arena_prediction.leave_out`): a model the fit learnt from (``run``), a new model of a
family it learnt from (``model``), a model of no family it learnt from (``family``), an engine
version it did not learn from (``engine-version``), an architecture kind it did not learn from
(``architecture``). ``arena calibrate`` measures each on the results tier 0 and tier 1 both
predict, and stores

- the **weight**: how far tier 1 goes from the priors toward the fit there, the largest of
  :data:`WEIGHTS` at which tier 1 is no worse than tier 0 (median and p90 of closed- and
  open-loop tokens/s and TTFT): a calibration cannot make that situation's prediction worse.
  A kind the store cannot measure (one family in it, say) has weight 0: the priors;
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

from arena_core import Figures, FitCache, LedgerLine, ModelCard, ModelSpec, Registry, WorkloadPrediction, nearest_rank
from arena_prediction.calibration import model_of
from arena_prediction.leave_out import KINDS, architecture_kind, engine_version, family_of, version_said
from arena_prediction.ledger import ledger

#: The weights tried, most trust in the fit first (1: the fit; 0: the priors).
WEIGHTS = (1.0, 0.75, 0.5, 0.25, 0.0)
#: The interval's powers tried (1: as the efficiencies' spread gives it; below 1 narrower).
WIDENINGS = tuple(round(0.5 + step / 10, 1) for step in range(36))
#: The figures judged, by name: (metric, open loop, how a line says it).
JUDGED = {
    "tps": ("tps", False, "tok/s"),
    "ttft": ("ttft", False, "TTFT"),
    "open_tps": ("tps", True, "open-loop tok/s"),
    "open_ttft": ("ttft", True, "open-loop TTFT"),
}
#: How a line names each leave-out kind.
LABELS = {
    "run": "leave-one-run-out",
    "model": "leave-model-out",
    "family": "leave-family-out",
    "engine-version": "new engine version",
    "architecture": "new architecture kind",
}
#: What a situation the store cannot measure says, and why.
UNMEASURED = {"weight": 0.0, "widening": 1.0, "results": 0.0}


def _errors(lines: Sequence[LedgerLine], metric: str, open_loop: bool) -> list[float]:
    return [e for line in lines if line.open_loop == open_loop and (e := line.error(metric)) is not None]


def _no_worse(fitted: Sequence[LedgerLine], priors: Sequence[LedgerLine]) -> bool:
    for metric, loop, _ in JUDGED.values():
        mine, theirs = _errors(fitted, metric, loop), _errors(priors, metric, loop)
        if mine and theirs and (statistics.median(mine) > statistics.median(theirs) or nearest_rank(mine, 90) > nearest_rank(theirs, 90)):
            return False
    return True


def wider(value: float | None, centre: float | None, power: float) -> float | None:
    """An interval's end ``value`` raised to ``power`` around ``centre``, in log space."""
    return centre * (value / centre) ** power if value and centre and value > 0 and centre > 0 else value


def widened(line: LedgerLine, power: float) -> LedgerLine:
    """``line`` with its intervals raised to ``power`` around its predictions."""

    def pair(interval: tuple[float, float] | None, centre: float | None) -> tuple[float, float] | None:
        return None if interval is None else (wider(interval[0], centre, power) or interval[0], wider(interval[1], centre, power) or interval[1])

    return attrs.evolve(
        line,
        predicted_tps_interval=pair(line.predicted_tps_interval, line.predicted_tps),
        predicted_ttft_interval_s=pair(line.predicted_ttft_interval_s, line.predicted_ttft_s),
    )


def _coverage(lines: Sequence[LedgerLine], power: float) -> float:
    judged = [inside for line in lines for metric in ("tps", "ttft") if (inside := widened(line, power).inside(metric)) is not None]
    return 100 * sum(judged) / len(judged) if judged else math.nan


def _figures(lines: Sequence[LedgerLine], prefix: str) -> dict[str, float]:
    found = {}
    for name, (metric, loop, _) in JUDGED.items():
        if errors := _errors(lines, metric, loop):
            found[f"{prefix}{name}_median"], found[f"{prefix}{name}_p90"] = round(statistics.median(errors), 1), round(nearest_rank(errors, 90), 1)
    return found


def _both(fitted: Sequence[LedgerLine], priors: Sequence[LedgerLine]) -> tuple[list[LedgerLine], list[LedgerLine]]:
    """The results both tiers predicted (a simulation one tier cannot finish has no line), each tier's lines of them."""
    key = lambda line: (line.run_id, line.workload, line.open_loop)  # noqa: E731
    shared = {key(line) for line in fitted} & {key(line) for line in priors}
    return [line for line in fitted if key(line) in shared], [line for line in priors if key(line) in shared]


def measure(cards: Sequence[ModelCard], registry: Registry, *, fits: FitCache | None = None) -> dict[str, dict[str, float]]:
    """Each leave-out kind's weight, widening, tier 0 and tier 1 errors and coverage, over ``cards``
    (one hardware and engine's runs). ``fits``: the store's (its ledger's leave-one-run-out fits
    are this one's); a fit per set of runs learnt from, shared by the kinds and the weights."""
    priors = ledger(cards, registry, calibrated=False)
    fits = {} if fits is None else fits
    found: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        for weight in WEIGHTS:
            fitted, same = _both([line for line in ledger(cards, registry, leave=kind, weight=weight, fits=fits) if line.tier == 1], priors)
            if not fitted or _no_worse(fitted, same):
                break
        if not fitted:  # nothing to leave out (one family in the store, say): the priors there
            found[kind] = dict(UNMEASURED)
            continue
        power = min(WIDENINGS, key=lambda p: (abs(_coverage(fitted, p) - 80) if not math.isnan(_coverage(fitted, p)) else 0, abs(p - 1)))
        coverage = _coverage(fitted, power)
        found[kind] = {
            "weight": weight,
            "widening": power,
            "results": float(len({(line.run_id, line.workload) for line in fitted})),
            **({"coverage": round(coverage)} if not math.isnan(coverage) else {}),
            **_figures(fitted, ""),
            **_figures(same, "tier0_"),
        }
    return found


def fitted_to(cards: Sequence[ModelCard], registry: Registry) -> dict[str, tuple[str, ...]]:
    """What a calibration learnt from (``cards``: the runs whose results it was fitted to), by
    what a situation is judged on; an architecture it could not read is none learnt."""
    kinds = {architecture_kind(model_of(card, registry)) for card in cards} - {"unknown"}
    return {
        "models": tuple(sorted({card.model for card in cards})),
        "families": tuple(sorted({family_of(card.model) for card in cards})),
        "engine-versions": tuple(sorted({engine_version(card) for card in cards})),
        "architectures": tuple(sorted(kinds)),
    }


def situations_of(model: ModelSpec, version: str, learnt: Mapping[str, Sequence[str]]) -> list[str]:
    """The leave-out kinds a prediction of ``model`` served by engine ``version`` ("" unknown) is in."""
    if model.name in learnt.get("models", ()):
        kinds = ["run"]
    else:
        kinds = ["model" if family_of(model.name) in learnt.get("families", ()) else "family"]
    if architecture_kind(model) not in learnt.get("architectures", ()):
        kinds.append("architecture")
    if version and version_said(version) not in learnt.get("engine-versions", ()):
        kinds.append("engine-version")
    return kinds


def error_cells(measured: Mapping[str, float], names: Sequence[str], *, tier0: bool = False) -> list[str]:
    """The median (and, with ``tier0``, p90 and tier 0's) errors a situation has, one cell each."""
    cells = []
    for name in names:
        said = JUDGED[name][2]
        if f"{name}_median" not in measured:
            continue
        cell = f"{measured[f'{name}_median']:.1f}"
        if tier0:
            cell += f" / {measured[f'{name}_p90']:.1f} %"
            if f"tier0_{name}_median" in measured:
                cell += f" ({measured[f'tier0_{name}_median']:.1f} / {measured[f'tier0_{name}_p90']:.1f} %)"
            cells.append(f"{said} {cell}")
        else:
            cells.append(f"{cell} % {said}")
    return cells


def situation_lines(measured: Mapping[str, Mapping[str, float]]) -> list[str]:
    """The ledger of each leave-out kind, as ``arena calibrate`` prints it."""
    lines = ["where a prediction is used: each leave-out's median / p90 absolute % error at tier 1 (tier 0 on the same results):"]
    for kind, m in measured.items():
        if not m.get("results"):
            lines.append(f"  {LABELS[kind]}: not measured (nothing to leave out: the store has one of it); predicted there at the priors")
            continue
        lines.append(f"  {LABELS[kind]} ({m['results']:.0f} results): " + "; ".join(error_cells(m, list(JUDGED), tier0=True)))
        trust = "the fit trusted whole" if m["weight"] == 1 else f"the fit trusted {m['weight']:.0%} of the way from the priors"
        held = f"the 80 % interval holds {m['coverage']:.0f} % (its power ×{m['widening']:g})" if "coverage" in m else "no interval to judge"
        lines.append(f"    {trust}; {held}")
    return lines


def widened_prediction(prediction: WorkloadPrediction, power: float) -> WorkloadPrediction:
    """``prediction`` with its interval raised to ``power`` around its central figures."""
    if power == 1:
        return prediction

    def end(side: Figures) -> Figures:
        central = prediction.central
        return attrs.evolve(
            side,
            per_user_tps=wider(side.per_user_tps, central.per_user_tps, power),
            total_tps=wider(side.total_tps, central.total_tps, power),
            ttft_p50_s=wider(side.ttft_p50_s, central.ttft_p50_s, power),
            site_tps=wider(side.site_tps, central.site_tps, power),
        )

    return attrs.evolve(prediction, low=end(prediction.low), high=end(prediction.high))

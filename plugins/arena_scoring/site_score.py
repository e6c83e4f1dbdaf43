"""The seed site's own score, ``arena-site`` (``shared/spec/scoring.md`` section A), as a plain class.

    from arena_scoring import SiteScorer
    SiteScorer(preset="batch").score_cohort(cards)     # {run_id: Score}

Cohort-relative: score = wq·Q + wg·G + we·E, each component a percentage of the best value in the
cohort (the runs ranked together). Q is the mean of the published quality scores (a score not
published is left out); G the throughput as the site counts it -- closed-loop workloads the total
decode tokens/s at c = 10, open-loop ones the total token throughput divided by the peak number of
concurrent requests -- for the preset's workload, or the mean over the measured workloads (the
aggregate, and a model without the preset's workload); E = G ÷ model memory in GB. No latency
term. A run without quality scores or memory is listed unranked, with what is missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from attrs import frozen

from arena_core import ModelCard, Score, UnknownNameError, publishable
from arena_scoring.arena_score import SUITE

VERSION = "arena-site/1"


@frozen(kw_only=True)
class Preset:
    """Weights of quality, throughput and efficiency, and the workload G is read from (None: all)."""

    quality_weight: float
    throughput_weight: float
    efficiency_weight: float
    workload: str | None


PRESETS: dict[str, Preset] = {
    "aggregate": Preset(quality_weight=0.7, throughput_weight=0.2, efficiency_weight=0.1, workload=None),
    "chat": Preset(quality_weight=0.6, throughput_weight=0.3, efficiency_weight=0.1, workload="chat"),
    "agent": Preset(quality_weight=0.7, throughput_weight=0.2, efficiency_weight=0.1, workload="long-output"),
    "batch": Preset(quality_weight=0.2, throughput_weight=0.7, efficiency_weight=0.1, workload="rag-8k"),
    "reasoning": Preset(quality_weight=0.6, throughput_weight=0.3, efficiency_weight=0.1, workload="reasoning"),
}


def _quality(card: ModelCard) -> float | None:
    """Q: the mean of the published scores, else of the figures measured on the served model."""
    values, _ = card.quality_basis()
    return sum(values) / len(values) if values else None


def _relative(value: float | None, best: float | None) -> float | None:
    """``value`` as a percentage of the cohort's best; 0 where every run measured 0 (a quality of
    0 % is a figure, not a missing one)."""
    if value is None or best is None:
        return None
    return 100 * value / best if best else 0.0


def _written_out(preset: Preset, part: Mapping[str, float | None], best: Mapping[str, float | None], relative: Mapping[str, float | None], value: float) -> str:
    """The score's arithmetic: each weight times its part as a percentage of the cohort's best,
    then each part and the best it is measured against."""
    weights = {"Q": preset.quality_weight, "G": preset.throughput_weight, "E": preset.efficiency_weight}
    terms = " + ".join(f"{weights[key]:g} × {key} {relative[key]:.2f}" for key in ("Q", "G", "E"))
    units = {"Q": "", "G": " tok/s", "E": " tok/s/GB"}
    against = "; ".join(f"{key} = 100 × {part[key]:.4g} / {best[key]:.4g}{units[key]} (the cohort's best)" for key in ("Q", "G", "E"))
    exact = sum(weights[key] * relative[key] for key in ("Q", "G", "E"))  # type: ignore[operator]
    return f"{terms} = {exact:.2f} → {value:.1f}, where {against}"


class SiteScorer:
    """The seed site's score under one preset, over a cohort of cards."""

    name = "arena-site"

    def __init__(self, preset: str = "aggregate") -> None:
        if preset not in PRESETS:
            raise UnknownNameError("scoring profile", preset, PRESETS)
        self.profile_name = preset
        self.preset = PRESETS[preset]

    def throughput(self, card: ModelCard) -> tuple[float | None, list[str]]:
        """G of ``card`` under this preset, and notes on what it could not use."""
        notes, figures = [], {}
        for name in SUITE:
            line = card.workload(name)
            if line is None:
                continue
            if not line.valid:
                notes.append(f"{name}: invalid result, left out")
            elif (value := line.site_tps) is None:
                notes.append(f"{name}: no throughput figure as the site counts it, left out")
            else:
                figures[name] = value
        mean = sum(figures.values()) / len(figures) if figures else None
        wanted = self.preset.workload
        if wanted is not None and wanted not in figures and mean is not None:
            notes.append(f"{wanted} not measured: G is the mean over the measured workloads")
        return (figures[wanted] if wanted in figures else mean), notes

    @staticmethod
    def measured(card: ModelCard) -> set[str]:
        """The workloads of the suite with a valid result on ``card``."""
        return {name for name in SUITE if (line := card.workload(name)) is not None and line.valid}

    def score(self, card: ModelCard) -> Score:
        """The score of ``card`` in a cohort of itself alone (each component its own maximum)."""
        return self.score_cohort([card])[card.run_id]

    def score_cohort(self, cards: Sequence[ModelCard]) -> dict[str, Score]:
        """Every card's score relative to the best of ``cards``, by run id."""
        parts = {card.run_id: self._parts(card) for card in cards}
        best = {key: max((p[key] for p, _ in parts.values() if p[key] is not None), default=None) for key in ("Q", "G", "E")}
        return {card.run_id: self._score(card, *parts[card.run_id], best, len(cards)) for card in cards}

    def _parts(self, card: ModelCard) -> tuple[Mapping[str, float | None], list[str]]:
        """Q, G and E of ``card`` before the cohort makes them relative, and notes on G."""
        throughput, notes = self.throughput(card)
        memory = card.model_memory_gb
        efficiency = throughput / memory if throughput is not None and memory else None
        return {"Q": _quality(card), "G": throughput, "E": efficiency}, notes

    def _score(self, card: ModelCard, part: Mapping[str, float | None], notes: list[str], best: Mapping[str, float | None], cohort: int) -> Score:
        notes = [*notes]
        notes.append(f"cohort: {cohort} run{'s' if cohort != 1 else ''} ranked together (each component relative to its best)")
        missing = tuple(
            what for what, key in (("quality", "Q"), ("throughput", "G"), ("model memory", "E")) if part[key] is None and not (key == "E" and part["G"] is None)
        )
        preset = self.preset
        unmeasured = preset.workload if preset.workload is not None and part["G"] is not None and preset.workload not in self.measured(card) else ""
        if card.model_memory_estimated and part["E"] is not None:
            notes.append(f"E from the model's estimated memory, {card.model_memory_gb:g} GB ({card.model_memory_source})")
        relative = {key: _relative(part[key], best[key]) for key in ("Q", "G", "E")}
        value = None
        arithmetic = ""
        if None not in relative.values():
            value = round(preset.quality_weight * relative["Q"] + preset.throughput_weight * relative["G"] + preset.efficiency_weight * relative["E"], 1)
            arithmetic = _written_out(preset, part, best, relative, value)
        else:
            notes.append("not ranked: " + ", ".join(missing) + " missing")
        scaled = sorted({line.scale for line in card.workloads if line.scale != 1.0})
        if scaled:
            notes.append("scaled run (x" + ", x".join(f"{s:g}" for s in scaled) + "): not comparable with full-size runs")
        _, source = card.quality_basis()
        if source == "measured":
            notes.append("Q measured on the served model (no published quality)")
        return Score(
            version=VERSION,
            profile=self.profile_name,
            value=value,
            low=value,
            high=value,
            quality=part["Q"],
            performance=relative["G"] or 0.0,
            per_workload={line.name: round(g, 2) for line in card.workloads if line.name in SUITE and (g := line.site_tps) is not None},
            missing=missing,
            publishable=publishable(card, value, SUITE),
            notes=tuple(notes),
            quality_source=source or "published",
            arithmetic=arithmetic,
            unmeasured_focus=unmeasured,
            formula=f"{preset.quality_weight:g} Q + {preset.throughput_weight:g} G + {preset.efficiency_weight:g} E; G "
            + (f"on {preset.workload}" if preset.workload else "the mean over the workloads measured"),
        )

"""The Arena score, version 1 (``shared/spec/scoring.md``), as plain classes.

    from arena_scoring import ArenaScorer
    ArenaScorer(profile="agent").score(card)      # card: arena_core.ModelCard

Quality Q is the mean of the published quality scores (a score not published is left out, never
0). Performance P is the weighted mean over its nine workloads (:data:`SUITE`, whatever else is
registered) of
``100 * (a * speed + (1 - a) * latency)``, speed on a log scale from 1 to 100 tokens/s and
latency on a log scale from 60 s down to 200 ms TTFT p50; a workload that did not complete
scores 0. The score is ``wq * Q + (1 - wq) * P``, rounded to one decimal, with an interval from
the workloads' own 95 % intervals where the card has them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from attrs import frozen

from arena_core import CardWorkload, ModelCard, Score, UnknownNameError, publishable

VERSION = "arena-score/1"
#: The nine workloads it scores (scoring.md: "a scorer declares the workloads it scores"), the
#: seed site's: the closed-loop ones, then the open-loop ones. The site's score reads them too.
SUITE = ("chat", "rag-8k", "long-output", "long-context-25k", "multi-turn", "office-baseline", "sharegpt", "monday-peak", "reasoning")
SPEED_FLOOR, SPEED_TOP = 1.0, 100.0  # tokens/s scoring 0 and 1
TTFT_WORST, TTFT_BEST = 60.0, 0.2  # seconds scoring 0 and 1


@frozen(kw_only=True)
class Profile:
    """One row of the weights table: quality weight, speed share, workload weights (default 1)."""

    quality_weight: float
    speed_share: float
    workload_weights: Mapping[str, float] = {}

    def weight(self, workload: str) -> float:
        return self.workload_weights.get(workload, 1.0)


PROFILES: dict[str, Profile] = {
    "aggregate": Profile(quality_weight=0.62, speed_share=0.5),
    "agent": Profile(quality_weight=0.70, speed_share=0.5, workload_weights={"long-output": 2, "multi-turn": 2, "reasoning": 2}),
    "batch": Profile(quality_weight=0.40, speed_share=0.8, workload_weights={"office-baseline": 2, "monday-peak": 2, "sharegpt": 2, "long-output": 2}),
}


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))


def speed_score(tokens_per_second: float) -> float:
    if tokens_per_second <= 0:
        return 0.0
    return _clamp(math.log(tokens_per_second / SPEED_FLOOR) / math.log(SPEED_TOP / SPEED_FLOOR))


def latency_score(ttft_s: float) -> float:
    if ttft_s <= 0:
        return 1.0
    return _clamp(math.log(TTFT_WORST / ttft_s) / math.log(TTFT_WORST / TTFT_BEST))


def quality_of(card: ModelCard) -> float | None:
    """Q: the mean of the published scores, else of the figures measured on the served model."""
    values, _ = card.quality_basis()
    return sum(values) / len(values) if values else None


def resolve_profiles(custom: Mapping[str, Any] | None) -> dict[str, Profile]:
    """The built-in table with the config file's ``[scoring.profiles.NAME]`` tables over it
    (each a mapping or an object with ``quality_weight``, ``speed_share``, ``workload_weights``)."""
    table = dict(PROFILES)
    for name, given in (custom or {}).items():
        fields = given if isinstance(given, Mapping) else {key: getattr(given, key) for key in ("quality_weight", "speed_share", "workload_weights")}
        base = table.get(name)
        weights = {**(base.workload_weights if base else {}), **dict(fields.get("workload_weights") or {})}
        table[name] = Profile(quality_weight=float(fields["quality_weight"]), speed_share=float(fields["speed_share"]), workload_weights=weights)
    return table


class ArenaScorer:
    """The Arena score under one profile. ``custom_profiles`` adds or overrides profiles."""

    name = "arena"

    def __init__(self, profile: str = "aggregate", custom_profiles: Mapping[str, Any] | None = None) -> None:
        table = resolve_profiles(custom_profiles)
        if profile not in table:
            raise UnknownNameError("scoring profile", profile, table)
        self.profile_name = profile
        self.profile = table[profile]

    def workload_score(self, line: CardWorkload | None, *, optimistic: bool | None = None) -> float:
        """p_w in 0..100; ``optimistic`` True/False takes the interval's best/worst end."""
        if line is None or line.tokens_per_second is None or line.ttft_p50_s is None:
            return 0.0
        tps, ttft = line.tokens_per_second, line.ttft_p50_s
        if optimistic is True:
            tps, ttft = line.tokens_per_second_high or tps, line.ttft_p50_low_s or ttft
        elif optimistic is False:
            tps, ttft = line.tokens_per_second_low or tps, line.ttft_p50_high_s or ttft
        a = self.profile.speed_share
        return 100 * (a * speed_score(tps) + (1 - a) * latency_score(ttft))

    def score(self, card: ModelCard) -> Score:
        notes: list[str] = []
        usable: dict[str, CardWorkload | None] = {}
        for name in SUITE:
            line = card.workload(name)
            if line is not None and not line.valid:
                notes.append(f"{name}: invalid result, scored as not completed")
                line = None
            elif line is not None and (line.tokens_per_second is None or line.ttft_p50_s is None):
                lacking = "tokens/s" if line.tokens_per_second is None else "TTFT p50"
                notes.append(f"{name}: no {lacking}, scored as missing")
                line = None
            usable[name] = line
        scaled = sorted({line.scale for line in usable.values() if line is not None and line.scale != 1.0})
        if scaled:
            notes.append("scaled run (x" + ", x".join(f"{s:g}" for s in scaled) + "): not comparable with full-size runs")
        if card.custom:
            notes.append("custom workload shapes (" + "; ".join(card.custom) + "): not comparable with the standard suite")
        missing = tuple(name for name, line in usable.items() if line is None)
        total_weight = sum(self.profile.weight(name) for name in SUITE) or 1.0

        def performance(optimistic: bool | None) -> float:
            return sum(self.profile.weight(n) * self.workload_score(line, optimistic=optimistic) for n, line in usable.items()) / total_weight

        per_workload = {name: round(self.workload_score(line), 2) for name, line in usable.items()}
        p_mid, p_low, p_high = performance(None), performance(False), performance(True)
        quality = quality_of(card)
        _, source = card.quality_basis()
        unpublished = [q.benchmark for q in card.quality if q.value is None]
        if unpublished and source == "published":
            notes.append("quality not published: " + ", ".join(unpublished) + " (left out of Q)")
        if source == "measured":
            notes.append("Q measured on the served model (no published quality): " + ", ".join(m.benchmark for m in card.measured_quality if m.benchmark))
        if quality is None:
            notes.append("no published or measured quality score: the Arena score is not computed")
            value = low = high = None
            arithmetic = ""
            missing = (*missing, "quality")
        else:
            wq = self.profile.quality_weight
            value, low, high = (round(wq * quality + (1 - wq) * p, 1) for p in (p_mid, p_low, p_high))
            arithmetic = f"{wq:g} × Q {quality:.2f} + {1 - wq:g} × P {p_mid:.2f} = {wq * quality + (1 - wq) * p_mid:.2f} → {value:.1f}, where P is the weighted mean of the workloads' p_w (their weights sum to {total_weight:g})"
        return Score(
            version=VERSION,
            profile=self.profile_name,
            value=value,
            low=low,
            high=high,
            quality=quality,
            performance=p_mid,
            per_workload=per_workload,
            missing=missing,
            publishable=publishable(card, value, SUITE),
            notes=tuple(notes),
            quality_source=source or "published",
            arithmetic=arithmetic,
        )

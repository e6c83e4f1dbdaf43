"""Ranking stored runs by Arena score. Rows whose score intervals overlap share a rank (a tie):
the data cannot tell them apart. Scaled runs, runs of changed workload shapes and invalid runs are
left out unless asked for, and then labelled."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from arena_core.types import ModelCard, Score


@frozen(kw_only=True)
class Row:
    rank: int
    tie: bool
    card: ModelCard
    score: Score
    labels: tuple[str, ...]


def _labels(card: ModelCard, score: Score) -> tuple[str, ...]:
    labels = []
    if card.scale != 1:
        labels.append(f"scaled x{card.scale:g}")
    if card.custom:
        labels.append("custom shapes (" + "; ".join(card.custom) + ")")
    if any(not line.valid for line in card.workloads):
        labels.append("invalid results")
    if card.signed_by:
        labels.append(card.signed_by)
    if score.value is not None and score.quality_source == "measured":
        labels.append("quality measured")
    if score.value is not None and card.model_memory_estimated:
        labels.append("memory estimated")
    if score.value is not None and score.unmeasured_focus:
        labels.append(f"{score.unmeasured_focus} not measured: ranked after the runs that measured it")
    if score.value is None:
        lacking = [what for what in score.missing if what not in card.expected] or ["a score"]
        labels.append(f"not ranked: no {' or '.join(lacking)}")
    return tuple(labels)


def choose(cards: Sequence[ModelCard], *, hardware: str | None = None, include_scaled: bool = False, include_invalid: bool = False) -> list[ModelCard]:
    """The runs a leaderboard ranks together (its cohort): by hardware, and without scaled or
    changed-shape runs and runs with invalid results unless asked for."""
    chosen = []
    for card in cards:
        if hardware and card.hardware != hardware:
            continue
        if (card.scale != 1 or card.custom) and not include_scaled:  # not the standard suite: not comparable
            continue
        if any(not line.valid for line in card.workloads) and not include_invalid:
            continue
        chosen.append(card)
    return chosen


def rank(chosen: Sequence[ModelCard], scores: Mapping[str, Score]) -> list[Row]:
    """``scores`` by run id. Runs that did not measure the workload a preset is about rank after
    those that did (their G stands in for it); unscored runs go last, unranked (rank 0)."""

    def order(card: ModelCard) -> tuple[bool, float]:
        score = scores[card.run_id]
        return bool(score.unmeasured_focus), -(score.value or 0.0)

    scored = sorted((c for c in chosen if scores[c.run_id].value is not None), key=order)
    rows: list[Row] = []
    for index, card in enumerate(scored):
        score = scores[card.run_id]
        previous = rows[-1] if rows else None
        same_group = previous is not None and order(previous.card)[0] == order(card)[0]
        overlaps = same_group and previous is not None and (score.high or 0.0) >= (previous.score.low or 0.0)
        if previous is not None and overlaps:
            rows[-1] = Row(rank=previous.rank, tie=True, card=previous.card, score=previous.score, labels=previous.labels)
        rows.append(Row(rank=previous.rank if previous and overlaps else index + 1, tie=bool(overlaps), card=card, score=score, labels=_labels(card, score)))
    rows += [Row(rank=0, tie=False, card=c, score=scores[c.run_id], labels=_labels(c, scores[c.run_id])) for c in chosen if scores[c.run_id].value is None]
    return rows


def row_dict(row: Row) -> dict[str, Any]:
    return {
        "rank": row.rank or None,
        "tie": row.tie,
        "run_id": row.card.run_id,
        "model": row.card.model,
        "model_title": row.card.model_title,
        "hardware": row.card.hardware,
        "backend": row.card.backend,
        "score": row.score.value,
        "low": row.score.low,
        "high": row.score.high,
        "quality": row.score.quality,
        "performance": row.score.performance,
        "profile": row.score.profile,
        "model_memory_gb": row.card.model_memory_gb,
        "model_memory_estimated": row.card.model_memory_estimated,
        "benches": row.card.benches(),
        "labels": list(row.labels),
    }

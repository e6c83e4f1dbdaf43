"""The ``csv`` renderer: a card's workloads, and a store's runs ranked by a profile, as CSV."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from pathlib import Path

from arena_core import CardView, Progress, RendererSpec, SiteView, hookimpl

WORKLOAD_COLUMNS = ("run_id", "workload", "tokens_per_second", "ttft_p50_s", "valid", "scale")
RUN_COLUMNS = ("run_id", "model", "hardware", "backend", "profile", "score", "score_low", "score_high", "publishable")


def _csv(rows: Sequence[Sequence[object]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in rows:
        # a cell a spreadsheet would run as a formula is written as text
        writer.writerow(["'" + cell if isinstance(cell, str) and cell[:1] in ("=", "+", "-", "@") else ("" if cell is None else cell) for cell in row])
    return out.getvalue()


def card_csv(view: CardView) -> str:
    card = view.card
    return _csv([WORKLOAD_COLUMNS, *((card.run_id, w.name, w.tokens_per_second, w.ttft_p50_s, w.valid, w.scale) for w in card.workloads)])


def leaderboard_csv(view: SiteView, directory: Path, progress: Progress) -> Path:
    rows: list[Sequence[object]] = [RUN_COLUMNS]
    for run_id, card_view in view.views.items():
        score = card_view.scores[view.profile]
        card = card_view.card
        rows.append((run_id, card.model_title, card.hardware, card.backend, view.profile, score.value, score.low, score.high, score.publishable))
    target = directory / "leaderboard.csv"
    target.write_text(_csv(rows), encoding="utf-8")
    progress(1, 1, target.name)
    return target


@hookimpl
def arena_register_renderers(register: Callable[[RendererSpec], None]) -> None:
    register(RendererSpec(name="csv", description="a card's workloads, or every stored run's score, as CSV", card=card_csv, site=leaderboard_csv))

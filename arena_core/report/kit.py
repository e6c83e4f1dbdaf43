"""The card kit: the pieces the built-in renderers lay a card and a leaderboard out from, for a
renderer that wants the same rows (public as ``arena_core.card_kit``).

Each function reads a :class:`~arena_core.types.ModelCard` (or a view of one) and returns rows
of strings or a small value; none recomputes a figure the card does not hold.
"""

from __future__ import annotations

from typing import Any

import attrs

from arena_core.converter import CONVERTER
from arena_core.report.capacity_card import capacity_and_agents, capacity_column, capacity_headline, capacity_probes
from arena_core.report.card_sections import G_NOTE, PREDICTION_HEADERS, PREDICTION_NOTE, TTFT_NOTE, prediction_rows
from arena_core.report.formats import fmt_score, fmt_seconds, fmt_tps
from arena_core.report.model_card import (
    WORKLOAD_COLUMNS,
    WORKLOAD_NOTE,
    big_figures,
    cost_rows,
    decode_totals,
    headline_label,
    headline_tps,
    memory_heading,
    memory_rows,
    model_rows,
    platform_rows,
    precision_verdict,
    quality_heading,
    quality_rows,
    render_model_card,
    time_line,
    ttft_cell,
    workload_rows,
)
from arena_core.report.seed_figures import seed_rows, throughput_headline
from arena_core.report.text import WIDEST, render_json, wrap_text
from arena_core.report.workload_blocks import TURN_COLUMNS, summary_lines, workload_blocks
from arena_core.results.findings import ttft_is_mean
from arena_core.results.leaderboard import Row, rank, row_dict
from arena_core.results.predictions import NO_PREDICTOR, ledger_summary
from arena_core.types import CardView

__all__ = [
    "G_NOTE",
    "NO_PREDICTOR",
    "PREDICTION_HEADERS",
    "PREDICTION_NOTE",
    "TTFT_NOTE",
    "WIDEST",
    "Row",
    "big_figures",
    "capacity_column",
    "capacity_and_agents",
    "capacity_headline",
    "capacity_probes",
    "card_document",
    "card_text",
    "cost_rows",
    "decode_totals",
    "fmt_score",
    "fmt_seconds",
    "fmt_tps",
    "headline_label",
    "headline_tps",
    "ledger_summary",
    "memory_heading",
    "memory_rows",
    "model_rows",
    "platform_rows",
    "precision_verdict",
    "prediction_rows",
    "quality_heading",
    "quality_rows",
    "rank",
    "render_json",
    "row_dict",
    "seed_rows",
    "summary_lines",
    "throughput_headline",
    "time_line",
    "ttft_cell",
    "ttft_is_mean",
    "workload_blocks",
    "TURN_COLUMNS",
    "WORKLOAD_COLUMNS",
    "WORKLOAD_NOTE",
    "workload_rows",
    "wrap_text",
]


def card_text(view: CardView, *, markdown: bool = False) -> str:
    """The card in the seed card's order, as text fitted to the terminal or as markdown."""
    return render_model_card(
        view.card,
        view.scores,
        list(view.findings),
        markdown=markdown,
        predictions=None if view.predictions is None else list(view.predictions),
        uncovered=view.not_predicted,
        wide=view.wide,
        cost=view.cost,
    )


def card_document(view: CardView) -> dict[str, Any]:
    """The card as one JSON document (``arena-card/1``): the stored card, its scores, findings,
    the ledger lines that predicted it and why it has none where it has none."""
    return {
        "format": "arena-card/1",
        "card": CONVERTER.unstructure(view.card),
        "scores": {name: CONVERTER.unstructure(score) for name, score in view.scores.items()},
        "findings": list(view.findings),
        "predictions": [attrs.asdict(line) for line in view.predictions or ()],
        "not_predicted": view.not_predicted,
    }

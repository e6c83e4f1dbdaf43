"""The lines a run ends with after its card: quality measured on the served model, and the score."""

from __future__ import annotations

from pathlib import Path

from arena_core.errors import UsageError
from arena_core.hooks import ArenaHooks
from arena_core.report.formats import fmt_score
from arena_core.report.model_card import measured_row
from arena_core.results.cards import card_from_run, load_cards, scores_for


def quality_and_score_lines(run_dir: Path, hooks: ArenaHooks) -> list[str]:
    """One line per measured quality suite, then the run's score under the default scorer's
    first profile, scored among the stored runs as its card is (or why there is none)."""
    try:
        card = card_from_run(run_dir, hooks.registry, slo_figures=False)
        others, _ = load_cards(run_dir.parent, hooks.registry)
        scores = scores_for(card, hooks, cards=others)
    except UsageError as exc:
        return [f"score: not computed ({exc})"]
    lines = []
    for measured in card.measured_quality:
        label, value, how = measured_row(card, measured)
        lines.append(f"quality, {label}: {value} ({how})")
    if not card.measured_quality:
        lines.append("quality: not measured in this run (arena run --quality, or arena quality)")
    name, score = next(iter(scores.items()))
    why = "" if score.value is not None else f" ({'; '.join(score.notes)})"
    lines.append(f"Arena score ({name}): {fmt_score(score)}{why}")
    return lines

"""The lines a run ends with after its card: quality measured on the served model, and the score."""

from __future__ import annotations

from pathlib import Path

from arena_core.errors import UsageError
from arena_core.hooks import ArenaHooks
from arena_core.report.formats import fmt_score
from arena_core.report.model_card import measured_row
from arena_core.results.cards import card_from_run, load_cards, scores_for


def quality_and_score_lines(run_dir: Path, hooks: ArenaHooks) -> list[str]:
    """One line per measured quality suite, then the run's score under the default scorer's first
    profile, scored among the stored runs as its card is, and each other scorer's of that
    profile (the absolute one does not depend on which runs are stored); or why there is none."""
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
    first = next(iter(scores))
    # the default scorer's first profile, and each other scorer's of that name; a relative score
    # ranked among this run alone is its own best (100), so the absolute one leads, as on the card
    shown = sorted(((name, score) for name, score in scores.items() if name == first or name.startswith(f"{first} (")), key=lambda item: item[1].ranked_alone)
    for name, score in shown:
        if score.ranked_alone:
            among = ", relative: the only run ranked" + (", its own best" if score.value is not None else "")
        else:
            among = f", relative: among {score.cohort.split(' (')[0]}" if score.cohort else ""
        why = "" if score.value is not None else f" ({'; '.join(n for n in score.notes if not n.startswith('cohort: '))})"
        lines.append(f"Arena score ({name.split(' (')[0]}, {score.version}{among}): {fmt_score(score)}{why}")
    return lines

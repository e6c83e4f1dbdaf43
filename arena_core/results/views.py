"""The values renderers read: a stored run's :class:`~arena_core.types.CardView` and a store's
:class:`~arena_core.types.SiteView`, computed once by the core for every format alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from arena_core.config import CostSection
from arena_core.hooks import ArenaHooks
from arena_core.report.cost import cost_of
from arena_core.results.cards import scores_for
from arena_core.results.findings import findings
from arena_core.results.predictions import ledger_of, why_not_predicted
from arena_core.types import CardView, LedgerLine, ModelCard, Score, SiteView


def card_view(
    store: Path, card: ModelCard, others: Sequence[ModelCard], hooks: ArenaHooks, custom: Mapping[str, object], cost: CostSection, *, wide: bool = False
) -> CardView:
    """``card`` (loaded with the SLO asked for) among the store's ``others``: scored, with its
    findings, predicted without its own run, and costed as the leaderboard and the site cost it
    (each run judged by the SLO it recorded)."""
    predictions = ledger_of(store, others, hooks.registry, only=card.run_id)
    stored = next((c for c in others if c.run_id == card.run_id), card)
    return CardView(
        card=card,
        scores=scores_for(card, hooks, custom, others),
        findings=tuple(findings(card, others)),
        predictions=None if predictions is None else tuple(predictions),
        not_predicted=why_not_predicted(card, hooks.registry) if predictions == [] else "",
        cost=cost_of([*others, card] if stored is card else others, cost)(stored) if cost.given else None,
        wide=wide,
    )


def site_view(
    cards: Sequence[ModelCard],
    all_scores: Mapping[str, Mapping[str, Score]],
    hooks: ArenaHooks,
    cost: CostSection,
    *,
    profile: str,
    integrity: Mapping[str, str],
    ledger: Sequence[LedgerLine] | None,
) -> SiteView:
    """Every card of a store as its page shows it, and what the leaderboard pages share."""
    costs = cost_of(cards, cost) if cost.given else None
    views = {}
    for card in cards:
        mine = None if ledger is None else tuple(line for line in ledger if line.run_id == card.run_id)
        views[card.run_id] = CardView(
            card=card,
            scores=all_scores[card.run_id],
            findings=tuple(findings(card, cards)),
            predictions=mine,
            not_predicted=why_not_predicted(card, hooks.registry) if mine == () else "",
            cost=costs(card) if costs else None,
        )
    terms = cost.terms() if costs else ""
    return SiteView(
        views=views,
        profile=profile,
        integrity=dict(integrity),
        ledger=None if ledger is None else tuple(ledger),
        cost_terms=f"{terms[:1].upper()}{terms[1:]}" if terms else "",
    )

"""The values renderers read: a stored run's :class:`~arena_core.types.CardView` and a store's
:class:`~arena_core.types.SiteView`, computed once by the core for every format alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from arena_core.config import CostSection
from arena_core.errors import UsageError
from arena_core.hooks import ArenaHooks
from arena_core.report.cost import cost_of
from arena_core.results.cards import card_from_run, scores_for
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


def standalone_card(run_dir: Path, hooks: ArenaHooks) -> str:
    """The card of the run in ``run_dir`` by itself, as JSON: its own figures and scores, with no
    other run, prediction or cost beside it and Arena's default profiles -- what a bundle carries
    and ``arena verify`` renders again from the bundle's own files."""
    renderer = hooks.registry.by_kind["renderers"].get("json")
    if renderer is None or renderer.item.card is None:
        raise UsageError("no renderer named 'json' is registered (the arena_renderers plugin is disabled?): a bundle's card cannot be rendered")
    card = attrs.evolve(card_from_run(run_dir, hooks.registry), signed_by="")  # its own files: not how it came into a store
    view = CardView(card=card, scores=scores_for(card, hooks, {}, ()), findings=tuple(findings(card, ())), predictions=None)
    return str(renderer.item.card(view))


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

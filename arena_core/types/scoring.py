"""Scorers: what they are, what they answer."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Protocol

from attrs import field, frozen

from arena_core.types.cards import ModelCard
from arena_core.types.names import valid_name


class Scorer(Protocol):
    """What a scorer's factory returns: a card's score under one profile."""

    def score(self, card: ModelCard) -> Score:
        """The card's score; a scorer whose spec is ``relative`` scores it as a cohort of one."""
        ...


class CohortScorer(Scorer, Protocol):
    """A ``relative`` scorer: a run's score depends on the runs ranked with it."""

    def score_cohort(self, cards: Sequence[ModelCard]) -> Mapping[str, Score]:
        """Each card's score within ``cards``, by run id."""
        ...


@frozen(kw_only=True)
class ScorerSpec:
    """A scorer. ``create(profile, custom_profiles)`` returns a :class:`Scorer` (a
    :class:`CohortScorer` when ``relative``); ``custom_profiles`` maps names to the
    ``[scoring.profiles.NAME]`` tables of the config file (new profiles or overrides)."""

    name: str = field(validator=valid_name)
    description: str
    profiles: tuple[str, ...]
    create: Callable[[str, Mapping[str, Any]], Scorer]
    #: Cards, leaderboard and site rank by the first scorer registered with ``default`` (else
    #: the first registered).
    default: bool = False
    #: Whether the config file's ``[scoring.profiles.NAME]`` tables are profiles of this scorer.
    custom_profiles: bool = False
    #: The workloads it scores (its suite): a card's "benches measured n/N" counts these, so a
    #: plugin registering another workload changes no stored score.
    workloads: tuple[str, ...] = ()
    #: Whether a score depends on the other runs ranked with it (the scorer object then has
    #: ``score_cohort(cards) -> {run_id: Score}``, and ``score(card)`` is a cohort of one).
    relative: bool = False


def publishable(card: ModelCard, value: float | None, scored: Collection[str]) -> bool:
    """Whether a score ``value`` of ``card`` may stand beside others: computed, from the standard
    shapes (no custom workloads), and each of the workloads it ``scored`` that the card has
    valid and at full size. The one rule of every scorer's :attr:`Score.publishable`."""
    lines = [line for line in card.workloads if line.name in scored]
    return value is not None and not card.custom and all(line.valid and line.scale == 1.0 for line in lines)


@frozen(kw_only=True)
class Score:
    """A scorer's answer, explained: the number, its interval, its parts and what was missing.

    ``value`` is None when it cannot be computed (no quality scores at all); ``publishable`` is
    false when scaled or invalid results fed it, with the reasons in ``notes``.
    """

    version: str
    profile: str
    value: float | None
    low: float | None
    high: float | None
    quality: float | None
    performance: float
    per_workload: Mapping[str, float]
    missing: tuple[str, ...]
    publishable: bool
    notes: tuple[str, ...] = ()
    #: what Q averages: "published" scores, or quality "measured" on the served model where
    #: none is published (:meth:`~arena_core.types.ModelCard.quality_basis`)
    quality_source: str = "published"
    #: the score written out with its weights and parts, so a reader can recompute it from the
    #: page ("0.7 × Q 93.37 + 0.2 × G 41.06 + 0.1 × E 12.50 = 74.8"); "" when not computed
    arithmetic: str = ""
    #: the workload the profile is about (its G) where this run did not measure it: G then
    #: stands in from the others, and a leaderboard ranks the run after those that measured it
    unmeasured_focus: str = ""
    #: the profile's formula in a line ("0.7 Q + 0.2 G + 0.1 E; G: chat"), for a page's header
    formula: str = ""

    @property
    def cohort(self) -> str | None:
        """The runs a relative score was ranked among, as its note says them ("17 runs ranked
        together (each component relative to its best)"); None for an absolute score."""
        return next((note.removeprefix("cohort: ") for note in self.notes if note.startswith("cohort: ")), None)

    @property
    def ranked_alone(self) -> bool:
        """Whether this relative score was ranked among one run, itself: its own best, so 100."""
        return (self.cohort or "").startswith("1 run ")

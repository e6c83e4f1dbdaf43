"""Renderers: what lays a card out as a document and a store out as a site, and the values they read.

A renderer is data plus optional callables: ``card`` turns one :class:`CardView` into a
document (``arena card --format NAME``), ``site`` writes a :class:`SiteView` into a folder
(``arena publish --format NAME``), ``prediction`` lays out a :class:`PredictionView`
(``arena predict --format NAME``). Both views are plain values the core computes once -- the card,
its scores, findings, error-ledger lines and cost -- so a third party's renderer reads the same
figures as the built-in ones and lays them out in its own way. ``arena_core.card_kit`` has the
row builders the built-in renderers use, for a renderer that wants the same tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from attrs import field, frozen

from arena_core.types.cards import ModelCard
from arena_core.types.hardware import HardwareProfile
from arena_core.types.models import ModelSpec
from arena_core.types.names import valid_name
from arena_core.types.prediction import LedgerLine, WorkloadPrediction
from arena_core.types.scoring import Score

if TYPE_CHECKING:  # a result of the core's capacity search, read here through its methods only
    from arena_core.results.predicted_capacity import PredictedCapacity


@frozen(kw_only=True)
class CostLine:
    """A card's cost per million output tokens, with every input it was computed from."""

    per_million: float
    currency: str
    capacity: str  # "4 users", the load that passed
    search_run: str  # the capacity search's run id
    output_tps: float
    joules_per_token: float | None
    energy_read_from: str
    price_per_kwh: float | None
    electricity: float | None  # per million output tokens
    hardware_per_hour: float | None
    hardware: float | None  # per million output tokens
    hardware_terms: str  # "4000 EUR ÷ (3 years × 8766 h × 50%)", or ""

    def cell(self) -> str:
        """The leaderboard's cell: "0.42 EUR"."""
        return f"{self.per_million:.3g} {self.currency}"

    def explained(self) -> str:
        """The sum written out, so a reader can recompute it from the line itself."""
        unit = self.currency
        if self.electricity is not None:
            electricity = (
                f"electricity {self.joules_per_token:.3g} J per output token (read from {self.energy_read_from}) × 10^6 ÷ 3.6 MJ/kWh"
                f" × {self.price_per_kwh:g} {unit}/kWh = {self.electricity:.3g} {unit}"
            )
        else:
            electricity = "electricity not counted (no energy counter read at capacity)"
        parts = [electricity]
        if self.hardware is not None:
            parts.append(
                f"hardware {self.hardware_terms} = {self.hardware_per_hour:.4g} {unit}/h ÷ ({self.output_tps:.1f} tok/s × 3600) × 10^6 = {self.hardware:.3g} {unit}"
            )
        return f"{self.per_million:.3g} {unit} per million output tokens at capacity {self.capacity} (search {self.search_run}): {'; '.join(parts)}"


@frozen(kw_only=True)
class CardView:
    """One stored run as every renderer sees it.

    ``scores`` by profile; ``findings`` are sentences; ``predictions`` are the default predictor's
    ledger lines for this run (predicted without it), ``None`` where no predictor is registered,
    and ``not_predicted`` says why a run the predictor does not cover has none; ``cost`` is its
    cost line, or why it has none, or ``None`` where no ``[cost]`` was set; ``wide``: tables as
    wide as they are (else fitted to the terminal)."""

    card: ModelCard
    scores: Mapping[str, Score]
    findings: tuple[str, ...] = ()
    predictions: tuple[LedgerLine, ...] | None = ()
    not_predicted: str = ""
    cost: CostLine | str | None = None
    wide: bool = False


@frozen(kw_only=True)
class SiteView:
    """A store as a site is made from it: every card (``views`` by run id, in the store's order),
    the profile the first leaderboard ranks by and every profile's scores, ``integrity`` (what
    ``arena verify`` said of each run; absent: not checked), the whole error ledger (``None``: no
    predictor) and the cost's terms (empty where no ``[cost]`` was set)."""

    views: Mapping[str, CardView]
    profile: str
    integrity: Mapping[str, str] = field(factory=dict)
    ledger: tuple[LedgerLine, ...] | None = ()
    cost_terms: str = ""

    @property
    def cards(self) -> list[ModelCard]:
        return [view.card for view in self.views.values()]


@frozen(kw_only=True)
class PredictionView:
    """What ``arena predict`` answers, as every renderer of predictions sees it: the model and
    the machine, the backend whose scheduling was simulated, the predictor's tier, each
    workload's prediction with its interval, what had to be assumed, and the capacities asked
    for (``None``: not asked; each has ``describe()`` and ``as_dict()``); ``wide`` as for a card."""

    spec: ModelSpec
    hardware: HardwareProfile
    backend: str
    tier: str
    workloads: tuple[WorkloadPrediction, ...]
    assumptions: tuple[str, ...] = ()
    capacity: tuple[PredictedCapacity, ...] | None = None
    wide: bool = False


#: ``progress(done, total, what)``: told after each page a site renderer writes.
Progress = Callable[[int, int, str], None]


@frozen(kw_only=True)
class RendererSpec:
    """An output format. ``card(view)`` returns one card as a document (text ending in a
    newline); ``site(view, directory, progress)`` writes a whole store into ``directory`` and
    returns the file to open. A renderer offers either or both; ``arena card --format`` lists
    those with ``card``, ``arena publish --format`` those with ``site``."""

    name: str = field(validator=valid_name)
    description: str
    card: Callable[[CardView], str] | None = None
    site: Callable[[SiteView, Path, Progress], Path] | None = None
    #: lays out what ``arena predict`` answers (``arena predict --format``)
    prediction: Callable[[PredictionView], str] | None = None

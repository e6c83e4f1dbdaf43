"""Self-host cost: what a million output tokens cost on this box, at the capacity a search found.

Not at peak throughput: a box is run at the load it can serve within its SLO, so the cost is
taken at the most load that passed in the newest capacity search of the same model on the same
server and hardware (:func:`~arena_core.report.capacity_card.capacity_search_of`). There, per hour:

- electricity: the mean power the energy counters read over that probe × ``price_per_kwh``;
- amortisation (where ``hardware_price`` is given): the price over the hours of its lifetime
  that it serves, ``lifetime_years × 8766 h × utilisation``;

divided by the output tokens that probe served in an hour (its total output tok/s × 3600), per
million. Power that was not measured is never guessed: the electricity part is then left out
and the line says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from attrs import frozen

from arena_core.config import CostSection
from arena_core.report.capacity_card import capacity_found, capacity_probes, capacity_search_of
from arena_core.types import ModelCard

HOURS_PER_YEAR = 8766  # 365.25 days


@frozen(kw_only=True)
class CostLine:
    """A card's cost per million output tokens, with every input it was computed from."""

    per_million: float
    currency: str
    capacity: str  # "4 users", the load that passed
    search_run: str  # the capacity search's run id
    output_tps: float
    power_w: float | None
    price_per_kwh: float | None
    energy_per_hour: float | None
    amortisation_per_hour: float | None
    amortisation: str  # "4000 EUR over 3 years at 100 % of the hours", or ""

    def cell(self) -> str:
        """The leaderboard's cell: "0.42 EUR"."""
        return f"{self.per_million:.3g} {self.currency}"

    def explained(self) -> str:
        """The sum written out, so a reader can recompute it from the line itself."""
        parts = []
        if self.energy_per_hour is not None:
            parts.append(f"electricity {self.power_w:.0f} W × {self.price_per_kwh:g} {self.currency}/kWh = {self.energy_per_hour:.4g} {self.currency}/h")
        else:
            parts.append("electricity not counted (no energy counter read at capacity)")
        if self.amortisation_per_hour is not None:
            parts.append(f"hardware {self.amortisation} = {self.amortisation_per_hour:.4g} {self.currency}/h")
        hourly = (self.energy_per_hour or 0.0) + (self.amortisation_per_hour or 0.0)
        return (
            f"{self.per_million:.3g} {self.currency} per million output tokens at capacity {self.capacity} "
            f"(search {self.search_run}): {'; '.join(parts)}; {hourly:.4g} {self.currency}/h ÷ "
            f"({self.output_tps:.1f} tok/s × 3600) × 10^6"
        )


def cost_of(cards: Sequence[ModelCard], cost: CostSection) -> Callable[[ModelCard], CostLine | str]:
    """Each card's cost line, or why it has none (no [cost], no capacity search of its setup,
    nothing to cost with at capacity)."""
    search_of = capacity_search_of(cards)

    def line(card: ModelCard) -> CostLine | str:
        if not cost.given:
            return "no [cost] in the config: set price_per_kwh (and hardware_price) to see one"
        search = search_of(card)
        if search is None:
            return "no capacity search of this model on this server and hardware (arena capacity)"
        best, _ = capacity_found(capacity_probes(search))
        if best is None or not best.total_tps:
            return f"the capacity search {search.run_id} found no load that passed"
        power = best.mean_power_w
        energy = power / 1000 * cost.price_per_kwh if power is not None and cost.price_per_kwh is not None else None
        amortisation = cost.hardware_price / (cost.lifetime_years * HOURS_PER_YEAR * cost.utilisation) if cost.hardware_price is not None else None
        if energy is None and amortisation is None:
            return f"no energy counter was read at capacity ({search.run_id}) and no hardware_price is given: nothing to cost with"
        hourly = (energy or 0.0) + (amortisation or 0.0)
        return CostLine(
            per_million=hourly / (best.total_tps * 3600) * 1e6,
            currency=cost.currency,
            capacity=best.label,
            search_run=search.run_id,
            output_tps=best.total_tps,
            power_w=power,
            price_per_kwh=cost.price_per_kwh,
            energy_per_hour=energy,
            amortisation_per_hour=amortisation,
            amortisation=(
                f"{cost.hardware_price:g} {cost.currency} over {cost.lifetime_years:g} years at {cost.utilisation:.0%} of the hours"
                if cost.hardware_price is not None
                else ""
            ),
        )

    return line

"""Self-host cost: what a million output tokens cost on this box, at the capacity a search found.

Not at peak throughput: a box is run at the load it can serve within its SLO, so the cost is
taken at the most load that passed in the newest capacity search of the same model on the same
server, hardware and scale (:func:`~arena_core.report.capacity_card.capacity_search_of`). There:

- electricity: the joules per output token the energy counters read over that probe (the same
  figure as the card's energy row) × 10^6 ÷ 3.6 MJ per kWh × ``price_per_kwh``;
- hardware (where ``hardware_price`` is given): the price over the hours of its lifetime that it
  serves, ``lifetime_years × 8766 h × utilisation``, per hour ÷ the output tokens that probe
  served in an hour (its total output tok/s × 3600) × 10^6.

Energy that was not measured is never guessed: the electricity part is then left out, and the
line says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from arena_core.config import CostSection
from arena_core.report.capacity_card import capacity_found, capacity_probes, capacity_search_of
from arena_core.types import CostLine, ModelCard

HOURS_PER_YEAR = 8766  # 365.25 days
JOULES_PER_KWH = 3.6e6


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
        joules = best.joules_per_output_token
        electricity = joules * 1e6 / JOULES_PER_KWH * cost.price_per_kwh if joules is not None and cost.price_per_kwh is not None else None
        hourly = cost.hardware_price / (cost.lifetime_years * HOURS_PER_YEAR * cost.utilisation) if cost.hardware_price is not None else None
        hardware = hourly / (best.total_tps * 3600) * 1e6 if hourly is not None else None
        if electricity is None and hardware is None:
            return f"no energy counter was read at capacity ({search.run_id}) and no hardware_price is given: nothing to cost with"
        return CostLine(
            per_million=(electricity or 0.0) + (hardware or 0.0),
            currency=cost.currency,
            capacity=best.label,
            search_run=search.run_id,
            output_tps=best.total_tps,
            joules_per_token=joules,
            energy_read_from=best.energy_read_from,
            price_per_kwh=cost.price_per_kwh,
            electricity=electricity,
            hardware_per_hour=hourly,
            hardware=hardware,
            hardware_terms=(
                f"{cost.hardware_price:g} {cost.currency} ÷ ({cost.lifetime_years:g} years × {HOURS_PER_YEAR} h × {cost.utilisation:.3g})"
                if cost.hardware_price is not None
                else ""
            ),
        )

    return line

"""A capacity search as its card shows it: the probes (``<workload>-users-<n>`` or
``<workload>-rate-<r>``) judged again from their stored figures under the card's SLO, the
headline and the curve."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from attrs import frozen

from arena_core.report.formats import energy_read_from
from arena_core.run.capacity import PROBE_LABEL, PROBE_NAME, latency_knee, load_text, passes
from arena_core.run.identity import UNNAMED
from arena_core.types import ModelCard


@frozen(kw_only=True)
class ProbeLine:
    load: float
    unit: str  # "users" or "rate"
    attainment: float | None
    passed: bool
    ttft_p50_s: float | None
    ttft_p95_s: float | None
    per_user_tps: float | None
    total_tps: float | None
    served: float | None
    #: joules per output token the energy counters read over the probe (None: not measured), and
    #: what they were read from
    joules_per_output_token: float | None = None
    energy_read_from: str = ""

    @property
    def label(self) -> str:
        return load_text(self.unit, self.load)  # type: ignore[arg-type]


def capacity_probes(card: ModelCard) -> list[ProbeLine]:
    """The card's probes by load, each judged by :func:`~arena_core.run.capacity.passes` from the
    card's figures (recomputed under the card's SLO)."""
    target = card.slo.target
    found = []
    for line in card.workloads:
        match = PROBE_NAME.fullmatch(line.name)
        if not match or not line.custom.startswith(PROBE_LABEL):
            continue
        metrics = line.metrics
        attainment, served = metrics.get("slo_attainment"), metrics.get("served_share")
        per_user, total = line.tokens_per_second, metrics.get("decode_tps_total")
        if match.group("load") == "rate":  # open loop: a stream's speed is 1/TPOT; the total is the output rate
            per_user, total = (1 / tpot if (tpot := metrics.get("tpot_median_s")) else None), metrics.get("output_tps")
        found.append(
            ProbeLine(
                load=float(match.group("value")),
                unit=match.group("load"),
                attainment=attainment,
                passed=passes(attainment, metrics.get("failed") or 0, target, served),
                ttft_p50_s=line.ttft_p50_s,
                ttft_p95_s=metrics.get("ttft_p95_error_adjusted_s"),
                per_user_tps=per_user,
                total_tps=total,
                served=served,
                joules_per_output_token=metrics.get("energy_per_output_token_j"),
                energy_read_from=energy_read_from(metrics),
            )
        )
    return sorted(found, key=lambda probe: probe.load)


def capacity_found(probes: Sequence[ProbeLine]) -> tuple[ProbeLine | None, ProbeLine | None]:
    """The most load that passed and the least above it that failed (either may be None)."""
    passed = [p for p in probes if p.passed]
    best = max(passed, key=lambda p: p.load, default=None)
    above = [p for p in probes if not p.passed and p.load > (best.load if best else 0)]
    return best, min(above, key=lambda p: p.load, default=None)


def capacity_knee_line(card: ModelCard) -> str | None:
    """ "Knee: 4 users (TTFT p95 within 2x …)": where the search's probes show latency starting
    to climb (:func:`~arena_core.run.capacity.latency_knee`), or None without probes to tell."""
    probes = capacity_probes(card)
    knee = latency_knee([(p.load, p.ttft_p95_s) for p in probes])
    return f"Knee: {knee.describe(probes[0].unit)}" if knee else None  # type: ignore[arg-type]


def capacity_headline(card: ModelCard) -> str:
    """ "Capacity: 4 users (TTFT ≤ 2 s … for 95% of requests)", or why there is none."""
    probes = capacity_probes(card)
    objective = card.slo.objective or "the SLO"
    best, failed = capacity_found(probes)
    if best is None:
        return f"Capacity: none ({objective}; not even {probes[0].label})" if probes else "Capacity: not searched"
    upper = f", fails at {failed.load:g}" if failed else ", no probe failed"
    return f"Capacity: {best.label} ({objective}{upper})"


def capacity_column(cards: Sequence[ModelCard], *, agents: bool = False) -> Callable[[ModelCard], str | None]:
    """The leaderboard's capacity cell of a card, such as "24 users (interactive)": a capacity
    search's own; for another run, the newest search of the same model (its name and the facts
    its server reported) on the same server and hardware at its scale. A run stored before Arena
    named models shows only its own: its name says nothing of which model it was. ``agents``:
    the agents searches' cell ("6 agents (interactive)"), the others' without."""
    search_of = capacity_search_of(cards, agents=agents)

    def cell(card: ModelCard) -> str | None:
        search = search_of(card)
        if search is None:
            return None
        best, _ = capacity_found(capacity_probes(search))
        return f"{best.label if best else 'none'} ({search.slo.name or 'SLO'})"

    return cell


def capacity_and_agents(cards: Sequence[ModelCard]) -> Callable[[ModelCard], str | None]:
    """A table's capacity cell: users or a rate, and agents at the SLO, each where searched
    ("4 users (interactive); 6 agents (interactive)")."""
    capacity_of, agents_of = capacity_column(cards), capacity_column(cards, agents=True)
    return lambda card: "; ".join(cell for cell in (capacity_of(card), agents_of(card)) if cell) or None


def searched_agents(card: ModelCard) -> bool:
    """Whether ``card`` is a capacity search over agents (its probes' load)."""
    return any(probe.unit == "agents" for probe in capacity_probes(card))


def capacity_search_of(cards: Sequence[ModelCard], *, agents: bool = False) -> Callable[[ModelCard], ModelCard | None]:
    """The capacity search that stands for a card: its own where it is one, else the newest
    search of the same setup (:func:`same_setup`), else None; ``agents``: of the searches over
    agents, else of the others."""
    newest: dict[tuple[object, ...], ModelCard] = {}
    for card in cards:
        if not capacity_probes(card) or searched_agents(card) != agents:
            continue
        key = same_setup(card)
        if key not in newest or (card.measured_at, card.run_id) > (newest[key].measured_at, newest[key].run_id):  # run ids sort by start time
            newest[key] = card

    def search(card: ModelCard) -> ModelCard | None:
        if capacity_probes(card):
            return card if searched_agents(card) == agents else None
        return newest.get(same_setup(card)) if card.model != UNNAMED else None

    return search


def same_setup(card: ModelCard) -> tuple[object, ...]:
    """What two runs must share for one's capacity to stand for the other's: the model (its
    name and the facts its server reported), the backend, the server, the hardware, the scale."""
    return (card.model, card.model_facts.fingerprint, card.backend, card.server, card.hardware, card.scale)

"""Capacity before anything is measured, both ways: the chat users a box serves within an SLO,
and the request rate it serves with TTFT p95 under a limit (the seed's rate sweep: 2, 5, 10 s).

Each is the search of ``arena capacity`` run on the predictor: every probe's requests as the
predictor serves them, judged by the rule that judges measured probes
(:func:`~arena_core.run.capacity.passes`: the SLO's share of requests within it and, for a rate,
a server that kept up). The search runs at the central prediction and at both ends of its
interval, so a capacity comes with its interval.
"""

from __future__ import annotations

from attrs import evolve, frozen

from arena_core.loadgen.goodput import Slo, goodput, served_share
from arena_core.run.capacity import Probe, passes, search
from arena_core.types import ClosedLoopShape, OpenLoopShape, PredictionSetup, Predictor, WorkloadSpec

#: Requests in one predicted rate probe (the same as ``arena capacity``'s default).
RATE_PROBE_REQUESTS = 100
#: The least request rate a search probes (req/s).
LEAST_RATE = 0.125
#: The ends a capacity is searched at: the central prediction and its interval's.
ENDS = ("central", "slow", "fast")


@frozen(kw_only=True)
class PredictedCapacity:
    """A predicted capacity: the load found at the central prediction and at each end of its
    interval (None: not even the first probe passed), under what limit."""

    load: str
    limit: str
    central: float | None
    low: float | None
    high: float | None
    #: the least load searched: a capacity of None is below it
    least: float = 1.0

    def describe(self) -> str:
        def shown(value: float | None) -> str:
            return f"below {self.least:g}" if value is None else f"{value:.3g}"

        unit = "chat users" if self.load == "users" else "req/s"
        if self.central is None and self.low is None and self.high is None:
            return f"below {self.least:g} {unit}, at both ends of its interval too ({self.limit})"
        return f"{shown(self.central)} {unit} [{shown(self.low)}–{shown(self.high)}] ({self.limit})"

    def as_dict(self) -> dict:
        return {"load": self.load, "limit": self.limit, "central": self.central, "low": self.low, "high": self.high, "least_searched": self.least}


def users_capacity(predictor: Predictor, setup: PredictionSetup, chat: WorkloadSpec, objective: Slo) -> PredictedCapacity:
    """The chat users served within ``objective``: each probe one round of that many users."""
    assert isinstance(chat.shape, ClosedLoopShape)

    def found_at(end: str) -> float | None:
        def probe(users: float) -> Probe:
            workload = evolve(chat, shape=evolve(chat.shape, concurrency=int(users), runs=1))
            attainment = goodput(predictor.serve(workload, setup, at=end), objective).get("slo_attainment") or 0.0
            return Probe(load=users, passed=passes(attainment, 0, objective.target), attainment=attainment, failed=0)

        return search(probe, start=1, limit=256, precision=0.1).found

    central, slow, fast = (found_at(end) for end in ENDS)
    return PredictedCapacity(load="users", limit=objective.describe(), central=central, low=_least(central, slow, fast), high=_most(central, slow, fast))


def rate_capacity(predictor: Predictor, setup: PredictionSetup, base: WorkloadSpec, ttft_limit_s: float) -> PredictedCapacity:
    """The request rate of ``base``'s shape served with TTFT p95 within ``ttft_limit_s`` by a
    server that keeps up with it."""
    assert isinstance(base.shape, OpenLoopShape)
    objective = Slo(ttft_s=ttft_limit_s, tps=None, target=0.95)

    def found_at(end: str) -> float | None:
        def probe(rate: float) -> Probe:
            workload = evolve(base, shape=evolve(base.shape, request_rate=rate, num_prompts=RATE_PROBE_REQUESTS), seed=(base.seed + round(rate * 1000)) % 2**32)
            records = predictor.serve(workload, setup, at=end)
            attainment = goodput(records, objective).get("slo_attainment") or 0.0
            served = served_share(records)
            return Probe(load=rate, passed=passes(attainment, 0, objective.target, served), attainment=attainment, failed=0, served=served)

        return search(probe, start=LEAST_RATE, limit=64, precision=0.05, whole=False).found

    central, slow, fast = (found_at(end) for end in ENDS)
    return PredictedCapacity(
        load="rate",
        limit=f"TTFT p95 ≤ {ttft_limit_s:g} s, {base.name}'s shape",
        central=central,
        # the central search's own answer is inside its interval: each rate is probed with arrivals
        # of its own, so a search at a faster end may stop a step below the central one
        low=_least(central, slow, fast),
        high=_most(central, slow, fast),
        least=LEAST_RATE,  # a rate the first probe fails is below the least searched, not below 1
    )


def _least(*values: float | None) -> float | None:
    found = [v for v in values if v is not None]
    return min(found) if len(found) == len(values) else None


def _most(*values: float | None) -> float | None:
    return max((v for v in values if v is not None), default=None)

"""A capacity search as its card shows it: the probes (``<workload>-users-<n>``) judged again
from their stored figures under the card's SLO, the headline and the curve."""

from __future__ import annotations

import re

from attrs import frozen

from arena_core.capacity import PROBE_LABEL, passes
from arena_core.types import ModelCard

PROBE_NAME = re.compile(r".+-users-([0-9]+)")


@frozen(kw_only=True)
class ProbeLine:
    users: int
    attainment: float | None
    passed: bool
    ttft_p50_s: float | None
    ttft_p95_s: float | None
    per_user_tps: float | None
    total_tps: float | None


def capacity_probes(card: ModelCard) -> list[ProbeLine]:
    """The card's probes by users, each judged by :func:`~arena_core.capacity.passes` from the
    card's figures (recomputed under the card's SLO)."""
    target = float(card.facts.get("slo_target", 0.95))
    found = []
    for line in card.workloads:
        match = PROBE_NAME.fullmatch(line.name)
        if not match or not line.custom.startswith(PROBE_LABEL):
            continue
        metrics = line.metrics
        attainment = metrics.get("slo_attainment")
        passed = passes(attainment, metrics.get("failed") or 0, target)
        found.append(
            ProbeLine(
                users=int(match.group(1)),
                attainment=attainment,
                passed=passed,
                ttft_p50_s=line.ttft_p50_s,
                ttft_p95_s=metrics.get("ttft_p95_error_adjusted_s"),
                per_user_tps=line.tokens_per_second,
                total_tps=metrics.get("decode_tps_total"),
            )
        )
    return sorted(found, key=lambda probe: probe.users)


def capacity_headline(card: ModelCard) -> str:
    """ "Capacity: 4 users (TTFT ≤ 2 s … for 95% of requests)", or why there is none."""
    probes = capacity_probes(card)
    objective = card.facts.get("slo", "the SLO")
    passed = [p.users for p in probes if p.passed]
    failed = [p.users for p in probes if not p.passed and p.users > max(passed, default=0)]
    if not passed:
        return f"Capacity: none ({objective}; not even {probes[0].users} users)" if probes else "Capacity: not searched"
    upper = f", fails at {min(failed)}" if failed else ", no probe failed"
    return f"Capacity: {max(passed)} users ({objective}{upper})"

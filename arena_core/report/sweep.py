"""The seed site's request-rate sweep summed up (``shared/spec/capacity.md`` section 2).

A run that measured the ``rate-sweep-*`` workloads (one open-loop step per request rate) gets,
per step, the achieved rate, completed/sent, TTFT p50/p95/p99, output tokens/s and peak
concurrency; and per TTFT threshold (2, 5, 10 s) two capacities:

- the seed's: the highest configured rate whose TTFT p95 stays under the threshold ("none" when
  not even the first step does) -- even a rate the server never served;
- Arena's: the same, counting a step only when the server served it (achieved rate within 5 % of
  the configured one) and no request failed.
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import frozen

from arena_core.loadgen.goodput import SEED_TTFT_P95_LIMITS_S, kept_up
from arena_core.types import ModelCard

SWEEP_PREFIX = "rate-sweep-"


@frozen(kw_only=True)
class SweepStep:
    rate: float
    achieved: float | None
    completed: int
    sent: int
    ttft_p50_s: float | None
    ttft_p95_s: float | None
    ttft_p99_s: float | None
    output_tps: float | None
    peak_concurrency: float | None

    @property
    def served(self) -> bool:
        return self.achieved is not None and self.rate > 0 and kept_up(self.achieved / self.rate)

    def under(self, threshold_s: float) -> bool:
        return self.ttft_p95_s is not None and self.ttft_p95_s < threshold_s


def sweep_steps(card: ModelCard) -> list[SweepStep]:
    """The sweep's steps a card holds, by configured rate."""
    steps = []
    for line in card.workloads:
        metrics = line.metrics
        if not line.name.startswith(SWEEP_PREFIX) or metrics.get("requested_rate") is None:
            continue
        failed = int(metrics.get("failed") or 0)
        completed = int(metrics["completed"]) if metrics.get("completed") is not None else int(metrics.get("requests") or 0) - failed
        steps.append(
            SweepStep(
                rate=float(metrics["requested_rate"]),
                achieved=metrics.get("request_throughput"),
                completed=completed,
                sent=completed + failed,
                ttft_p50_s=line.ttft_p50_s,
                ttft_p95_s=metrics.get("ttft_p95_tool_s"),
                ttft_p99_s=metrics.get("ttft_p99_s"),
                output_tps=metrics.get("output_tps"),
                peak_concurrency=metrics.get("peak_concurrency"),
            )
        )
    return sorted(steps, key=lambda step: step.rate)


def seed_capacity(steps: Sequence[SweepStep], threshold_s: float) -> float | None:
    """The seed's figure: the highest configured rate whose TTFT p95 is under ``threshold_s``."""
    return max((step.rate for step in steps if step.under(threshold_s)), default=None)


def arena_capacity(steps: Sequence[SweepStep], threshold_s: float) -> float | None:
    """Arena's figure: the same, over the steps the server served with no failed request."""
    return max((step.rate for step in steps if step.under(threshold_s) and step.served and step.completed == step.sent), default=None)


def capacity_rows(steps: Sequence[SweepStep]) -> list[tuple[str, str, str]]:
    """Per threshold: the seed's capacity and Arena's."""

    def shown(rate: float | None) -> str:
        return "none" if rate is None else f"{rate:g} req/s"

    return [(f"TTFT p95 under {limit:g} s", shown(seed_capacity(steps, limit)), shown(arena_capacity(steps, limit))) for limit in SEED_TTFT_P95_LIMITS_S]

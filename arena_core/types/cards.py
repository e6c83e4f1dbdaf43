"""Model cards: what a card shows and a scorer reads, one run of one model on one machine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import field, frozen

from arena_core.types.models import QualityScore


@frozen(kw_only=True)
class CardWorkload:
    """One workload's line on a model card. ``tokens_per_second`` and ``ttft_p50_s`` are the two
    figures the score uses; the ``*_low``/``*_high`` pairs are their 95 % intervals where known."""

    name: str
    tokens_per_second: float | None
    ttft_p50_s: float | None
    valid: bool = True
    scale: float = 1.0
    custom: str = ""
    tokens_per_second_low: float | None = None
    tokens_per_second_high: float | None = None
    ttft_p50_low_s: float | None = None
    ttft_p50_high_s: float | None = None
    reasons: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    command: str | None = None
    metrics: Mapping[str, float | None] = field(factory=dict)

    @property
    def open_loop(self) -> bool:
        """Whether the figures are an open-loop workload's (a request rate, total throughput)."""
        return any(key in self.metrics for key in ("total_tps", "site_tps", "requested_rate"))

    @property
    def site_tps(self) -> float | None:
        """The seed site's throughput G of this workload: open loop, total token throughput ÷ peak
        concurrent requests; closed loop, total decode tokens/s (at c = 10). None when not measured."""
        metrics = self.metrics
        if not self.open_loop:
            return metrics.get("decode_tps_total")
        if metrics.get("site_tps") is not None:
            return metrics["site_tps"]
        total, peak = metrics.get("total_tps"), metrics.get("peak_concurrency")
        return total / peak if total is not None and peak else None


@frozen(kw_only=True)
class CardLayout:
    """Which workloads a card's headline, rows and findings read: the roles and labels the
    workload plugins declare (:data:`~arena_core.types.workloads.ROLES`), fixed when the card is
    built so renderers name no workload themselves."""

    headline: str | None = None
    #: (label, workload) of the "decode throughput, total" row, in registration order
    totals: tuple[tuple[str, str], ...] = ()
    #: (short, long): the prefill-wall finding's pair of contexts
    prefill_wall: tuple[str, str] | None = None
    #: findings compare models under the first of these both measured
    compared: tuple[str, ...] = ()

    def label(self, workload: str) -> str:
        """A workload's label in the totals row, else its name."""
        return next((label for label, name in self.totals if name == workload), workload)


@frozen(kw_only=True)
class ModelCard:
    """What a model card shows and a scorer reads: one run of one model on one machine.

    ``workloads`` holds what completed; ``expected`` names every workload of the suite, so a
    missing one is shown "—" and scores 0. ``source`` says where the figures came from (measured
    by Arena, or imported from a reference tool's file).
    """

    run_id: str
    model: str
    model_title: str
    hardware: str
    hardware_title: str
    backend: str
    engine: str
    measured_at: str
    source: str
    expected: tuple[str, ...]
    workloads: tuple[CardWorkload, ...]
    quality: tuple[QualityScore, ...] = ()
    model_memory_gb: float | None = None
    model_memory_source: str | None = None
    facts: Mapping[str, Any] = field(factory=dict)
    layout: CardLayout = CardLayout()

    def workload(self, name: str) -> CardWorkload | None:
        return next((w for w in self.workloads if w.name == name), None)

    @property
    def scale(self) -> float:
        return min((w.scale for w in self.workloads), default=1.0)

    @property
    def custom(self) -> tuple[str, ...]:
        """The workloads measured on a changed shape, each with its change ("chat: concurrency=1")."""
        return tuple(f"{w.name}: {w.custom}" for w in self.workloads if w.custom)

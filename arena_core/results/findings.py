"""Findings: short sentences generated from a card's data -- what worked, what broke, what
surprised -- each true of the figures it quotes (tests check them against fixtures)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from attrs import frozen

from arena_core.loadgen.goodput import kept_up
from arena_core.loadgen.open_summary import SATURATED
from arena_core.report.formats import fmt_tps
from arena_core.run.capacity import PROBE_LABEL
from arena_core.run.manifest import MEASURED_BY_ARENA
from arena_core.types import CardWorkload, ModelCard

NOTABLE_RATIO = 1.2
MOST_COMPARED = 3


@frozen(kw_only=True)
class Served:
    """How much of an open-loop workload's offered rate its server kept up with."""

    offered: float
    #: completions per second over the arrival window; for an imported card an upper bound
    served: float | None
    #: True/False: judged by :func:`~arena_core.loadgen.goodput.kept_up`; None: the figures cannot
    #: tell a backlog from the drain after the last arrival
    saturated: bool | None
    bound: bool = False

    @property
    def said(self) -> str:
        return f"{'at most ' if self.bound else ''}{self.served:.2f}" if self.served is not None else "—"


def served_over_arrivals(line: CardWorkload) -> Served | None:
    """The served rate of an open-loop line over its arrival window, judged by the one rule of
    keeping up (:func:`~arena_core.loadgen.goodput.kept_up`): a measured run's rate is its own
    (completions over the run less one median request) and its judgement its verdict's
    (``saturated`` among its labels: the share its records say it kept up with, where there were
    enough of them); an imported card's rate is bounded from its figures -- the run (completions
    ÷ throughput) less the longest a request can have taken by Little's law (TTFT p50 + peak in
    flight ÷ throughput) -- so that a server that only drained its last requests is never
    called saturated, and judged as served over offered. None for a closed-loop line."""
    metrics = line.metrics
    offered = metrics.get("requested_rate")
    if not offered:
        return None
    if (served := metrics.get("served_rate")) is not None:
        return Served(offered=offered, served=served, saturated=any(label.startswith(SATURATED) for label in line.labels))
    rate, completed, peak = metrics.get("request_throughput"), metrics.get("completed"), metrics.get("peak_concurrency")
    if not rate or not completed or peak is None:
        return Served(offered=offered, served=None, saturated=None)
    window = completed / rate - ((line.ttft_p50_s or 0.0) + peak / rate)
    if window <= 0:
        return Served(offered=offered, served=None, saturated=None)
    served = completed / window
    return Served(offered=offered, served=served, saturated=not kept_up(served / offered), bound=True)


def _fmt_s(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def findings(card: ModelCard, others: Sequence[ModelCard] = ()) -> list[str]:
    found: list[str] = []
    missing = [name for name in card.expected if name not in card.measured_benches]
    searched_only = len(missing) == len(card.expected) and any(line.custom.startswith(PROBE_LABEL) for line in card.workloads)
    if missing and not searched_only:  # a capacity search measures none of the suite, by design
        found.append(f"Did not complete: {', '.join(missing)} ({card.benches()} workloads measured).")
    for line in card.workloads:
        if not line.valid:
            found.append(f"{line.name} is invalid: {'; '.join(line.reasons) or 'see the result'}.")
    found += _prefill_wall(card)
    for line in card.workloads:
        judged = served_over_arrivals(line)
        if judged is not None and judged.saturated:
            found.append(f"Saturated under {line.name}: the server completed {judged.said} of {judged.offered:.2f} req/s offered over the arrivals.")
    efficiencies = [
        (line.metrics["bandwidth_efficiency"], line.name, line.metrics.get("decode_ceiling_tps"))
        for line in card.workloads
        if line.metrics.get("bandwidth_efficiency")
    ]
    if efficiencies:
        best, name, ceiling = max(efficiencies, key=lambda entry: entry[:2])
        # the ceiling itself, so that the share can be checked against the page's tok/s per user
        of = f": {fmt_tps(best * ceiling)} of {fmt_tps(ceiling)} tok/s per user" if ceiling else ""
        found.append(f"Decode reaches {best:.0%} of the memory-bandwidth ceiling at best ({name}{of}).")
    found += _comparisons(card, others)
    return found


def _prefill_wall(card: ModelCard) -> list[str]:
    """How much longer the first token takes at the long context than at the short one (the
    workloads plugin names the pair; each is called by its label in the totals row)."""
    if card.layout.prefill_wall is None:
        return []
    names = card.layout.prefill_wall
    short, long = card.workload(names[0]), card.workload(names[1])
    if not (short and long and short.ttft_p50_s and long.ttft_p50_s):
        return []
    scaled = f", prompts scaled x{card.scale:g}" if card.scale != 1 else ""
    return [
        f"Prefill wall: TTFT {'mean' if ttft_is_mean(card, short) else 'p50'} grows {long.ttft_p50_s / short.ttft_p50_s:.1f}x from {card.layout.label(short.name)} ({short.name}, {_fmt_s(short.ttft_p50_s)}) "
        f"to {card.layout.label(long.name)} ({long.name}, {_fmt_s(long.ttft_p50_s)}{scaled})."
    ]


def _comparisons(card: ModelCard, others: Sequence[ModelCard]) -> list[str]:
    """Notably faster or slower than other models on the same hardware, under the first compared
    workload both measured: the :data:`MOST_COMPARED` nearest (a cohort of 17 would bury the card)."""
    candidates = []
    for other in others:
        if other.run_id == card.run_id or other.hardware != card.hardware or other.model == card.model or other.scale != card.scale:
            continue
        for name in card.layout.compared:
            mine, theirs = card.workload(name), other.workload(name)
            if not (mine and theirs and mine.valid and theirs.valid and mine.tokens_per_second and theirs.tokens_per_second):
                continue
            ratio = mine.tokens_per_second / theirs.tokens_per_second
            if ratio >= NOTABLE_RATIO or ratio <= 1 / NOTABLE_RATIO:
                sentence = (
                    f"{ratio:.2g}x the throughput of {other.model_title} under {name} "
                    f"({mine.tokens_per_second:.3g} vs {theirs.tokens_per_second:.3g} tok/s, same hardware)."
                )
                candidates.append((abs(math.log(ratio)), sentence))
            break
    return [sentence for _, sentence in sorted(candidates)[:MOST_COMPARED]]


def ttft_is_mean(card: ModelCard, line: CardWorkload) -> bool:
    """Whether ``line``'s TTFT figure is a mean, not a p50: an imported closed-loop result whose
    only TTFT is llama-benchy's mean time to first response (the seed cards print it as "TTFT
    p50"; workloads.md), which the import keeps as ``ttfr_mean_s`` and in the p50's place."""
    mean = line.metrics.get("ttfr_mean_s")
    return card.source != MEASURED_BY_ARENA and not line.open_loop and mean is not None and mean == line.ttft_p50_s

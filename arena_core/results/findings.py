"""Findings: short sentences generated from a card's data -- what worked, what broke, what
surprised -- each true of the figures it quotes (tests check them against fixtures)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from arena_core.run.capacity import PROBE_LABEL
from arena_core.types import ModelCard

NOTABLE_RATIO = 1.2
MOST_COMPARED = 3


def _fmt_s(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def findings(card: ModelCard, others: Sequence[ModelCard] = ()) -> list[str]:
    found: list[str] = []
    missing = [name for name in card.expected if card.workload(name) is None]
    searched_only = len(missing) == len(card.expected) and any(line.custom.startswith(PROBE_LABEL) for line in card.workloads)
    if missing and not searched_only:  # a capacity search measures none of the suite, by design
        found.append(f"Did not complete: {', '.join(missing)} ({len(card.expected) - len(missing)}/{len(card.expected)} workloads measured).")
    for line in card.workloads:
        if not line.valid:
            found.append(f"{line.name} is invalid: {'; '.join(line.reasons) or 'see the result'}.")
    found += _prefill_wall(card)
    for line in card.workloads:
        served, offered = line.metrics.get("served_rate", line.metrics.get("request_throughput")), line.metrics.get("requested_rate")
        if served is not None and offered and served < 0.95 * offered:
            found.append(f"Saturated under {line.name}: the server completed {served:.2f} req/s of {offered:.2f} offered.")
    efficiencies = [(line.metrics["bandwidth_efficiency"], line.name) for line in card.workloads if line.metrics.get("bandwidth_efficiency")]
    if efficiencies:
        best, name = max(efficiencies)
        found.append(f"Decode reaches {best:.0%} of the memory-bandwidth ceiling at best ({name}).")
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
        f"Prefill wall: TTFT p50 grows {long.ttft_p50_s / short.ttft_p50_s:.1f}x from {card.layout.label(short.name)} ({short.name}, {_fmt_s(short.ttft_p50_s)}) "
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

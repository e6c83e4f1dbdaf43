"""Stop when precise (``--precision``, issue 58): a workload measures run after run until its
headline figures are known to the asked margin at 95 %, or its cap is reached.

The headline figures are a stream's decode speed (the mean over requests, Student t) and TTFT
p50 (order statistics), each from the client's own clock as :mod:`~arena_core.loadgen.goodput`
reads it; the card then states the margins of the figures it publishes
(``closed_summary``), which is what holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from arena_core.loadgen.goodput import decode_tps, first_token_s
from arena_core.loadgen.precision import Figure, mean_figure, percentile_bounds
from arena_core.loadgen.stats import median
from arena_core.types import RequestRecord

#: The figures the rule reads, as progress lines and cards name them.
TTFT_P50, DECODE = "TTFT p50", "decode tok/s per user"


def margin_text(margin: float) -> str:
    """ "±5 %" of 0.05."""
    return f"±{margin * 100:.3g} %"


def headline_margins(records: Sequence[RequestRecord]) -> dict[str, float | None]:
    """Each headline figure's relative margin (the 95 % interval's half-width over the value;
    None: not yet bounded) from the measured requests so far."""
    measured = [r for r in records if r.ok and not r.warmup]
    ttfts = [t for r in measured if (t := first_token_s(r)) is not None]
    speeds = [s for r in measured if (s := decode_tps(r)) is not None]
    margins: dict[str, float | None] = {TTFT_P50: None, DECODE: None}
    if ttfts:
        low, high = percentile_bounds(ttfts, 50)
        margins[TTFT_P50] = Figure(value=median(ttfts), low=low, high=high, samples=len(ttfts)).margin
    if speeds and (figure := mean_figure(speeds)) is not None:
        margins[DECODE] = figure.margin
    return margins


def precise_enough(records: Sequence[RequestRecord], target: float) -> tuple[bool, str]:
    """Whether every headline figure is within ``target``, and the margins in words
    ("TTFT p50 ±3.1 %, decode tok/s per user ±0.4 %"; "not yet bounded" where one is not)."""
    margins = headline_margins(records)
    said = ", ".join(f"{name} ±{margin * 100:.1f} %" if margin is not None else f"{name} not yet bounded" for name, margin in margins.items())
    return all(margin is not None and margin <= target for margin in margins.values()), said


def published_margins(metrics: Mapping[str, float | None]) -> dict[str, float | None]:
    """The headline figures' margins as a result publishes them (its stored intervals)."""
    found: dict[str, float | None] = {}
    for name, value, low, high in (
        (TTFT_P50, metrics.get("ttft_p50_s"), metrics.get("ttft_p50_ci_low_s"), metrics.get("ttft_p50_ci_high_s")),
        (DECODE, metrics.get("decode_tps_per_user"), metrics.get("decode_tps_per_user_ci_low"), metrics.get("decode_tps_per_user_ci_high")),
    ):
        found[name] = Figure(value=value, low=low, high=high, samples=0).margin if value is not None else None
    return found


def precision_label(metrics: Mapping[str, float | None], asked: float, runs: int) -> str:
    """What a result measured until precise says of itself: "within ±5 % after 4 runs: TTFT p50
    ±3.1 %, decode tok/s per user ±0.4 %", or "not within ±5 % (its cap reached after 9 runs): …"."""
    margins = published_margins(metrics)
    held = all(margin is not None and margin <= asked for margin in margins.values())
    said = ", ".join(f"{name} ±{margin * 100:.1f} %" if margin is not None else f"{name} not bounded" for name, margin in margins.items())
    runs_said = f"{runs} run{'s' if runs != 1 else ''}"
    return (f"within {margin_text(asked)} after {runs_said}: " if held else f"not within {margin_text(asked)} (its cap reached after {runs_said}): ") + said

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

#: The figures the rule reads, as progress lines and cards name them: TTFT p50 and, closed
#: loop, a stream's decode speed (its mean), open loop, TPOT p50 (as ``vllm bench serve``).
TTFT_P50, DECODE, TPOT_P50 = "TTFT p50", "decode tok/s per user", "TPOT p50"
#: An open-loop workload lets go at least this many requests before it may stop.
FEWEST_REQUESTS = 20


def margin_text(margin: float) -> str:
    """ "±5 %" of 0.05."""
    return f"±{margin * 100:.3g} %"


def _median_margin(values: Sequence[float]) -> float | None:
    low, high = percentile_bounds(values, 50)
    return Figure(value=median(values), low=low, high=high, samples=len(values)).margin if values else None


def _tpot(record: RequestRecord) -> float | None:
    """A stream's time per output token after the first (``vllm bench serve``'s TPOT)."""
    speed = decode_tps(record)
    return 1 / speed if speed else None


def headline_margins(records: Sequence[RequestRecord], *, open_loop: bool = False) -> dict[str, float | None]:
    """Each headline figure's relative margin (the 95 % interval's half-width over the value;
    None: not yet bounded) from the measured requests so far."""
    measured = [r for r in records if r.ok and not r.warmup]
    margins: dict[str, float | None] = {TTFT_P50: _median_margin([t for r in measured if (t := first_token_s(r)) is not None])}
    if open_loop:
        margins[TPOT_P50] = _median_margin([t for r in measured if (t := _tpot(r)) is not None])
    else:
        speeds = [s for r in measured if (s := decode_tps(r)) is not None]
        margins[DECODE] = figure.margin if (figure := mean_figure(speeds)) is not None else None
    return margins


def precise_enough(records: Sequence[RequestRecord], target: float, *, open_loop: bool = False) -> tuple[bool, str]:
    """Whether every headline figure is within ``target``, and the margins in words
    ("TTFT p50 ±3.1 %, decode tok/s per user ±0.4 %"; "not yet bounded" where one is not)."""
    margins = headline_margins(records, open_loop=open_loop)
    return _within(margins, target), _said(margins)


def _within(margins: Mapping[str, float | None], target: float) -> bool:
    return all(margin is not None and margin <= target for margin in margins.values())


def _said(margins: Mapping[str, float | None]) -> str:
    """ "TTFT p50 ±3.1 %, decode tok/s per user ±0.4 %" ("not yet bounded" where one is not)."""
    return ", ".join(f"{name} ±{margin * 100:.1f} %" if margin is not None else f"{name} not yet bounded" for name, margin in margins.items())


def published_margins(metrics: Mapping[str, float | None]) -> dict[str, float | None]:
    """The headline figures' margins as a result publishes them (its stored intervals): TTFT
    p50, and a stream's decode speed (closed loop) or TPOT p50 (open loop)."""
    second = (
        (DECODE, "decode_tps_per_user", "_ci_low", "_ci_high")
        if metrics.get("decode_tps_per_user") is not None
        else (TPOT_P50, "tpot_p50_s", "_ci_low_s", "_ci_high_s")
    )
    found: dict[str, float | None] = {}
    for name, key, low, high in ((TTFT_P50, "ttft_p50_s", "_ci_low_s", "_ci_high_s"), second):
        stem = key.removesuffix("_s")
        value = metrics.get(key)
        found[name] = Figure(value=value, low=metrics.get(stem + low), high=metrics.get(stem + high), samples=0).margin if value is not None else None
    return found


def precision_label(metrics: Mapping[str, float | None], asked: float, measured: str) -> str:
    """What a result measured until precise says of itself: "within ±5 % after 4 runs: TTFT p50
    ±3.1 %, decode tok/s per user ±0.4 %", or "not within ±5 % (its cap reached after 9 runs): …";
    ``measured``: "4 runs", "120 requests"."""
    margins = published_margins(metrics)
    held = _within(margins, asked)
    return (f"within {margin_text(asked)} after {measured}: " if held else f"not within {margin_text(asked)} (its cap reached after {measured}): ") + _said(
        margins
    )

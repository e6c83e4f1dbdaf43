"""Summary statistics with the reference tools' exact definitions, in plain Python."""

from __future__ import annotations

import math
from collections.abc import Sequence


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def population_std(values: Sequence[float]) -> float:
    """numpy's default ``np.std`` (ddof 0): one value gives 0."""
    centre = mean(values)
    return math.sqrt(math.fsum((value - centre) ** 2 for value in values) / len(values))


def percentile(values: Sequence[float], q: float) -> float:
    """numpy's default ``np.percentile`` (linear interpolation between closest ranks)."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    lower = math.floor(position)
    upper = min(lower + 1, len(ordered) - 1)
    fraction = position - lower
    return ordered[lower] + (ordered[upper] - ordered[lower]) * fraction


def nearest_rank(values: Sequence[float], q: float) -> float:
    """The q-th percentile by nearest rank: the ⌈q/100 · n⌉-th smallest value (of 85 errors the
    77th for p90, so at most 8 lie above a p90 goal). The prediction error's p90 is taken so."""
    if not values:
        raise ValueError("nearest rank of no values")
    return sorted(values)[max(0, math.ceil(q / 100 * len(values)) - 1)]


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


def percentile_interval(values: Sequence[float], q: float, confidence: float = 0.95) -> tuple[float, float] | None:
    """A distribution-free interval for the q-th percentile from order statistics.

    The ranks come from the normal approximation of Binomial(n, q/100); ``None`` when the sample
    is too small for the interval to stay inside it (then the percentile is "insufficient samples").
    """
    n = len(values)
    if n == 0:
        return None
    z = {0.90: 1.6449, 0.95: 1.96, 0.99: 2.5758}[confidence]
    p = q / 100.0
    spread = z * math.sqrt(n * p * (1 - p))
    low, high = math.floor(n * p - spread), math.ceil(n * p + spread)
    if low < 0 or high > n - 1:
        return None
    ordered = sorted(values)
    return ordered[low], ordered[high]


MIN_SAMPLES_FOR_P99 = 100


def tail_metrics(prefix: str, values: Sequence[float], into: dict[str, float | None]) -> None:
    """``{prefix}_p50_s`` and, with 95 % intervals, ``_p90_s`` and ``_p99_s`` into ``into``.

    A tail that the sample cannot support (too few values for the interval, or fewer than 100
    for p99) is ``None``: "insufficient samples", not a number.
    """
    if not values:
        return
    into[f"{prefix}_p50_s"] = median(values)
    middle = percentile_interval(values, 50)  # the score's uncertainty comes from this one
    into[f"{prefix}_p50_ci_low_s"] = middle[0] if middle else None
    into[f"{prefix}_p50_ci_high_s"] = middle[1] if middle else None
    for q in (90, 99):
        interval = percentile_interval(values, q)
        enough = interval is not None and (q != 99 or len(values) >= MIN_SAMPLES_FOR_P99)
        into[f"{prefix}_p{q}_s"] = percentile(values, q) if enough else None
        into[f"{prefix}_p{q}_ci_low_s"] = interval[0] if enough and interval else None
        into[f"{prefix}_p{q}_ci_high_s"] = interval[1] if enough and interval else None

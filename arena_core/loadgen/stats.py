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

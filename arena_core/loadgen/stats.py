"""Summary statistics with the reference tools' exact definitions, in plain Python."""

from __future__ import annotations

import math
from collections.abc import Sequence

from arena_core.loadgen.precision import Figure, percentile_bounds


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


def percentile_interval(values: Sequence[float], q: float) -> tuple[float, float] | None:
    """The 95 % interval of the q-th percentile from order statistics
    (:func:`~arena_core.loadgen.precision.percentile_bounds`), or ``None`` when the samples
    cannot bound it on both sides."""
    low, high = percentile_bounds(values, q)
    return (low, high) if low is not None and high is not None else None


def percentile_figure(values: Sequence[float], q: float) -> Figure | None:
    """The q-th percentile with its 95 % interval, or, where the samples cannot bound it from
    above, the largest sample marked ``max_of``."""
    if not values:
        return None
    low, high = percentile_bounds(values, q)
    if high is None:
        return Figure(value=max(values), low=None, high=None, samples=len(values), max_of=True)
    return Figure(value=percentile(values, q), low=low, high=high, samples=len(values))


def tail_metrics(prefix: str, values: Sequence[float], into: dict[str, float | None]) -> None:
    """``{prefix}_p50_s``, ``_p90_s`` and ``_p99_s`` with their 95 % intervals
    (``_ci_low_s``, ``_ci_high_s``; None on a side the samples cannot bound), the sample count
    ``{prefix}_samples`` and the largest sample ``{prefix}_max_s``. A tail the samples cannot
    bound from above (fewer than 36 for a p90, 368 for a p99) is ``None``: the card shows the
    largest sample as "max of n", and nothing ranks it as the percentile. The median is always
    its point estimate (the headline and the scores read it), its interval None where fewer
    than 6 samples cannot bound it."""
    if not values:
        return
    into[f"{prefix}_samples"] = float(len(values))
    into[f"{prefix}_max_s"] = max(values)
    low, high = percentile_bounds(values, 50)
    into[f"{prefix}_p50_s"], into[f"{prefix}_p50_ci_low_s"], into[f"{prefix}_p50_ci_high_s"] = median(values), low, high
    for q in (90, 99):
        figure = percentile_figure(values, q)
        assert figure is not None
        into[f"{prefix}_p{q}_s"] = None if figure.max_of else figure.value
        into[f"{prefix}_p{q}_ci_low_s"] = figure.low
        into[f"{prefix}_p{q}_ci_high_s"] = figure.high

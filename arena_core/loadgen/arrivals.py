"""``vllm bench serve``'s arrival schedule (runners.md B.4), drawn from the same generator.

One inter-arrival gap per request, the first included, from numpy's legacy generator seeded with
the run's seed: Gamma(shape = burstiness, scale = 1 / (rate x burstiness)), mean 1/rate. The gaps
are summed, then scaled so the last request is due at exactly N / rate. An infinite rate sends
everything at once; an infinite burstiness spaces requests evenly.
"""

from __future__ import annotations

import math

import numpy as np


def arrival_offsets(count: int, rate: float, burstiness: float, seed: int) -> list[float]:
    """Seconds from the start of the measured phase at which each request is due."""
    if count <= 0:
        raise ValueError("no requests to schedule")
    if burstiness <= 0 or rate <= 0:
        raise ValueError("rate and burstiness must be positive")
    if math.isinf(rate):
        return [0.0] * count
    generator = np.random.RandomState(seed)  # the draws vLLM takes from np.random after np.random.seed(seed)
    if math.isinf(burstiness):
        gaps = [1.0 / rate] * count
    else:
        scale = 1.0 / (rate * burstiness)
        gaps = [generator.gamma(shape=burstiness, scale=scale) for _ in range(count)]
    offsets = []
    total = 0.0
    for gap in gaps:
        total += gap
        offsets.append(total)
    if offsets[-1] != 0:
        factor = (count / rate) / offsets[-1]
        offsets = [offset * factor for offset in offsets]
    return [float(offset) for offset in offsets]

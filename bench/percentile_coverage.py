"""How often the 95 % intervals Arena puts on percentiles hold the true percentile: seeded
repetitions of n samples from distributions whose percentiles are known, per percentile and
sample size. A calibrated interval holds it in 95 % of repetitions; with 200 repetitions, one
count is ±1.5 points of sampling noise, so the default asks 2,000.

    python bench/percentile_coverage.py [--repetitions 2000] [--json]

Also prints, per percentile, the fewest samples that bound it from above (fewer: "max of n").
"""

from __future__ import annotations

import argparse
import json
import math
import random
from statistics import NormalDist

from arena_core.loadgen.precision import bounded_above, percentile_bounds

#: (draw one sample, the true q-quantile for q in 0–1) of each distribution.
DISTRIBUTIONS = {
    "lognormal": (lambda rng: rng.lognormvariate(math.log(0.2), 0.6), lambda q: math.exp(math.log(0.2) + 0.6 * NormalDist().inv_cdf(q))),
    "exponential": (lambda rng: rng.expovariate(5.0), lambda q: -math.log(1 - q) / 5.0),
    "uniform": (lambda rng: rng.random(), lambda q: q),
    "pareto": (lambda rng: rng.paretovariate(1.5), lambda q: (1 - q) ** (-1 / 1.5)),
}
SIZES = {50: (6, 10, 20, 100), 90: (36, 50, 100), 99: (368, 1000)}


def coverage(distribution: str, q: int, samples: int, repetitions: int, seed: int = 0) -> float:
    draw, quantile = DISTRIBUTIONS[distribution]
    rng, truth, held = random.Random(f"{seed}-{distribution}-{q}-{samples}"), quantile(q / 100), 0
    for _ in range(repetitions):
        low, high = percentile_bounds([draw(rng) for _ in range(samples)], q)
        held += low is not None and high is not None and low <= truth <= high
    return held / repetitions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    found = {f"{name} p{q} n={n}": coverage(name, q, n, args.repetitions) for name in DISTRIBUTIONS for q, sizes in SIZES.items() for n in sizes}
    fewest = {f"p{q}": next(n for n in range(1, 10_000) if bounded_above(n, q)) for q in (50, 90, 95, 99)}
    if args.json:
        print(json.dumps({"coverage": found, "fewest_samples_bounded_above": fewest}, indent=1))
        return
    for label, held in found.items():
        print(f"{label:28} {held:6.1%}")
    print("fewest samples that bound a percentile from above: " + ", ".join(f"{q} {n}" for q, n in fewest.items()))


if __name__ == "__main__":
    main()

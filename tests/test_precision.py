"""The precision of Arena's figures (issue 58): order-statistic intervals on percentiles that hold
the true percentile in 95 % of repetitions, "max of n" exactly where the samples cannot bound a
percentile, and Student t intervals on means."""

from __future__ import annotations

import math
import random
from statistics import NormalDist

import pytest

from arena_core.loadgen.precision import bounded_above, mean_figure, percentile_bounds, t_quantile
from arena_core.loadgen.stats import percentile_figure, tail_metrics

#: TTFTs as a server's come: skewed, a long right tail (lognormal, median 200 ms).
MEDIAN_S, SIGMA = 0.2, 0.6


def _true(q: float) -> float:
    return MEDIAN_S * math.exp(SIGMA * NormalDist().inv_cdf(q / 100))


@pytest.mark.parametrize(("q", "samples"), [(50, 6), (50, 10), (50, 40), (90, 36), (90, 100), (99, 368), (99, 1000)])
def test_a_percentiles_interval_holds_it_in_95_of_100_repetitions(q, samples):
    """2,000 seeded repetitions (the issue asks 200, whose counts alone wander ±1.5 points; at
    2,000 a calibrated interval stays within 93–97 % but for one time in 20,000). Whole ranks
    alone give 98 % at n = 10 for a p50 and 88 % at the next rank in: the interpolation is what
    brings them to 95."""
    rng, truth, held, repetitions = random.Random(f"{q}-{samples}"), _true(q), 0, 2000
    for _ in range(repetitions):
        low, high = percentile_bounds([rng.lognormvariate(math.log(MEDIAN_S), SIGMA) for _ in range(samples)], q)
        assert low is not None and high is not None
        held += low <= truth <= high
    assert 0.93 <= held / repetitions <= 0.97, held / repetitions


def test_max_of_n_exactly_where_the_order_statistics_cannot_bound_the_percentile():
    """The largest of n samples lies above the q-th percentile with probability 1 − qⁿ: below
    97.5 % the samples cannot bound it from above (fewer than 36 for a p90, 72 for a p95, 368
    for a p99), and the figure is the largest sample, marked so."""
    fewest = {q: next(n for n in range(1, 2000) if bounded_above(n, q)) for q in (50, 90, 95, 99)}
    assert fewest == {50: 6, 90: 36, 95: 72, 99: 368}
    rng = random.Random(7)
    for q, n in fewest.items():
        for size in (n - 1, n):
            values = [rng.random() for _ in range(size)]
            figure = percentile_figure(values, q)
            assert figure is not None and figure.samples == size
            assert figure.max_of == (size < n) == (percentile_bounds(values, q)[1] is None)
            assert figure.value == max(values) if figure.max_of else figure.low <= figure.value <= figure.high


def test_the_stored_tails_say_max_of_n_and_the_median_stays_the_median():
    four: dict[str, float | None] = {}
    tail_metrics("ttft", [0.4, 0.1, 0.3, 0.2], four)
    # the median of four has no 95 % interval (it needs 6), and is still the median the scores read
    assert four["ttft_p50_s"] == pytest.approx(0.25) and four["ttft_p50_ci_low_s"] is None and four["ttft_p50_ci_high_s"] is None
    assert four["ttft_p90_s"] is None and four["ttft_p99_s"] is None and four["ttft_samples"] == 4 and four["ttft_max_s"] == 0.4
    forty: dict[str, float | None] = {}
    tail_metrics("ttft", [i / 100 for i in range(1, 41)], forty)
    assert forty["ttft_p90_ci_low_s"] < forty["ttft_p90_s"] < forty["ttft_p90_ci_high_s"] and forty["ttft_p99_s"] is None


def test_a_means_interval_is_students_t():
    # the tables' 97.5 % points
    for freedom, table in ((1, 12.706), (2, 4.303), (3, 3.182), (5, 2.571), (10, 2.228), (30, 2.042), (120, 1.980)):
        assert t_quantile(0.975, freedom) == pytest.approx(table, abs=0.0005)
    figure = mean_figure([10.0, 12.0, 11.0, 13.0])
    assert figure is not None and figure.value == 11.5
    half = 3.182 * math.sqrt(5 / 3) / 2
    assert figure.low == pytest.approx(11.5 - half, abs=0.01) and figure.high == pytest.approx(11.5 + half, abs=0.01)
    assert figure.margin == pytest.approx(half / 11.5, abs=0.001)
    assert mean_figure([3.0]).low is None and mean_figure([]) is None

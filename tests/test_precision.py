"""The precision of Arena's figures (issue 58): order-statistic intervals on percentiles that hold
the true percentile in 95 % of repetitions, "max of n" exactly where the samples cannot bound a
percentile, and Student t intervals on means."""

from __future__ import annotations

import math
import os
import random
import re
import subprocess
from pathlib import Path
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


TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"
#: The rig's TTFT: 20 ms and an exponential wait of mean 20 ms (seeded); decode one token each 4 ms.
JITTERY_RIG = ("--prefill-base-ms", "20", "--prefill-jitter-ms", "20", "--decode-gap-ms", "4")


@pytest.mark.slow
def test_compare_tells_apart_only_what_the_intervals_separate(tmp_path):
    """Two runs of the same rig (its waits drawn anew) and one of a rig that decodes 20 % slower
    (a token each 5 ms, not 4): a figure with intervals is better or worse exactly where the
    intervals leave each other out, "no difference" where they overlap. The slower rig's
    tokens/s is told apart; the card shows the TTFT tails the requests cannot bound as what
    they are."""
    from arena_core.testing import arena, rig_run_argv
    from arena_core.testing.fake_server import FakeServerProcess

    store, shape = tmp_path / "store", tmp_path / "arena.toml"
    # 40 requests of 32 tokens: ten users, four runs (enough to bound a p90, not a p99)
    shape.write_text("[workloads.chat]\nconcurrency = 10\nruns = 4\ngenerated_tokens = 32\n")

    def measured(*rig_args: str) -> str:
        with FakeServerProcess([*rig_args, "--tokenizer", str(TOKENIZER / "tokenizer.json")]) as rig:
            argv = rig_run_argv(rig.url, store, tokenizer=TOKENIZER, workloads="chat", scale="1")
            done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
        return Path(re.search(r"results: (\S+)", done.stdout).group(1)).name

    first, again = measured(*JITTERY_RIG, "--jitter-seed", "1"), measured(*JITTERY_RIG, "--jitter-seed", "2")
    slower = measured(*JITTERY_RIG[:4], "--decode-gap-ms", "5", "--jitter-seed", "3")

    def rows(a: str, b: str) -> dict[str, tuple[str, str, str]]:
        done = arena("compare", a, b, "--output", str(store), env={**os.environ, "COLUMNS": "200"})
        assert done.returncode == 0, done.stderr
        found = {}
        for line in done.stdout.splitlines():
            if match := re.match(r"(chat (?:tok/s|TTFT p50))\s+(\S+ \[\S+\]\s?\S*)\s+(\S+ \[\S+\]\s?\S*)\s+(.+)$", line.strip()):
                found[match.group(1)] = (match.group(2), match.group(3), match.group(4).strip())
        assert set(found) == {"chat tok/s", "chat TTFT p50"}, done.stdout
        return found

    def interval(cell: str) -> tuple[float, float]:
        low, high = re.search(r"\[([0-9.]+)–([0-9.]+)\]", cell).groups()
        return float(low), float(high)

    for a, b in ((first, again), (first, slower)):
        for label, (cell_a, cell_b, said) in rows(a, b).items():
            (low_a, high_a), (low_b, high_b) = interval(cell_a), interval(cell_b)
            overlap = low_a <= high_b and low_b <= high_a
            assert ("no difference" in said) == overlap, (label, cell_a, cell_b, said)
            assert ("better" in said) == (not overlap), (label, cell_a, cell_b, said)
    told = rows(first, slower)["chat tok/s"][2]
    assert re.fullmatch(r"1\.2[0-9]x, A better", told), told  # 5 ms against 4 ms a token: 1.25x
    card = arena("card", first, "--output", str(store), env={**os.environ, "COLUMNS": "200"}).stdout
    assert re.search(r"^chat\s+40\s+.*\] ms\s+max of 40: \d+ ms\s+valid$", card, re.M), card  # p90 bounded by 40, p99 not
    # the widest headline interval of the run, in a line: chat's TTFT p50 (its tokens/s is the rig's steady pace)
    widest = re.search(r"known to ±(\d+) % at worst \(chat TTFT p50, from 40 requests\)", " ".join(card.split()))
    (low, high), middle = interval(rows(first, again)["chat TTFT p50"][0]), float(rows(first, again)["chat TTFT p50"][0].split()[0])
    assert widest and int(widest.group(1)) == round((high - low) / 2 / middle * 100), card


def test_the_knee_is_where_the_latency_curve_bends_most():
    from arena_core.run.capacity import Knee, latency_knee

    # flat, then a queue: the knee at the last flat probe; a light load's stall of 15 ms (2.5x the
    # lightest probe's) is nothing beside the queue's wait
    assert latency_knee([(8, 0.83), (1, 0.010), (2, 0.025), (4, 0.012), (5, 0.42), (6, 0.43)]) == Knee(load=4, beyond=5)
    # a steady climb (processor sharing: TTFT in proportion to users) has no knee
    assert latency_knee([(users, 0.05 * users) for users in (1, 2, 3, 4)]) is None
    # a probe with failures (its p95 is infinite, None) is above every finite one
    assert latency_knee([(1, 0.1), (2, 0.1), (4, 0.11), (8, None)]) == Knee(load=4, beyond=8)
    assert latency_knee([(1, 0.1), (2, 0.15)]) is None and latency_knee([(1, None), (2, None), (4, None)]) is None
    assert Knee(load=4, beyond=5).describe("users") == "4 users (TTFT p95 flat up to 4 users, climbing from 5 users)"


@pytest.mark.slow
def test_arena_run_precision_stops_each_workload_within_the_margin_of_the_rigs_truth(tmp_path):
    """``arena run --precision 5%`` on a rig whose TTFT is 300 ms and an exponential wait of mean
    30 ms (its median 300 + 30 ln 2 = 320.8 ms; the waits' quantiles evenly spread, so a run's
    sample follows the distribution) and which decodes a token each 10 ms (100 tok/s a stream):
    each closed-loop workload runs until its TTFT p50 and decode speed are within ±5 % at 95 %
    and says so with the runs it took, the open-loop one lets requests go on its schedule until
    its TTFT p50 and TPOT p50 are; its TTFT p50 is within 5 % of the rig's median and its
    interval holds it (with the rig's and client's own delay, measured on the rig without the
    wait), and its decode speed is within 5 % of the rig's."""
    import json

    from arena_core.testing import rig_run_argv
    from arena_core.testing.fake_server import FakeServerProcess

    (tmp_path / "arena.toml").write_text(
        # answers of 64 tokens: a first token late on a busy machine (the rig then keeps to its
        # schedule) made a 16-token stream's decode 5.7 % fast in CI's clean clone (about 9 ms of
        # its 150 ms); over 64 tokens the same delay is 1.4 %
        "[workloads.chat]\nconcurrency = 4\ngenerated_tokens = 64\n\n[workloads.long-output]\nconcurrency = 4\ngenerated_tokens = 64\nprompt_tokens = 32\n"
        "\n[workloads.monday-peak]\nrequest_rate = 10\nnum_prompts = 30\ninput_tokens = 64\noutput_tokens = 16\n"
    )

    def measured(jitter_ms: int, *extra: str) -> tuple[str, Path]:
        rig_args = ["--prefill-base-ms", "300", "--prefill-jitter-ms", str(jitter_ms), "--jitter-seed", "5", "--decode-gap-ms", "10"]
        with FakeServerProcess([*rig_args, "--tokenizer", str(TOKENIZER / "tokenizer.json")]) as rig:
            argv = rig_run_argv(rig.url, tmp_path / "store", tokenizer=TOKENIZER, workloads="chat,long-output,monday-peak", scale="1", extra=extra)
            done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stderr, Path(re.search(r"results: (\S+)", done.stdout).group(1))

    def metrics(run_dir: Path, name: str) -> dict:
        return json.loads((run_dir / "workloads" / name / "result.json").read_text())

    _, unhurried = measured(0)
    said, run_dir = measured(30, "--precision", "5%", "--precision-cap", "90s")
    assert json.loads((run_dir / "manifest.json").read_text())["precision"] == 0.05
    for name in ("chat", "long-output"):
        stopped = re.search(rf"{name}: within ±5 % after (\d+) runs: TTFT p50 ±([0-9.]+) %, decode tok/s per user ±([0-9.]+) %", said)
        assert stopped and 2 <= int(stopped.group(1)) < 60 and max(float(stopped.group(2)), float(stopped.group(3))) <= 5, said[-3000:]
        result = metrics(run_dir, name)
        assert any(label.startswith("within ±5 % after") for label in result["verdict"]["labels"]), result["verdict"]
        figures, delay = result["metrics"], metrics(unhurried, name)["metrics"]["ttft_p50_s"] - 0.300
        low, high = figures["ttft_p50_ci_low_s"], figures["ttft_p50_ci_high_s"]
        truth = 0.300 + 0.030 * math.log(2) + delay
        assert (high - low) / 2 / figures["ttft_p50_s"] <= 0.05 and low <= truth <= high, (figures, delay)
        assert abs(figures["ttft_p50_s"] - truth) <= 0.05 * truth, (figures, delay)
        assert abs(figures["decode_tps_per_user"] - 100) <= 5, figures
    # open loop: requests let go on monday-peak's schedule (10 a second, up to the cap's 900)
    # until precise; TPOT p50 is the rig's 10 ms a token
    stopped = re.search(r"monday-peak: within ±5 % after (\d+) requests \((\d+) let go\): TTFT p50 ±([0-9.]+) %, TPOT p50 ±([0-9.]+) %", said)
    assert stopped and 20 <= int(stopped.group(1)) <= int(stopped.group(2)) < 200, said[-3000:]
    result = metrics(run_dir, "monday-peak")
    figures, delay = result["metrics"], metrics(unhurried, "monday-peak")["metrics"]["ttft_p50_s"] - 0.300
    assert result["requests"] == int(stopped.group(2)) == json.loads((run_dir / "workloads" / "monday-peak" / "vllm-bench.json").read_text())["num_prompts"]
    assert result["failed"] == 0 and any(label.startswith(f"within ±5 % after {result['requests']} requests") for label in result["verdict"]["labels"])
    assert abs(figures["ttft_p50_s"] - (0.300 + 0.030 * math.log(2) + delay)) <= 0.05 * 0.3208 and abs(figures["tpot_p50_s"] - 0.010) <= 0.0005, figures


def test_compare_judges_the_intervals_as_it_writes_them():
    """Two TTFTs whose intervals touch on the page ("48 [45–57] ms", "37 [31–45] ms") are no
    difference, though unrounded they miss each other by half a millisecond: the verdict is one a
    reader can check on the row (CI's clean clone failed the rig test on exactly this)."""
    from arena_core.cli.cmd_compare import LOWER, Rows, _written_seconds
    from arena_core.report.formats import fmt_seconds_within

    table = Rows()
    table.add_within("chat TTFT p50", (0.0484, 0.0452, 0.0573), (0.0372, 0.0312, 0.04496), fmt_seconds_within, _written_seconds, LOWER)
    assert table.rows == [("chat TTFT p50", "48 [45–57] ms", "37 [31–45] ms", "1.30x, no difference")]
    table.add_within("chat TTFT p50", (0.0484, 0.0462, 0.0573), (0.0372, 0.0312, 0.04496), fmt_seconds_within, _written_seconds, LOWER)
    assert table.rows[-1][3] == "1.30x, B better"  # 46 against 45: apart on the page too


def test_a_run_until_precise_says_what_it_may_take_at_most(registry):
    """Not the thousand runs a workload may make: its cap's worth, and that it stops sooner."""
    from arena_core.report.expected import ASSUMED_TPS_PER_USER, expected_work
    from arena_core.run.precision_plan import until_precise

    chat = registry.get("workloads", "chat")
    (precise,) = until_precise([chat], 0.05, 120.0)
    run_s = chat.shape.turns * chat.shape.generated_tokens / ASSUMED_TPS_PER_USER
    runs = min(precise.shape.runs, -(-120 // run_s))
    said = expected_work([precise])
    assert (
        said.startswith(f"expected at most: {int((runs + 1) * chat.shape.concurrency):,} requests")
        and "stops sooner once its figures are within the margin" in said
    )
    assert expected_work([chat]).startswith(f"expected: {(chat.shape.runs + 1) * chat.shape.concurrency:,} requests")

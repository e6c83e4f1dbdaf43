"""How often the 95 % intervals Arena puts on percentiles hold the true percentile: seeded
repetitions of n samples from distributions whose percentiles are known, per percentile and
sample size. A calibrated interval holds it in 95 % of repetitions; with 200 repetitions, one
count is ±1.5 points of sampling noise, so the default asks 2,000.

    python bench/percentile_coverage.py [--repetitions 2000] [--json]
    python bench/percentile_coverage.py --rig [--repetitions 200]

Also prints, per percentile, the fewest samples that bound it from above (fewer: "max of n").

``--rig``: the same through the measuring rig and Arena's own client. One ``arena run`` of
many requests (25 at a time) on a rig whose TTFT is 5 ms plus an exponential wait of mean 50
ms, drawn at random for each request (``--jitter-draws random``); its measured TTFTs, in a
seeded random order, are cut into repetitions of n, each interval judged against the
percentile of all of them (the rig's distribution as the client measures it, its own delay
included). p50 at n = 10 and 40, p90 at n = 40. Cut in the order they were sent, runs of
consecutive requests are not samples of one distribution (a run lets its requests go one
after another): that way, with 50 at a time and a wait of mean 20 ms, the coverage was 50-74 %.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import subprocess
import tempfile
from pathlib import Path
from statistics import NormalDist

from arena_core.loadgen.goodput import first_token_s
from arena_core.loadgen.precision import bounded_above, percentile_bounds
from arena_core.loadgen.records_io import read_records
from arena_core.loadgen.stats import percentile
from arena_core.testing import rig_run_argv
from arena_core.testing.fake_server import FakeServerProcess

TOKENIZER = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "vllm" / "tokenizer"
#: (percentile, requests in a repetition) measured through the rig
RIG_CELLS = ((50, 10), (50, 40), (90, 40))

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


def rig_ttfts(requests: int) -> list[float]:
    """The TTFTs of ``requests`` requests through the rig."""
    with (
        tempfile.TemporaryDirectory() as folder,
        FakeServerProcess(
            [
                "--prefill-base-ms",
                "5",
                "--prefill-jitter-ms",
                "20",
                "--jitter-draws",
                "random",
                "--decode-gap-ms",
                "1",
                "--tokenizer",
                str(TOKENIZER / "tokenizer.json"),
            ]
        ) as rig,
    ):
        runs = math.ceil(requests / 25)
        Path(folder, "arena.toml").write_text(f"[workloads.chat]\nconcurrency = 25\nruns = {runs}\ngenerated_tokens = 4\nprompt_tokens = 16\n")
        argv = rig_run_argv(rig.url, Path(folder) / "store", tokenizer=TOKENIZER, workloads="chat", scale="1")
        done = subprocess.run(argv, capture_output=True, text=True, cwd=folder, timeout=3600)
        if done.returncode != 0:
            raise SystemExit(done.stderr[-2000:])
        run_dir = Path(re.search(r"results: (\S+)", done.stdout).group(1))
        records = [r for r in read_records(run_dir / "workloads" / "chat" / "records.jsonl") if r.ok and not r.warmup]
        return [t for r in records if (t := first_token_s(r)) is not None]


def rig_coverage(repetitions: int) -> dict[str, float]:
    """Each cell's coverage over ``repetitions`` runs of consecutive requests through the rig."""
    ttfts = rig_ttfts(repetitions * max(n for _, n in RIG_CELLS))
    random.Random(58).shuffle(ttfts)
    found = {}
    for q, n in RIG_CELLS:
        truth, held, count = percentile(ttfts, q), 0, 0
        for start in range(0, n * repetitions, n):
            low, high = percentile_bounds(ttfts[start : start + n], q)
            held += low is not None and high is not None and low <= truth <= high
            count += 1
        found[f"rig p{q} n={n} ({count} repetitions)"] = held / count
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rig", action="store_true", help="through the rig and Arena's client (default repetitions: 200)")
    args = parser.parse_args()
    if args.rig:
        found = rig_coverage(args.repetitions if args.repetitions != 2000 else 200)
        print(json.dumps(found, indent=1) if args.json else "\n".join(f"{label:36} {held:6.1%}" for label, held in found.items()))
        return
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

"""How many probes and how many minutes `arena capacity` needs against a fixed grid, side by side
against the rig with a known capacity, in one run.

    python bench/capacity_search.py [--load users|rate|both] [--slots 4] [--limit 16] [--json]

``users``: the rig has ``--slots`` slots and queues beyond them; under a TTFT limit of half an
answer its capacity is exactly that many users. The search doubles then bisects to within one
user; a fixed grid must probe every load from 1 to ``--limit`` to be as precise.

``rate``: the rig has 2 slots and answers in 0.377 s, so it keeps up with at most 5.3 requests/s
(arrivals nearly regular and answers of one length, from a config file). The fixed grid is the
seed site's own six steps (test 11: 0.1, 0.2, 0.3, 0.5, 0.7, 1.0 req/s with 100, 100, 100, 125,
175, 250 prompts), here at ten times the rates so that it ends in minutes; its answer is only as
precise as its steps (between 5 and 7 req/s: ±40 %). The search runs twice: at the grid's
precision (40 %) and at its own default (10 %).

Every grid step is a one-probe ``arena capacity``, judged by the same rule as the search's probes,
so the ratios of probes and of wall time are the search's saving. Times on a shared machine are
noise; probe counts are not.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from arena_core.testing.fake_server import FakeServerProcess

TOKENIZER = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "vllm" / "tokenizer"
USERS_SLO = "ttft=200ms,tps=none"  # half one answer (20 tokens x 20 ms), twenty times an unqueued TTFT
RATE_SLO = "ttft=10s,tps=none"  # loose: whether the rig keeps up decides
#: The seed's test 11 (capacity.md section 2) at ten times its rates: (req/s, prompts).
SEED_GRID = ((1.0, 100), (2.0, 100), (3.0, 100), (5.0, 125), (7.0, 175), (10.0, 250))
RATE_RIG = ["--slots", "2", "--prefill-base-ms", "10", "--decode-gap-ms", "19.3"]
RATE_CONFIG = "[workloads.office-baseline]\nburstiness = 100\nrange_ratio = 0.0\n"


def capacity(url: str, output: Path, *args: str) -> tuple[list[tuple[float, bool]], float]:
    """One ``arena capacity``: its probes (load, passed) and seconds."""
    argv = [sys.executable, "-m", "arena_core", "capacity", "--base-url", url, "--tokenizer", str(TOKENIZER), "--output", str(output), *args]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"arena capacity failed: {done.stderr.strip().splitlines()[-1]}")
    probes = [(float(load), verdict == "pass") for load, verdict in re.findall(r"probe ([0-9.]+) (?:users?|req/s): .*: (pass|fail)", done.stderr)]
    return probes, time.perf_counter() - started


def answer(probes: list[tuple[float, bool]]) -> tuple[float | None, float | None]:
    """The most load that passed and the least above it that failed."""
    best = max((load for load, passed in probes if passed), default=None)
    above = [load for load, passed in probes if not passed and load > (best or 0)]
    return best, min(above, default=None)


def users(scratch: Path, slots: int, limit: int, probe_requests: int) -> dict:
    rig = ["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--slots", str(slots), "--prefill-base-ms", "10", "--decode-gap-ms", "20"]
    common = ["--scale", "0.02", "--slo", USERS_SLO, "--probe-requests", str(probe_requests), "--precision", "0"]
    with FakeServerProcess(rig) as server:
        searched, search_s = capacity(server.url, scratch / "search", *common, "--start", "1", "--limit", str(limit))
        grid, grid_s = [], 0.0
        for load in range(1, limit + 1):
            probes, seconds = capacity(server.url, scratch / f"grid-{load}", *common, "--start", str(load), "--limit", str(load))
            grid += probes
            grid_s += seconds
    return {
        "true_capacity": slots,
        "search_capacity": answer(searched)[0],
        "grid_capacity": answer(grid)[0],
        "search_probes": len(searched),
        "grid_probes": len(grid),
        "search_minutes": round(search_s / 60, 2),
        "grid_minutes": round(grid_s / 60, 2),
    }


def rate(scratch: Path) -> dict:
    config = scratch / "arena.toml"
    config.write_text(RATE_CONFIG)
    common = ["--load", "rate", "--scale", "0.04", "--slo", RATE_SLO, "--config", str(config)]
    found: dict = {"true_capacity": round(2 / (0.010 + 19 * 0.0193), 2)}
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), *RATE_RIG]) as server:
        grid, grid_s = [], 0.0
        for step, prompts in SEED_GRID:
            args = ["--start", str(step), "--limit", str(step), "--probe-requests", str(prompts), "--probe-seconds", "0"]
            probes, seconds = capacity(server.url, scratch / f"grid-{step:g}", *common, *args)
            grid += probes
            grid_s += seconds
        low, high = answer(grid)
        found["grid"] = {"capacity": low, "fails_at": high, "probes": len(grid), "minutes": round(grid_s / 60, 2)}
        for precision in (0.4, 0.1):
            args = ["--start", "1", "--limit", "64", "--precision", str(precision), "--probe-requests", "100", "--probe-seconds", "30"]
            searched, search_s = capacity(server.url, scratch / f"search-{precision:g}", *common, *args)
            low, high = answer(searched)
            found[f"search_{precision:g}"] = {"capacity": low, "fails_at": high, "probes": len(searched), "minutes": round(search_s / 60, 2)}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", choices=("users", "rate", "both"), default="both")
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--limit", type=int, default=16)
    parser.add_argument("--probe-requests", type=int, default=20)
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of the table")
    args = parser.parse_args()
    result: dict = {}
    with tempfile.TemporaryDirectory(prefix="arena-capacity-bench-") as scratch:
        if args.load in ("users", "both"):
            (Path(scratch) / "users").mkdir()
            result["users"] = users(Path(scratch) / "users", args.slots, args.limit, args.probe_requests)
        if args.load in ("rate", "both"):
            (Path(scratch) / "rate").mkdir()
            result["rate"] = rate(Path(scratch) / "rate")
    if args.json:
        print(json.dumps(result))
        return
    if "users" in result:
        found = result["users"]
        print(f"users: true capacity (slots) {found['true_capacity']}")
        print(f"  search: {found['search_capacity']:g} users in {found['search_probes']} probes, {found['search_minutes']:.2f} min")
        print(f"  grid 1..{args.limit}: {found['grid_capacity']:g} users in {found['grid_probes']} probes, {found['grid_minutes']:.2f} min")
        print(
            f"  the search needs {found['search_probes'] / found['grid_probes']:.2f}x the probes and {found['search_minutes'] / found['grid_minutes']:.2f}x the time"
        )
    if "rate" in result:
        found = result["rate"]
        grid = found["grid"]
        print(f"rate: true capacity {found['true_capacity']} req/s (2 slots / 0.377 s)")
        for name, label in (("grid", "the seed's six steps x10"), ("search_0.4", "search at 40 %"), ("search_0.1", "search at 10 %")):
            line = found[name]
            print(
                f"  {label}: {line['capacity']} req/s, fails at {line['fails_at']}; {line['probes']} probes, {line['minutes']:.2f} min"
                + (f" ({line['probes'] / grid['probes']:.2f}x the probes, {line['minutes'] / grid['minutes']:.2f}x the time)" if name != "grid" else "")
            )


if __name__ == "__main__":
    main()

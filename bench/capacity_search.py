"""How many probes and how many minutes `arena capacity` needs against a fixed grid that gives the
same precision, side by side against the rig with a known capacity (``--slots``).

    python bench/capacity_search.py [--slots 4] [--max-users 16] [--json]

The search doubles then bisects to within one user here (the answer is small); a fixed grid must
probe every load from 1 to ``--max-users`` to be as precise. Both run the same probes (the grid's
each as a one-probe ``arena capacity``), so the ratio of probes and of wall time is the search's
saving. Times on a shared machine are noise; the probe counts are not.
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
SLO = "ttft=200ms,tps=none"  # half one answer (20 tokens x 20 ms), twenty times an unqueued TTFT


def capacity(url: str, output: Path, start: int, limit: int, probe_requests: int) -> tuple[list[tuple[int, bool]], float]:
    """``arena capacity`` from ``start`` to ``limit`` users: its probes (users, passed) and seconds."""
    argv = [sys.executable, "-m", "arena_core", "capacity", "--base-url", url, "--tokenizer", str(TOKENIZER), "--scale", "0.02", "--slo", SLO]
    argv += ["--start", str(start), "--limit", str(limit), "--probe-requests", str(probe_requests), "--precision", "0", "--output", str(output)]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"arena capacity failed: {done.stderr.strip().splitlines()[-1]}")
    probes = [(int(users), verdict == "pass") for users, verdict in re.findall(r"probe (\d+) users?: .*: (pass|fail)", done.stderr)]
    return probes, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--max-users", type=int, default=16)
    parser.add_argument("--probe-requests", type=int, default=20)
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of the table")
    args = parser.parse_args()
    rig = ["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--slots", str(args.slots), "--prefill-base-ms", "10", "--decode-gap-ms", "20"]
    with tempfile.TemporaryDirectory(prefix="arena-capacity-bench-") as scratch, FakeServerProcess(rig) as server:
        searched, search_s = capacity(server.url, Path(scratch) / "search", 1, args.max_users, args.probe_requests)
        grid, grid_s = [], 0.0
        for users in range(1, args.max_users + 1):
            probes, seconds = capacity(server.url, Path(scratch) / f"grid-{users}", users, users, args.probe_requests)
            grid += probes
            grid_s += seconds
    found = max((users for users, passed in searched if passed), default=None)
    gridded = max((users for users, passed in grid if passed), default=None)
    result = {
        "true_capacity": args.slots,
        "search_capacity": found,
        "grid_capacity": gridded,
        "search_probes": len(searched),
        "grid_probes": len(grid),
        "search_minutes": round(search_s / 60, 2),
        "grid_minutes": round(grid_s / 60, 2),
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"true capacity (slots): {args.slots} users")
    print(f"search: {found} users in {len(searched)} probes, {search_s / 60:.2f} min")
    print(f"grid:   {gridded} users in {len(grid)} probes, {grid_s / 60:.2f} min")
    print(f"the search needs {len(searched) / len(grid):.2f}x the probes and {search_s / grid_s:.2f}x the time")


if __name__ == "__main__":
    main()

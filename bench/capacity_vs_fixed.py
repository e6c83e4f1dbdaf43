"""Do a capacity search's probes agree with plain fixed-load runs of the same loads? Side by side
on one embedded llama.cpp server (Gemma 3 270M), in one run.

    python bench/capacity_vs_fixed.py [--limit 8] [--scale 0.1] [--json]

One llama-server is started with ``--limit`` slots; ``arena capacity`` searches it (attached, so
both measure the same server), then for every load it probed, ``arena run --workloads chat --set
concurrency=N,runs=R`` measures that load twice with the runs the probe measured. Per load it
prints tokens/s per user, total decode tokens/s and TTFT p50 of the probe against the first fixed
run, and, as the noise to judge that by, the first fixed run against the second: the curve is the
fixed-load numbers when the probe's ratios are as close to 1 as the repeat's.

The server caches prompts (llama-benchy's default requests do not turn it off). Each probe draws
prompts of its own (its seed is the workload's plus the load), and the fixed runs draw the
workload's, so the probe and the first fixed run both meet the server with new prompts; the repeat
sends the first fixed run's prompts again and may find them cached, which shortens its TTFT alone.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from arena_core import ArenaHooks, BackendRequest, make_plugin_manager
from arena_core.loadgen import read_records
from arena_core.run.store import load_result, workload_dir

SLO = "relaxed"


def arena(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "arena_core", *args], capture_output=True, text=True, timeout=1800)
    if done.returncode not in (0, 4):
        raise SystemExit(f"arena {args[0]} failed: {done.stderr.strip().splitlines()[-1]}")
    return done


def figures(run_dir: Path, workload: str) -> dict:
    result = load_result(run_dir, workload)
    assert result is not None, f"{workload} has no result in {run_dir}"
    return {"per_user_tps": result.tokens_per_second, "total_tps": result.metrics.get("decode_tps_total"), "ttft_p50_s": result.ttft_p50_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=8, help="the most users probed (the server's slots)")
    parser.add_argument("--scale", default="0.1")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of the table")
    args = parser.parse_args()
    registry = ArenaHooks(make_plugin_manager(autoload=False, strict=True)).registry
    model = registry.get("models", "gemma-3-270m")
    rows = []
    with tempfile.TemporaryDirectory(prefix="arena-capacity-vs-fixed-") as scratch:
        store = Path(scratch) / "store"
        request = BackendRequest(model=model, run_dir=Path(scratch), max_context_tokens=4096, max_concurrency=args.limit)
        backend = registry.get("backends", "llama-cpp").create(request)
        endpoint = backend.start()
        try:
            attached = ["gemma-3-270m", "--base-url", endpoint.base_url, "--hardware", "cpu-host", "--scale", args.scale, "--output", str(store)]
            searched = arena("capacity", *attached, "--slo", SLO, "--limit", str(args.limit))
            run_id = re.search(r"arena card (\S+)\)", searched.stdout).group(1)
            search_dir = store / run_id
            for name in sorted((p.name for p in (search_dir / "workloads").iterdir() if p.is_dir()), key=lambda n: int(n.rsplit("-", 1)[1])):
                users = int(name.rsplit("-", 1)[1])
                records = read_records(workload_dir(search_dir, name) / "records.jsonl")
                runs = len({r.run_index for r in records if not r.warmup})
                fixed = []
                for _ in range(2):
                    plain = arena("run", *attached, "--workloads", "chat", "--set", f"concurrency={users}", "--set", f"runs={runs}")
                    fixed.append(figures(Path(re.search(r"results: (\S+)", plain.stdout).group(1)), "chat"))
                rows.append({"users": users, "runs": runs, "probe": figures(search_dir, name), "fixed": fixed[0], "repeat": fixed[1]})
        finally:
            backend.stop()
    if args.json:
        print(json.dumps(rows))
        return
    print(f"{'users':>5} {'runs':>4}  {'':>8}  {'tok/s per user':>24}  {'tok/s total':>24}  {'TTFT p50 (s)':>24}")
    for row in rows:
        for label, first, second in (("probe", "probe", "fixed"), ("repeat", "fixed", "repeat")):
            cells = []
            for key in ("per_user_tps", "total_tps", "ttft_p50_s"):
                a, b = row[first][key], row[second][key]
                cells.append(f"{a or 0:8.3g} / {b or 0:<8.3g} = {a / b:.2f}" if a and b else "—")
            lead = f"{row['users']:>5} {row['runs']:>4}" if label == "probe" else " " * 10
            print(f"{lead}  {label + ' vs fixed' if label == 'probe' else 'fixed vs repeat':>8}  " + "  ".join(f"{cell:>24}" for cell in cells))


if __name__ == "__main__":
    main()

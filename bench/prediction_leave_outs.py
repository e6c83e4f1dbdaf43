"""How well the default predictor predicts a run in each situation a prediction is used in:
the error ledger of the seed cohort under each leave-out kind (``arena_prediction.leave_out``:
one run, one model family, a new engine version, a new architecture kind), tier 1 beside tier 0
on the same results, median and p90 absolute % error, and how many the 80 % interval holds.

    python bench/prediction_leave_outs.py [--json] [--weights 1,0.75,0.5]

``--weights``: tier 1 at each weight between the priors (0) and the fit (1), for choosing how far
a prediction in that situation should trust the fit.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from arena_core import ArenaHooks, make_plugin_manager
from arena_core.loadgen.stats import nearest_rank
from arena_core.results.cards import load_cards
from arena_core.results.predictions import interval_coverage
from arena_core.types import LedgerLine
from arena_prediction.leave_out import KINDS
from arena_prediction.ledger import ledger

METRICS = (("tps", "tps", False), ("ttft", "ttft", False), ("output_tps", "tps", True), ("open_ttft", "ttft", True))


def summary(lines: Sequence[LedgerLine], judged: set[tuple[str, str]]) -> dict[str, list[float]]:
    """Per metric: median and p90 absolute % error, the 80 % interval's share and the count, over
    the results in ``judged`` (run, workload) only, so tier 0 and tier 1 are judged on the same ones."""
    found = {}
    mine = [line for line in lines if (line.run_id, line.workload) in judged]
    for name, metric, loop in METRICS:
        errors = [e for line in mine if line.open_loop == loop and (e := line.error(metric)) is not None]
        inside, counted = interval_coverage(mine, metric, open_loop=loop)
        if errors:
            found[name] = [round(statistics.median(errors), 1), round(nearest_rank(errors, 90), 1), round(100 * inside / max(1, counted)), len(errors)]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--weights", default="1")
    args = parser.parse_args()
    weights = [float(w) for w in args.weights.split(",")]
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "store"
        subprocess.run([sys.executable, "-m", "arena_core", "import", "--seeds", "--output", str(store)], check=True, capture_output=True)
        hooks = ArenaHooks(make_plugin_manager())
        cards, _ = load_cards(store, hooks.registry)
        tier0 = ledger(cards, hooks.registry, calibrated=False)
        fits: dict = {}  # one fit per set of runs learnt from, shared by the kinds and weights
        report: dict[str, dict] = {}
        for kind in KINDS:
            by_weight = {w: ledger(cards, hooks.registry, leave=kind, weight=w, fits=fits) for w in weights}
            judged = {(line.run_id, line.workload) for line in by_weight[weights[0]] if line.tier == 1}
            rows = {"tier 0": summary(tier0, judged), **{f"tier 1 at weight {w:g}": summary(by_weight[w], judged) for w in weights}}
            report[kind] = {"results": len(judged), "rows": rows}
            print(f"{kind}: done", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for kind, found in report.items():
        print(f"\nleave out: {kind} ({found['results']} results predicted): median / p90 absolute % error (80 % interval holds)")
        for name, metrics in found["rows"].items():
            cells = "  ".join(f"{metric} {m:5.1f} / {p:5.1f} % ({c:3d} %)" for metric, (m, p, c, _) in metrics.items())
            print(f"  {name:22s} {cells}")


if __name__ == "__main__":
    main()

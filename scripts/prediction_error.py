"""How far the step simulator's predictions are from the seed site's measurements: leave one model
out over its published cohort (17 models on one DGX Spark, vLLM; ``arena import --seeds``), at
tier 0 (specs and the priors only) and tier 1 (efficiencies fitted to the other 16 models).

    python scripts/prediction_error.py [--json] [--output STORE]

``--output``: the ledger of a results directory's runs instead (the seed's imported there, or
your own), with the fits it keeps (``<STORE>/calibrations``): read where they are, kept where not.

For every model and every closed-loop workload (c=10, llama-benchy) it predicts per-user tokens/s
and the mean time to first response, as the seed prints them, and reports the absolute % error:
the median and p90 per workload and metric, then over everything (the goals of prediction.md are
for these). The open-loop workloads follow, apart: their output throughput and TTFT p50; then
the seed's G of every workload. It is the error ledger of
:mod:`arena_prediction.ledger` over the seed's cards (each model is one run, so leaving its run out
leaves the model out). A model whose layout the catalog does not hold is predicted from its
parameter counts alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import attrs

from arena_core import ArenaHooks, make_plugin_manager
from arena_core.loadgen.stats import nearest_rank
from arena_core.results.cards import load_cards
from arena_core.results.predictions import ledger_of, ledger_summary
from arena_prediction.ledger import ledger


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object: every prediction and the summary")
    parser.add_argument("--output", type=Path, help="a results directory whose runs to predict, with the fits it keeps (default: the seed's, imported afresh)")
    args = parser.parse_args()
    registry = ArenaHooks(make_plugin_manager(autoload=False, strict=True)).registry
    if args.output is not None and not args.output.is_dir():
        raise SystemExit(f"--output: {args.output} is not a results directory")
    with tempfile.TemporaryDirectory(prefix="arena-prediction-error-") as folder:
        store = args.output or Path(folder)
        if args.output is None:
            imported = subprocess.run([sys.executable, "-m", "arena_core", "import", "--seeds", "--output", str(store)], capture_output=True, text=True)
            if imported.returncode != 0:
                raise SystemExit(f"arena import --seeds failed: {imported.stderr.strip()}")
        cards, _ = load_cards(store, registry)
        tiers = {"tier0": ledger(cards, registry, calibrated=False), "tier1": ledger_of(store, cards, registry) or []}
    names = {card.run_id: card.model for card in cards}
    if args.json:
        rows = [{**attrs.asdict(line), "model": names[line.run_id], "tier": tier} for tier, lines in tiers.items() for line in lines]
        print(json.dumps({"rows": rows, "summary": {tier: ledger_summary(lines) for tier, lines in tiers.items()}}))
        return
    summary = {tier: {(w, m): (median, p90) for w, m, _, median, p90 in ledger_summary(lines)} for tier, lines in tiers.items()}
    print(f"Leave-one-model-out over the seed cohort ({len(cards)} models, GB10, vLLM): absolute % error, median / p90")
    for title, speed in (("closed loop (c = 10): per-user tok/s, mean TTFT", "tps"), ("open loop: output tok/s, TTFT p50", "output_tps")):
        print(f"\n{title}\n{'workload':<18} {'tier 0 tok/s':>14} {'tier 0 TTFT':>14} {'tier 1 tok/s':>14} {'tier 1 TTFT':>14}")
        for workload in sorted({w for w, m in summary["tier0"] if m == speed}):
            cells = [f"{found[0]:.0f} / {found[1]:.0f}" if (found := summary[t].get((workload, m))) else "—" for t in tiers for m in (speed, "ttft")]
            print(f"{workload:<18} " + " ".join(f"{cell:>14}" for cell in cells))
    print(
        f"\nthe seed's G (closed loop: a round's total decode tok/s; open loop: total tok/s / peak concurrency)\n{'workload':<18} {'tier 0 G':>14} {'tier 1 G':>14}"
    )
    for workload in sorted({w for w, m in summary["tier0"] if m == "site_tps"}):
        cells = [f"{found[0]:.0f} / {found[1]:.0f}" if (found := summary[t].get((workload, "site_tps"))) else "—" for t in tiers]
        print(f"{workload:<18} " + " ".join(f"{cell:>14}" for cell in cells))
    print()
    for open_loop, kind in ((False, "closed loop"), (True, "open loop")):
        for tier, lines in tiers.items():
            for metric in ("tps", "ttft", "site_tps"):
                errors = sorted(e for line in lines if line.open_loop == open_loop and (e := line.error(metric)) is not None)
                if errors:
                    print(
                        f"{kind}, {tier} {metric}: median {statistics.median(errors):.1f} %, p90 {nearest_rank(errors, 90):.1f} % over {len(errors)} predictions"
                    )


if __name__ == "__main__":
    main()

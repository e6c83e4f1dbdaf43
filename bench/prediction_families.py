"""How well the default predictor predicts a model nobody has measured: the error ledger of the
seed cohort, leave-one-run-out (as the cards and the site show it) beside leave-one-family-out
(every build of one model family -- its sizes and precisions -- held out of the fit together),
per workload and metric, and the medians over all of them (prediction.md, issue 32's goals).

    python bench/prediction_families.py [--json]

Tier 1 is fitted to the other folds (the fits are not kept in any store); tier 0 (the priors,
no fit) is the same both ways and printed once. Tier 1's medians are given over every result and
again over the results of runs that did not decode speculatively (the others are simulated at
an assumed acceptance of their drafts).
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

import arena_prediction.ledger as ledger_module
from arena_core import ArenaHooks, make_plugin_manager
from arena_core.loadgen.stats import nearest_rank
from arena_core.results.cards import load_cards
from arena_core.results.predictions import interval_coverage, ledger_of, ledger_summary
from arena_core.types import LedgerLine, ModelCard
from arena_prediction.calibration import decodes_speculatively, model_of

#: The seed cohort's model families (series): every build of one -- its sizes and precisions --
#: is held out of the fit together. Longest first: a name takes the first that starts it.
FAMILIES = ("nemotron-3-nano-omni", "nemotron-3-nano", "nemotron-3-super", "gemma-4", "ministral-3", "mistral-small", "qwen3.5", "qwen3.6")


def family(card: ModelCard) -> str:
    """The card's model family (``qwen3.5``, ``gemma-4``, ``nemotron-3-nano-omni``, ...); a model
    of none of them is a family of its own."""
    name = card.model.replace("qwen-", "qwen")
    return next((found for found in FAMILIES if name.startswith(found)), name)


def ledger(store: Path, cards: Sequence[ModelCard], hooks: ArenaHooks, *, by_family: bool) -> list[LedgerLine]:
    """The store's ledger; ``by_family``: each fold one family (its runs predicted by a fit to the others)."""
    original = ledger_module.ledger_folds
    if by_family:
        families = sorted({family(card) for card in cards})
        of_run = {card.run_id: families.index(family(card)) for card in cards}
        ledger_module.ledger_folds = lambda run_ids, most=0: {run_id: of_run[run_id] for run_id in run_ids}
    try:
        return ledger_of(store, cards, hooks.registry) or []
    finally:
        ledger_module.ledger_folds = original


def speculative_runs(cards: Sequence[ModelCard], hooks: ArenaHooks) -> set[str]:
    """The runs that decoded speculatively (an MTP build, or a server's stated draft tokens): the
    simulator assumes their drafts' acceptance; their results are in the ledger and out of every fit."""
    return {card.run_id for card in cards if (model := model_of(card, hooks.registry)) is not None and decodes_speculatively(card, model)}


def medians(lines: Sequence[LedgerLine], tier: int = 1) -> dict[str, float]:
    """The median absolute % error over every result of ``tier``, per metric (tokens/s of closed
    and open loop apart, TTFT of closed and open loop apart)."""
    found = {}
    for name, metric, loop in (("tps", "tps", False), ("ttft", "ttft", False), ("output_tps", "tps", True), ("open_ttft", "ttft", True)):
        errors = [e for line in lines if line.open_loop == loop and line.tier == tier and (e := line.error(metric)) is not None]
        if errors:
            found[name] = round(statistics.median(errors), 1)
            found[f"{name}_p90"] = round(nearest_rank(errors, 90), 1)
    return found


def coverage(lines: Sequence[LedgerLine]) -> dict[str, tuple[int, int]]:
    """How many results the 80 % interval holds, of how many, per metric and kind of loop."""
    kinds = (("tps", "tps", False), ("ttft", "ttft", False), ("output_tps", "tps", True), ("open_ttft", "ttft", True))
    return {name: interval_coverage(lines, metric, open_loop=loop) for name, metric, loop in kinds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "store"
        subprocess.run([sys.executable, "-m", "arena_core", "import", "--seeds", "--output", str(store)], check=True, capture_output=True)
        hooks = ArenaHooks(make_plugin_manager())
        cards, _ = load_cards(store, hooks.registry)
        report = {}
        speculative = speculative_runs(cards, hooks)
        for name, by_family in (("leave-one-run-out", False), ("leave-one-family-out", True)):
            for fits in (store / "calibrations").glob("ledger-fits--*.json"):
                fits.unlink()  # each way fitted afresh
            lines = ledger(store, cards, hooks, by_family=by_family)
            inside = coverage(lines)
            covered = [line for line in lines if line.run_id not in speculative]
            report[name] = {
                "medians": medians(lines),
                "medians_without_speculative_runs": medians(covered),
                "interval_coverage": inside,
                "per_workload": ledger_summary(lines),
            }
        tier0 = ledger_module.ledger(cards, hooks.registry, calibrated=False)
        report["tier 0"] = {"medians": medians(tier0, tier=0), "interval_coverage": coverage(tier0)}
        report["families"] = sorted({family(card) for card in cards})
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print("families:", ", ".join(report["families"]))
    for name in ("tier 0", "leave-one-run-out", "leave-one-family-out"):
        print(f"\n{name}: median (p90) absolute % error" + (" at tier 1" if name != "tier 0" else " (the priors: no fit, no run left out)"))
        found = report[name]["medians"]
        for metric in ("tps", "ttft", "output_tps", "open_ttft"):
            if metric in found:
                print(f"  {metric:11s} {found[metric]:5.1f} % ({found[f'{metric}_p90']:.1f} %)")
        if without := report[name].get("medians_without_speculative_runs"):
            print("  over the results of runs that did not decode speculatively (the others at an assumed acceptance):")
            for metric in ("tps", "ttft"):
                print(f"    {metric:9s} {without[metric]:5.1f} % ({without[f'{metric}_p90']:.1f} %)")
        for metric, (inside, judged) in report[name]["interval_coverage"].items():
            print(f"  80 % interval holds {inside} of {judged} {metric} ({100 * inside / max(1, judged):.0f} %)")


if __name__ == "__main__":
    main()

"""The step simulator on this machine: calibrate on the embedded model at some workload shapes,
predict other shapes, measure them, report the errors (prediction.md section 4): per-user
tokens/s, TTFT and the seed site's G (the round's total decode tokens/s).

    python bench/prediction_embedded.py [--scale 0.1] [--store DIR] [--json]

Every shape is measured in a run of its own on the embedded server (llama.cpp + Gemma 3 270M):
a new server each time, because workloads drawn from the same seed share prompt prefixes, and a
server that had seen one would answer the next from its prompt cache. The efficiencies are fitted
(as ``arena calibrate`` fits them) to the calibration shapes only, then the held-out shapes, with
other prompt lengths, another concurrency and a conversation, are predicted and compared.
With ``--store DIR`` the runs are kept there, and a shape already measured there is not
measured again (the simulator can then be changed and compared on the same measurements).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import attrs

from arena_core import ArenaHooks, make_plugin_manager
from arena_core.results.cards import load_cards
from arena_prediction.calibration import fit, samples_of
from arena_prediction.simulator import prior_of

CALIBRATION_SHAPES = "chat,long-output,big-context-4k-c1"  # c=10 short, c=10 long answers, one user with a long prompt
HELD_OUT_SHAPES = "rag-8k,big-context-8k-c5,multi-turn"  # longer prompts, five users, a five-turn conversation


def arena(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "arena_core", *args], capture_output=True, text=True, timeout=3600)
    if done.returncode not in (0, 4):
        raise SystemExit(f"arena {args[0]} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="0.1")
    parser.add_argument("--store", type=Path, help="keep the runs here; a shape already measured here is not measured again")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    registry = ArenaHooks(make_plugin_manager(autoload=False, strict=True)).registry
    with tempfile.TemporaryDirectory(prefix="arena-prediction-embedded-") as scratch:
        store = args.store or Path(scratch) / "store"
        kept = {line.name: card.run_id for card in load_cards(store, registry)[0] for line in card.workloads} if store.is_dir() else {}
        sets: dict[str, list[str]] = {"calibration": [], "held out": []}
        for label, shapes in (("calibration", CALIBRATION_SHAPES), ("held out", HELD_OUT_SHAPES)):
            for shape in shapes.split(","):
                if shape not in kept:
                    done = arena("run", "--workloads", shape, "--scale", args.scale, "--output", str(store))
                    kept[shape] = Path(re.search(r"results: (\S+)", done.stdout).group(1)).name
                sets[label].append(kept[shape])
        cards, _ = load_cards(store, registry)
    samples = {label: samples_of([c for c in cards if c.run_id in ids], registry) for label, ids in sets.items()}
    prior = prior_of("llama-cpp")
    fitted = fit(samples["calibration"], prior, engine="llama-cpp")
    rows = []
    for label, found in samples.items():
        for sample in found:
            for tier, efficiency in (("tier 0", prior), ("tier 1", fitted)):
                found_figures = sample.figures(efficiency)
                rows.append(
                    {
                        "set": label,
                        "workload": sample.workload,
                        "tier": tier,
                        "tps": (found_figures.per_user_tps, sample.tps),
                        "ttft_s": (found_figures.ttft_p50_s, sample.ttft_s),
                        "site_tps": (found_figures.site_tps, sample.site_tps),
                    }
                )
    simulated = {(s.run_id, s.workload) for found in samples.values() for s in found}
    skipped = [
        f"{line.name} ({'invalid: ' + '; '.join(line.reasons) if not line.valid else 'not simulable'})"
        for c in cards
        for line in c.workloads
        if (c.run_id, line.name) not in simulated
    ]
    if args.json:
        print(json.dumps({"fitted": attrs.asdict(fitted), "rows": rows, "skipped": skipped}))
        return
    for line in skipped:
        print(f"not in the comparison: {line}")
    print(f"fitted to the calibration shapes: {fitted.describe()}")
    print(
        f"{'set':<12} {'workload':<20} {'tier':<7} {'tok/s pred / meas':>20} {'error':>7} {'TTFT pred / meas (s)':>22} {'error':>7}"
        f" {'G pred / meas':>16} {'error':>7}"
    )
    for row in rows:
        (tp, tm), (fp, fm), (gp, gm) = row["tps"], row["ttft_s"], row["site_tps"]
        print(
            f"{row['set']:<12} {row['workload']:<20} {row['tier']:<7} {_pair(tp, tm, '.1f'):>20} {_error(tp, tm):>7}"
            f" {_pair(fp, fm, '.3f'):>22} {_error(fp, fm):>7} {_pair(gp, gm, '.1f'):>16} {_error(gp, gm):>7}"
        )


def _pair(predicted: float | None, measured: float | None, spec: str) -> str:
    return " / ".join("—" if value is None else format(value, spec) for value in (predicted, measured))


def _error(predicted: float | None, measured: float | None) -> str:
    return f"{abs(predicted - measured) / measured * 100:.0f}%" if predicted and measured else "—"


if __name__ == "__main__":
    main()

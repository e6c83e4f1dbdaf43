"""How far the step simulator's predictions are from the seed site's measurements: leave one model
out over its published cohort (17 models on one DGX Spark, vLLM), at tier 0 (specs and the priors
only) and tier 1 (efficiencies fitted to the other 16 models).

    python scripts/prediction_error.py ../shared/reference/seed-cohort.json [--json]

For every model and every closed-loop workload (c=10, llama-benchy) it predicts per-user tokens/s
and the mean time to first response, as the seed prints them, and reports the absolute % error;
then the median and p90 per workload and metric. Tier 1 fits the bandwidth and compute
efficiencies and the per-step overhead by least squares on log errors over the other models,
on a grid (the closed-loop steps do not depend on their timing, so each grid point only re-times
them). A model whose layout the catalog does not hold is predicted from its parameter counts
alone, and the table says so.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
from pathlib import Path

import attrs

from arena_core import ArenaHooks, make_plugin_manager
from arena_core.prediction import closed_figures, closed_rounds
from arena_core.simulator import PRIORS, Efficiency, Machine
from arena_core.types import ModelSpec

WORKLOADS = ("chat", "rag-8k", "long-output", "long-context-25k", "multi-turn")
GRID = {
    "bandwidth": (0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0),
    "compute": (0.08, 0.1, 0.12, 0.15, 0.18, 0.22, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0),
    "overhead_s": (0.0, 0.0005, 0.001, 0.002, 0.003, 0.004, 0.006, 0.008, 0.012, 0.016),
}


def cohort_models(cohort: dict, catalog: dict[str, ModelSpec]) -> list[tuple[dict, ModelSpec]]:
    """Each measured cohort entry as a model spec: its parameters and precision as published, its
    architecture from the catalog where the catalog has the same weights' layout."""
    by_repo = {spec.hf_id.split("/")[-1].lower().replace("-fp8", ""): spec for spec in catalog.values() if spec.architecture}
    found = []
    for entry in cohort["models"]:
        if not entry.get("benches") or not entry.get("params_total_b"):
            continue
        repo = (entry.get("run") or {}).get("hf_model", "").split("/")[-1].lower().replace("-fp8", "")
        known = by_repo.get(repo)
        spec = ModelSpec(
            name=entry["id"],
            title=entry.get("display_name") or entry["id"],
            description="seed cohort",
            hf_id=(entry.get("run") or {}).get("hf_model", ""),
            precision=entry["precision"],
            params_total_b=entry["params_total_b"],
            params_active_b=entry.get("params_active_b"),
            architecture=known.architecture if known else None,
        )
        found.append((entry, spec))
    return found


def measured(entry: dict, workload: str) -> tuple[float | None, float | None]:
    bench = (entry.get("benches") or {}).get(workload) or {}
    ttft = bench.get("ttfr_mean_ms_c10")
    return bench.get("tps_req_c10"), ttft / 1000 if ttft else None


def errors(predicted: float | None, actual: float | None) -> float | None:
    return abs(predicted - actual) / actual * 100 if predicted and actual else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cohort", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    hooks = ArenaHooks(make_plugin_manager(autoload=False, strict=True))
    registry = hooks.registry
    catalog = {name: registration.item for name, registration in registry.models.items()}
    hardware = registry.get("hardware", "gb10")
    cohort = json.loads(args.cohort.read_text())
    models = cohort_models(cohort, catalog)
    workloads = {name: registry.get("workloads", name) for name in WORKLOADS}
    prior = PRIORS["vllm"]
    rounds = {}  # (model, workload) -> the simulated rounds at the prior
    for _, spec in models:
        machine = Machine.of(hardware, spec.precision)
        for name, workload in workloads.items():
            rounds[spec.name, name] = (machine, closed_rounds(workload, spec, machine, prior, "vllm"))
        print(f"simulated {spec.name}", file=sys.stderr)

    def figures_at(model: str, workload: str, efficiency: Efficiency):
        machine, simulated = rounds[model, workload]
        return closed_figures(simulated, machine, efficiency)

    def loss(efficiency: Efficiency, names: list[str], metric: str) -> float:
        """Squared log errors of one metric over the models ``names``."""
        total = 0.0
        for entry, spec in models:
            if spec.name not in names:
                continue
            for workload in WORKLOADS:
                tps, ttft = measured(entry, workload)
                got = figures_at(spec.name, workload, efficiency)
                predicted, actual = (got.per_user_tps, tps) if metric == "tps" else (got.ttft_p50_s, ttft)
                if predicted and actual:
                    total += math.log(predicted / actual) ** 2
        return total

    def fit(names: list[str]) -> Efficiency:
        """Decode speed fixes the bandwidth efficiency and the per-step overhead; then, with
        those, the time to first token fixes the compute efficiency."""
        decode = min(
            (Efficiency(bandwidth=b, compute=prior.compute, overhead_s=o) for b, o in itertools.product(GRID["bandwidth"], GRID["overhead_s"])),
            key=lambda efficiency: loss(efficiency, names, "tps"),
        )
        return min((attrs.evolve(decode, compute=c) for c in GRID["compute"]), key=lambda efficiency: loss(efficiency, names, "ttft"))

    table: dict[str, dict[str, dict[str, list[float]]]] = {tier: {w: {"tps": [], "ttft": []} for w in WORKLOADS} for tier in ("tier0", "tier1")}
    rows = []
    for entry, spec in models:
        others = [s.name for _, s in models if s.name != spec.name]
        fitted = fit(others)
        for workload in WORKLOADS:
            tps, ttft = measured(entry, workload)
            for tier, efficiency in (("tier0", prior), ("tier1", fitted)):
                got = figures_at(spec.name, workload, efficiency)
                for metric, p, a in (("tps", got.per_user_tps, tps), ("ttft", got.ttft_p50_s, ttft)):
                    if (error := errors(p, a)) is not None:
                        table[tier][workload][metric].append(error)
                        rows.append(
                            {"model": spec.name, "workload": workload, "tier": tier, "metric": metric, "predicted": p, "measured": a, "error_pct": error}
                        )
        print(f"{spec.name}: fitted {fitted}", file=sys.stderr)
    summary = {
        tier: {
            w: {m: {"median": statistics.median(v), "p90": sorted(v)[max(0, math.ceil(0.9 * len(v)) - 1)]} for m, v in metrics.items() if v}
            for w, metrics in by.items()
        }
        for tier, by in table.items()
    }
    if args.json:
        print(json.dumps({"summary": summary, "rows": rows}))
        return
    print("Leave-one-model-out over the seed cohort (GB10, vLLM): absolute % error, median / p90")
    print(f"{'workload':<18} {'tier 0 tok/s':>14} {'tier 0 TTFT':>14} {'tier 1 tok/s':>14} {'tier 1 TTFT':>14}")
    for workload in WORKLOADS:
        cells = []
        for tier in ("tier0", "tier1"):
            for metric in ("tps", "ttft"):
                found = summary[tier][workload].get(metric)
                cells.append(f"{found['median']:.0f} / {found['p90']:.0f}" if found else "—")
        print(f"{workload:<18} " + " ".join(f"{cell:>14}" for cell in cells))
    for tier in ("tier0", "tier1"):
        for metric in ("tps", "ttft"):
            everything = [e for w in WORKLOADS for e in table[tier][w][metric]]
            print(
                f"{tier} {metric}: median {statistics.median(everything):.1f} %, p90 {sorted(everything)[math.ceil(0.9 * len(everything)) - 1]:.1f} % over {len(everything)} predictions"
            )


if __name__ == "__main__":
    main()

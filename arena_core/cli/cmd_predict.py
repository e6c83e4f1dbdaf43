"""``arena predict``: what each workload will do for a model on a machine, before anyone downloads
it, each figure with an interval: the default predictor's answer (``arena list predictors``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs
import click

from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.cli.params import OUTPUT, results_dir
from arena_core.errors import UsageError
from arena_core.loadgen.goodput import Slo, goodput, parse_slo
from arena_core.registry import Registry
from arena_core.report import render_json, render_table
from arena_core.report.formats import fmt_seconds, fmt_tps
from arena_core.report.text import WIDEST, wrap_text
from arena_core.results.predictions import load_calibration, predicting_backend, require_predictor
from arena_core.run.capacity import Probe, search
from arena_core.run.engine import default_workloads
from arena_core.types import ClosedLoopShape, Figures, PredictionSetup, Predictor, WorkloadPrediction, WorkloadSpec


@click.command("predict")
@click.argument("model")
@click.option("--hardware", required=True, help="The hardware profile to predict for (arena list hardware).")
@click.option("--backend", help="The backend whose scheduling is simulated (default: the first registered that declares it; arena list backends).")
@click.option("--workloads", help="Comma-separated workload names (default: the nine).")
@click.option("--capacity", "with_capacity", is_flag=True, help="Also predict how many chat users the box serves within --slo.")
@click.option("--slo", default="interactive", show_default=True, help="The SLO of --capacity: interactive, relaxed, batch, or limits such as ttft=2s,tps=10.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of the table.")
@click.option("--wide", is_flag=True, help="One line per workload, with what bounds it (wider than 80 columns).")
@OUTPUT
@click.pass_obj
def predict_command(
    app: CliApp,
    model: str,
    hardware: str,
    backend: str | None,
    workloads: str | None,
    with_capacity: bool,
    slo: str,
    as_json: bool,
    wide: bool,
    output: Path | None,
) -> None:
    """Predict MODEL's figures on every workload (tokens/s per user and in total, TTFT p50, the
    seed site's G), each with an interval, and what bounds each: tier 1 with the efficiencies
    ``arena calibrate`` stored for HARDWARE and the backend, else tier 0 (the specs and the
    engine's priors)."""
    registry = app.hooks.registry
    chosen_predictor = require_predictor(registry).predictor
    spec = registry.get("models", model)
    profile = registry.get("hardware", hardware)
    if profile.measure is not None:
        profile = profile.measured()  # a CPU host's bandwidth is measured here, not known ahead
    served_by = predicting_backend(registry, backend)
    objective = parse_slo(slo, "--slo")
    names = [n.strip() for n in workloads.split(",") if n.strip()] if workloads else list(default_workloads(registry))
    chosen = [registry.get("workloads", name) for name in names]
    setup = PredictionSetup(model=spec, hardware=profile, backend=served_by, calibration=load_calibration(results_dir(app, output), hardware, served_by))
    if (why := chosen_predictor.coverage(setup)) is not None:
        raise UsageError(f"cannot predict {model} on {hardware} with --backend {served_by.name}: {why}")
    try:
        found = [chosen_predictor.predict(workload, setup) for workload in chosen]
        capacity = _capacity(chosen_predictor, setup, _headline(registry), objective) if with_capacity else None
    except ValueError as exc:
        raise UsageError(f"cannot predict {model} on {hardware}: {exc}") from None
    tier = chosen_predictor.basis(setup)
    backend = served_by.name
    if as_json:
        echo(
            render_json(
                {"model": model, "hardware": hardware, "backend": backend, "tier": tier, "workloads": [_as_dict(p) for p in found], "capacity": capacity}
            )
        )
        return
    echo(wrap_text(f"Predicted: {spec.title} on {profile.title} ({backend}); {tier}; not measured", hanging="  "))
    rows = [(p.workload, *(_range(p, key, shown, one_line=wide) for key, shown in FIGURES), *([p.central.bound] if wide else [])) for p in found]
    headers = ["workload", "tok/s per user", "tok/s total", "TTFT p50", "seed's G", *(["bound by"] if wide else [])]
    echo(render_table(headers, rows, width=WIDEST if wide else None))
    about = "Each figure with its interval [low–high] below it. G: the seed site's throughput per workload (closed loop: total decode tok/s of a round; open loop: total tok/s ÷ peak concurrent requests)."
    echo(wrap_text(about + ("" if wide else " --wide: one line per workload, with what bounds it.")))
    for note in sorted({note for p in found for note in p.notes}):
        echo(wrap_text(f"note: {note}", hanging="  "))
    if capacity is not None:
        found_at = f"Predicted capacity: {capacity['users']} chat users ({objective.describe()})"
        echo(wrap_text(found_at + (f", fails at {capacity['fails_at']}" if capacity["fails_at"] else ""), hanging="  "))


#: The figures a prediction shows, each with how it is written.
FIGURES: tuple[tuple[str, Callable[[float | None], str]], ...] = (
    ("per_user_tps", fmt_tps),
    ("total_tps", fmt_tps),
    ("ttft_p50_s", fmt_seconds),
    ("site_tps", fmt_tps),
)


def _range(prediction: WorkloadPrediction, key: str, shown: Callable[[float | None], str], *, one_line: bool = False) -> str:
    """ "145 [121–176]": the central figure and its interval, on one line or two."""
    central, low, high = (getattr(f, key) for f in (prediction.central, prediction.low, prediction.high))
    if central is None:
        return "—"
    # an open-loop schedule can reorder at other efficiencies: the interval always holds the central figure
    ends = sorted(v for v in (low, central, high) if v is not None)
    return f"{shown(central)}{' ' if one_line else chr(10)}[{shown(ends[0])}–{shown(ends[-1])}]" if ends else shown(central)


def _as_dict(prediction: WorkloadPrediction) -> dict:
    def figures(f: Figures) -> dict:
        return {"per_user_tps": f.per_user_tps, "total_tps": f.total_tps, "ttft_p50_s": f.ttft_p50_s, "site_tps": f.site_tps, "bound": f.bound}

    return {
        "workload": prediction.workload,
        "central": figures(prediction.central),
        "low": figures(prediction.low),
        "high": figures(prediction.high),
        "notes": list(prediction.notes),
    }


def _headline(registry: Registry) -> WorkloadSpec:
    """The workload a predicted capacity repeats: the headline one (a chat user)."""
    name = registry.with_role("headline")
    if name is None:
        raise UsageError("--capacity: no registered workload has the role 'headline'")
    return registry.get("workloads", name)


def _capacity(predictor: Predictor, setup: PredictionSetup, chat: WorkloadSpec, objective: Slo) -> dict:
    """The capacity search of ``arena capacity``, run on the predictor: each probe one closed-loop
    round of ``users`` chat requests as the predictor serves them, judged by the SLO rule that
    judges measured requests (:func:`~arena_core.loadgen.goodput.goodput`)."""
    assert isinstance(chat.shape, ClosedLoopShape)

    def probe(users: float) -> Probe:
        workload = attrs.evolve(chat, shape=attrs.evolve(chat.shape, concurrency=int(users), runs=1))
        attainment = goodput(predictor.serve(workload, setup), objective).get("slo_attainment") or 0.0
        return Probe(load=users, passed=attainment >= objective.target, attainment=attainment, failed=0)

    found = search(probe, start=1, limit=256, precision=0.1)
    return {"users": int(found.found) if found.found else 0, "fails_at": int(found.failed_at) if found.failed_at else None}

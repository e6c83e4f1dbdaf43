"""``arena calibrate``: fit the default predictor to the stored runs of one hardware profile and
backend, and store the fit (``arena predict`` then predicts at tier 1)."""

from __future__ import annotations

import inspect
from pathlib import Path

import click

from arena_core.cli.app import CliApp
from arena_core.cli.output import Steps, echo
from arena_core.cli.params import OUTPUT, results_dir
from arena_core.hookspecs import hookimpl
from arena_core.report.text import wrap_text
from arena_core.results.cards import load_cards
from arena_core.results.predictions import StoredFits, require_predictor, save_calibration


@click.command("calibrate")
@click.option("--hardware", required=True, help="The hardware profile whose stored runs are fitted.")
@click.option(
    "--backend", required=True, help="The backend whose runs are fitted (vllm, llama-cpp: arena list backends); runs of every backend of its engine count."
)
@OUTPUT
@click.pass_obj
def calibrate_command(app: CliApp, hardware: str, backend: str, output: Path | None) -> None:
    """Fit the default predictor (the step simulator: bandwidth and compute efficiency, the
    per-step overhead, the prefill's parameters) to the stored closed-loop results on HARDWARE
    with BACKEND, and store the fit."""
    registry = app.hooks.registry
    chosen = require_predictor(registry)
    predictor = chosen.predictor
    registry.get("hardware", hardware)
    served_by = registry.get("backends", backend)
    store = results_dir(app, output)
    with Steps("arena calibrate") as steps:
        steps.stage("reading the stored runs")
        cards, problems = load_cards(store, registry)
        for problem in problems:
            echo(f"warning: skipped {problem}", err=True)
        steps.stage(f"fitting the predictor to {len(cards)} runs' results on {hardware}")
        if "fits" in inspect.signature(predictor.calibrate).parameters:  # one written before calibrate took the store's fits takes three arguments
            fits = StoredFits.of(store, chosen.spec.name)
            report = predictor.calibrate(cards, hardware, served_by, fits=fits)
            fits.save(prune=False)
        else:
            report = predictor.calibrate(cards, hardware, served_by)
    path = save_calibration(store, report.calibration)
    for line in report.lines:
        indent = line[: len(line) - len(line.lstrip())]  # a line under another keeps its indent, and its continuations two more
        echo(wrap_text(line.lstrip(), indent=indent, hanging=indent + "  "))
    echo(wrap_text(f"stored: {path}  (arena predict MODEL --hardware {hardware} --backend {served_by.name} uses it)", hanging="  "))


@hookimpl
def arena_register_commands(cli: click.Group) -> None:
    cli.add_command(calibrate_command)

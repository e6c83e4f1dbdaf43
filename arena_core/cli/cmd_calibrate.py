"""``arena calibrate``: fit the step simulator's efficiencies to the stored runs of one hardware
profile and backend, and store the fit (``arena predict`` then predicts at tier 1)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from arena_core.calibration import Calibration, engine_of, error_of, fit, samples_of, save_calibration
from arena_core.cards import load_cards
from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.cli.params import OUTPUT, results_dir
from arena_core.errors import UsageError
from arena_core.simulator import PRIORS


@click.command("calibrate")
@click.option("--hardware", required=True, help="The hardware profile whose stored runs are fitted.")
@click.option("--backend", required=True, help="The backend whose runs are fitted (vllm, llama-cpp, or the attached server's engine).")
@OUTPUT
@click.pass_obj
def calibrate_command(app: CliApp, hardware: str, backend: str, output: Path | None) -> None:
    """Fit bandwidth and compute efficiency and the per-step overhead to the stored closed-loop
    results on HARDWARE with BACKEND (least squares on log errors), and store the fit."""
    registry = app.hooks.registry
    registry.get("hardware", hardware)
    store = results_dir(app, output)
    cards, problems = load_cards(store, registry)
    for problem in problems:
        echo(f"warning: skipped {problem}", err=True)
    chosen = [c for c in cards if c.hardware == hardware and engine_of(c.backend) == engine_of(backend)]
    samples = samples_of(chosen, registry)
    if not samples:
        raise UsageError(
            f"no stored closed-loop results on {hardware} with {backend} to fit (of {len(chosen)} runs there; "
            "a run needs a model whose parameters and precision are known)"
        )
    prior = PRIORS[engine_of(backend)]
    fitted_to = [s for s in samples if not s.speculative]
    if not fitted_to:
        raise UsageError(f"the stored results on {hardware} with {backend} all decoded speculatively (MTP), which the simulator does not cover: nothing to fit")
    fitted = fit(fitted_to, prior, engine=engine_of(backend))
    calibration = Calibration(
        hardware=hardware,
        backend=engine_of(backend),
        efficiency=fitted,
        runs=len({s.run_id for s in fitted_to}),
        results=len(fitted_to),
        fitted_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        median_error_tps=error_of(fitted_to, fitted, 0),
        median_error_ttft=error_of(fitted_to, fitted, 1),
    )
    path = save_calibration(store, calibration)
    echo(f"fitted to {calibration.results} results of {calibration.runs} runs on {hardware} ({calibration.backend}):")
    if left_out := len(samples) - len(fitted_to):
        echo(f"  left out: {left_out} results of speculative decoding (MTP), which the simulator does not cover")
    echo(f"  {fitted.describe(prior)}")
    for metric, index in (("tokens/s per user", 0), ("TTFT", 1)):
        before, after = error_of(fitted_to, prior, index), error_of(fitted_to, fitted, index)
        if before is not None and after is not None:
            echo(f"  median error of {metric} on these results: {before:.1f} % with the priors, {after:.1f} % fitted (in-sample)")
    echo(f"stored: {path}  (arena predict MODEL --hardware {hardware} --backend {calibration.backend} uses it)")

"""``arena card RUN``: the model card of a stored run, as text, markdown or JSON."""

from __future__ import annotations

from pathlib import Path

import attrs
import click

from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.cli.params import OUTPUT, custom_profiles, results_dir
from arena_core.loadgen.goodput import parse_slo
from arena_core.report import render_json
from arena_core.report.cost import cost_of
from arena_core.report.model_card import render_model_card
from arena_core.results.cards import card_json, load_card, load_cards, scores_for
from arena_core.results.findings import findings
from arena_core.results.predictions import ledger_of, why_not_predicted


@click.command("card")
@click.argument("run_id")
@OUTPUT
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True)
@click.option("--wide", is_flag=True, help="Tables as wide as they are (default: fitted to the terminal, 80 columns where it cannot tell).")
@click.option("--slo", help="SLO for goodput and attainment: interactive, relaxed, batch, or limits such as ttft=2s,tps=10 (default: the config's [slo]).")
@click.pass_obj
def card_command(app: CliApp, run_id: str, output: Path | None, fmt: str, wide: bool, slo: str | None) -> None:
    """The model card of stored run RUN_ID (its id, or a unique start or end of it): scores,
    quality, per-workload figures and commands, goodput within an SLO (recomputed from the
    stored requests), findings."""
    store = results_dir(app, output)
    configured = app.config.slo.objective
    objective = parse_slo(slo, "--slo") if slo else parse_slo(configured, f"{app.config.source}: $.slo.objective") if configured else None
    card = load_card(store, run_id, app.hooks.registry, objective)
    others, _ = load_cards(store, app.hooks.registry)
    scores = scores_for(card, app.hooks, custom_profiles(app), others)
    found = findings(card, others)
    predictions = ledger_of(store, others, app.hooks.registry, only=card.run_id)  # predicted without this run; None: no predictor
    uncovered = why_not_predicted(card, app.hooks.registry) if predictions == [] else ""
    if fmt == "json":
        echo(render_json({**card_json(card, scores, found), "predictions": [attrs.asdict(line) for line in predictions or []], "not_predicted": uncovered}))
    else:
        # costed as the leaderboard and the site cost it: each run judged by the SLO it recorded
        stored = next((c for c in others if c.run_id == card.run_id), card)
        cost = cost_of([*others, card] if stored is card else others, app.config.cost)(stored) if app.config.cost.given else None
        echo(render_model_card(card, scores, found, markdown=fmt == "markdown", predictions=predictions, uncovered=uncovered, wide=wide, cost=cost), nl=False)

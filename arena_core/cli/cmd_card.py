"""``arena card RUN``: the model card of a stored run, in any registered format (text by default)."""

from __future__ import annotations

from pathlib import Path

import click

from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.cli.params import OUTPUT, custom_profiles, renderer_named, results_dir
from arena_core.loadgen.goodput import parse_slo
from arena_core.results.cards import load_card, load_cards
from arena_core.results.views import card_view


@click.command("card")
@click.argument("run_id")
@OUTPUT
@click.option(
    "--format",
    "fmt",
    default="text",
    show_default=True,
    help="A registered renderer of cards: text, markdown, json, and any a plugin adds (arena list renderers).",
)
@click.option("--wide", is_flag=True, help="Tables as wide as they are (default: fitted to the terminal, 80 columns where it cannot tell).")
@click.option("--slo", help="SLO for goodput and attainment: interactive, relaxed, batch, or limits such as ttft=2s,tps=10 (default: the config's [slo]).")
@click.pass_obj
def card_command(app: CliApp, run_id: str, output: Path | None, fmt: str, wide: bool, slo: str | None) -> None:
    """The model card of stored run RUN_ID (its id, or a unique start or end of it): scores,
    quality, per-workload figures and commands, goodput within an SLO (recomputed from the
    stored requests), findings."""
    render = renderer_named(app, fmt, "card", "--format")
    store = results_dir(app, output)
    configured = app.config.slo.objective
    objective = parse_slo(slo, "--slo") if slo else parse_slo(configured, f"{app.config.source}: $.slo.objective") if configured else None
    card = load_card(store, run_id, app.hooks.registry, objective)
    others, _ = load_cards(store, app.hooks.registry)
    echo(render(card_view(store, card, others, app.hooks, custom_profiles(app), app.config.cost, wide=wide)), nl=False)

"""``arena publish DIR``: the leaderboard and every model card, written by a renderer of sites (the
static site of the default ``arena_site`` plugin unless ``--format`` names another)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from arena_core.cli.app import CliApp
from arena_core.cli.output import Steps, echo
from arena_core.cli.params import OUTPUT, custom_profiles, renderer_named, results_dir
from arena_core.errors import UnknownNameError, UsageError
from arena_core.hookspecs import hookimpl
from arena_core.results.cards import load_cards, scores_for_all
from arena_core.results.predictions import ledger_of
from arena_core.results.views import site_view
from arena_core.run.integrity import integrity_label
from arena_core.types import Progress


@click.command("publish")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@OUTPUT
@click.option("--profile", default="aggregate", show_default=True, help="The profile the leaderboard ranks by.")
@click.option("--format", "fmt", default="site", show_default=True, help="A registered renderer of sites: site, and any a plugin adds (arena list renderers).")
@click.pass_obj
def publish_command(app: CliApp, directory: Path, output: Path | None, profile: str, fmt: str) -> None:
    """Write a self-contained site into DIRECTORY (open DIRECTORY/index.html; no network needed)."""
    write = renderer_named(app, fmt, "site", "--format")
    with Steps("arena publish") as steps:
        _publish(app, directory, output, profile, steps, write)


def _publish(app: CliApp, directory: Path, output: Path | None, profile: str, steps: Steps, write: Callable[..., Path]) -> None:
    steps.stage("reading the stored runs")
    cards, problems = load_cards(results_dir(app, output), app.hooks.registry, slo_figures=True)  # a capacity run's page draws its curve
    for problem in problems:
        echo(f"warning: skipped {problem}", err=True)
    if not cards:
        raise UsageError("arena publish: no stored runs to publish (arena run measures one; arena import --seeds adds the published cards)")
    custom = custom_profiles(app)
    all_scores = scores_for_all(cards, app.hooks, custom)
    if profile not in next(iter(all_scores.values())):
        raise UnknownNameError("scoring profile", profile, next(iter(all_scores.values())), source="--profile")
    store = results_dir(app, output)
    steps.stage(f"checking the integrity of {len(cards)} runs")
    integrity = {c.run_id: integrity_label(store / c.run_id) for c in cards}
    try:
        steps.stage("predicting each run without it (the error ledger)")
        predictions = ledger_of(store, cards, app.hooks.registry, whole_store=True)  # each result without its own run; None: no predictor
        view = site_view(cards, all_scores, app.hooks, app.config.cost, profile=profile, integrity=integrity, ledger=predictions)
        steps.stage("writing the pages")
        progress: Progress = steps.count
        directory.mkdir(parents=True, exist_ok=True)
        index = write(view, directory, progress)
    except OSError as exc:
        raise UsageError(f"{directory}: cannot write the site ({exc.strerror or exc})") from None
    echo(f"site written: {index} ({len(cards)} cards)")


@hookimpl
def arena_register_commands(cli: click.Group) -> None:
    cli.add_command(publish_command)

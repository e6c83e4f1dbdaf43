"""``arena publish DIR``: the leaderboard and every model card as a static site."""

from __future__ import annotations

from pathlib import Path

import click

from arena_core.cli.app import CliApp
from arena_core.cli.output import Steps, echo
from arena_core.cli.params import OUTPUT, custom_profiles, results_dir
from arena_core.errors import UnknownNameError, UsageError
from arena_core.results.cards import load_cards, scores_for_all
from arena_core.results.findings import findings
from arena_core.results.predictions import ledger_of
from arena_core.run.integrity import integrity_label


@click.command("publish")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@OUTPUT
@click.option("--profile", default="aggregate", show_default=True, help="The profile the leaderboard ranks by.")
@click.pass_obj
def publish_command(app: CliApp, directory: Path, output: Path | None, profile: str) -> None:
    """Write a self-contained site into DIRECTORY (open DIRECTORY/index.html; no network needed)."""
    with Steps("arena publish") as steps:
        _publish(app, directory, output, profile, steps)


def _publish(app: CliApp, directory: Path, output: Path | None, profile: str, steps: Steps) -> None:
    from arena_core.report.site import publish

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
    found = {c.run_id: findings(c, cards) for c in cards}
    store = results_dir(app, output)
    steps.stage(f"checking the integrity of {len(cards)} runs")
    integrity = {c.run_id: integrity_label(store / c.run_id) for c in cards}
    try:
        steps.stage("predicting each run without it (the error ledger)")
        predictions = ledger_of(store, cards, app.hooks.registry, whole_store=True)  # each result without its own run; None: no predictor
        steps.stage("writing the pages")
        index = publish(
            directory,
            cards,
            all_scores,
            found,
            profile=profile,
            integrity=integrity,
            predictions=predictions,
            registry=app.hooks.registry,
            progress=steps.count,
            cost=app.config.cost,
        )
    except OSError as exc:
        raise UsageError(f"{directory}: cannot write the site ({exc.strerror or exc})") from None
    echo(f"site written: {index} ({len(cards)} cards)")

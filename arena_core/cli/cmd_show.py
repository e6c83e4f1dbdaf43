"""``arena show KIND NAME``: every field of one registered item."""

from __future__ import annotations

from pathlib import Path

import click

from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.cli.params import OUTPUT, KindType, registered_name, results_dir
from arena_core.registry import Kind
from arena_core.report import render_json, render_table
from arena_core.report.card import render_card
from arena_core.report.describe import describe, flatten
from arena_core.results.imports import PLACEHOLDER_URL
from arena_core.run.manifest import manifest_data, read_manifest
from arena_core.run.store import find_run, load_result

RUNS = Kind(plural="runs", singular="run", hook="", item_type=object)


def _check_name(ctx: click.Context, param: click.Parameter, value: str) -> str:
    kind = ctx.params.get("kind")
    if isinstance(kind, Kind) and kind.plural != RUNS.plural:
        return registered_name(ctx, param, value, kind)
    return value


@click.command("show")
@click.argument("kind", type=KindType(extra=(RUNS,)), metavar="KIND")
@click.argument("name", callback=_check_name)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@OUTPUT
@click.pass_obj
def show_command(app: CliApp, kind: Kind, name: str, as_json: bool, output: Path | None) -> None:
    """Show everything about the KIND called NAME.

    KIND is one of workloads, runners, backends, hardware, models, scorers, or run (a stored run's
    card: NAME is its id); the singular works too.
    """
    if kind.plural == RUNS.plural:
        _show_run(results_dir(app, output), name, as_json)
        return
    registry = app.hooks.registry
    registration = registry.lookup(kind.plural, name)
    data = {"kind": kind.singular, "plugin": registration.plugin, **describe(registration.item)}
    if kind.plural == "workloads":
        shape = data.pop("shape")  # shown under the name of its loop, as a reader looks for it
        data[f"{registration.item.loop}_loop"] = shape
        if registration.item.runner in registry.by_kind["runners"]:
            command = registry.get("runners", registration.item.runner).command_for(registration.item, PLACEHOLDER_URL, "MODEL")
            if command:
                data["command"] = command
    if as_json:
        echo(render_json(data))
    else:
        echo(render_table(["field", "value"], flatten(data)))


def _show_run(store: Path, run_id: str, as_json: bool) -> None:
    run_dir = find_run(store, run_id, "arena show run")
    manifest = read_manifest(run_dir)
    results = [r for r in (load_result(run_dir, name) for name in manifest.workloads) if r is not None]
    if as_json:
        echo(render_json({"manifest": manifest_data(manifest), "results": [describe(r) for r in results]}))
        return
    title = f"{manifest.model} on {manifest.hardware} ({manifest.backend}, {manifest.instrument}), scale {manifest.scale}, {manifest.status}"
    echo(render_card(title, results, list(manifest.workloads)))
    echo(f"results: {run_dir}")

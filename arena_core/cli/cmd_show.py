"""``arena show KIND NAME``: every field of one registered item."""

from __future__ import annotations

import click

from arena_core.cli.app import CliApp
from arena_core.cli.params import KindType, registered_name
from arena_core.registry import Kind
from arena_core.report import render_json, render_table
from arena_core.report.describe import describe, flatten


def _check_name(ctx: click.Context, param: click.Parameter, value: str) -> str:
    kind = ctx.params.get("kind")
    return registered_name(ctx, param, value, kind) if isinstance(kind, Kind) else value


@click.command("show")
@click.argument("kind", type=KindType(), metavar="KIND")
@click.argument("name", callback=_check_name)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_obj
def show_command(app: CliApp, kind: Kind, name: str, as_json: bool) -> None:
    """Show everything about the KIND called NAME.

    KIND is one of workloads, runners, backends, hardware, models, scorers (singular works too).
    """
    registry = app.hooks.registry
    registration = registry.lookup(kind.plural, name)
    data = {"kind": kind.singular, "plugin": registration.plugin, **describe(registration.item)}
    if kind.plural == "workloads" and registration.item.runner in registry.by_kind["runners"]:
        runner = registry.get("runners", registration.item.runner)
        if runner.command is not None:
            data["command"] = " ".join(runner.command(registration.item, "http://localhost:8000", "MODEL"))
    if as_json:
        click.echo(render_json(data))
    else:
        click.echo(render_table(["field", "value"], flatten(data)))

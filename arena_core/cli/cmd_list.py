"""``arena list KIND``: the registered workloads, runners, backends, hardware, models, scorers or predictors."""

from __future__ import annotations

import click

from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.cli.params import KindType
from arena_core.registry import Kind
from arena_core.report import render_json, render_table


@click.command("list")
@click.argument("kind", type=KindType(), metavar="KIND")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_obj
def list_command(app: CliApp, kind: Kind, as_json: bool) -> None:
    """List what plugins registered of one KIND, with the plugin that registered each.

    KIND is one of workloads, runners, backends, hardware, models, scorers, predictors (singular
    works too).
    """
    rows = [
        (reg.item.name, reg.item.description.strip().splitlines()[0] if reg.item.description.strip() else "", reg.plugin)
        for reg in app.hooks.registry.registrations(kind.plural)
    ]
    if as_json:
        echo(render_json([{"name": n, "description": d, "plugin": p} for n, d, p in rows]))
    elif rows:
        echo(render_table(["name", "description", "plugin"], rows))
    else:
        echo(f"No {kind.plural} registered.")

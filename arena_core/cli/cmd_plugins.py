"""``arena plugins``: which plugins are loaded, where from, and which hooks they implement."""

from __future__ import annotations

import click

from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.report import render_json, render_table
from arena_core.report.describe import describe


@click.command("plugins")
@click.option("--all", "show_all", is_flag=True, help="Include the built-in plugins.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_obj
def plugins_command(app: CliApp, show_all: bool, as_json: bool) -> None:
    """List installed plugins (third-party only, unless --all)."""
    infos = [info for info in app.pm.plugin_infos() if show_all or not info.builtin]
    if as_json:
        echo(render_json([describe(info) for info in infos]))
        return
    if not infos:
        echo("No third-party plugins installed (arena plugins --all shows the built-in ones).")
        return
    rows = [(info.name, info.version, info.source, "\n".join(info.hooks)) for info in infos]
    echo(render_table(["name", "version", "source", "hooks"], rows))

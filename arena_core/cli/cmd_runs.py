"""``arena runs``: the runs stored in a results directory."""

from __future__ import annotations

from pathlib import Path

import click

from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.report import render_json, render_table
from arena_core.run.store import list_runs


@click.command("runs")
@click.option("--output", type=click.Path(file_okay=False, path_type=Path), help="Results directory (default: arena-results).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_obj
def runs_command(app: CliApp, output: Path | None, as_json: bool) -> None:
    """List stored runs, oldest first (from OUTPUT/index.sqlite, rebuilt from the run folders if missing)."""
    runs = list_runs(output or Path(app.config.run.output))
    if as_json:
        echo(render_json(runs))
    elif not runs:
        echo("No runs stored yet (arena run measures one).")
    else:
        rows = [
            [
                run["run_id"],
                str(run["started_at"] or "")[:16].replace("T", " "),
                run["status"],
                run["model"],
                f"{run['hardware']}, {run['backend']}",
                run["scale"],
            ]
            for run in runs
        ]
        echo(render_table(["run", "started", "status", "model", "on", "scale"], rows, whole=("run", "started")))

"""``arena import``: reference-tool results and published cards into the store."""

from __future__ import annotations

from pathlib import Path

import click

from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.errors import UsageError
from arena_core.hookspecs import hookimpl
from arena_core.results.imports import import_file, seed_cards_path
from arena_core.results.predictions import predicting_backend


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--seeds", is_flag=True, help="Import the seed site's published cohort (17 models on a DGX Spark, CC-BY-4.0) that ships with Arena.")
@click.option("--workload", help="Which workload the file measured (llama-benchy and vllm bench serve files).")
@click.option("--model", help="Which catalog model it measured.")
@click.option("--hardware", help="Which hardware profile it ran on.")
@click.option("--backend", help="Which backend served it (default: the first registered that declares how it schedules; arena list backends).")
@click.option("--output", type=click.Path(file_okay=False, path_type=Path), help="Results directory (default: arena-results).")
@click.pass_obj
def import_command(
    app: CliApp, file: Path | None, seeds: bool, workload: str | None, model: str | None, hardware: str | None, backend: str | None, output: Path | None
) -> None:
    """Import FILE: a llama-benchy --save-result JSON, a vllm bench serve result JSON, or an
    arena-cards/1 file, so results measured with the reference tools rank beside native ones."""
    if seeds == (file is not None):
        raise UsageError("arena import: give a FILE or --seeds (one of the two)")
    store = output or Path(app.config.run.output)
    store.mkdir(parents=True, exist_ok=True)
    served_by = predicting_backend(app.hooks.registry, backend).name
    run_ids = import_file(seed_cards_path() if seeds else file, store, app.hooks.registry, workload=workload, model=model, hardware=hardware, backend=served_by)  # type: ignore[arg-type]
    for run_id in run_ids:
        echo(f"imported as run {run_id} (arena card {run_id})")


@hookimpl
def arena_register_commands(cli: click.Group) -> None:
    cli.add_command(import_command)

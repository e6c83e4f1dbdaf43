"""``arena matrix plan FILE`` and ``arena matrix run FILE [--ray ADDRESS]``: a matrix of runs,
on this machine one cell after another, or across the boxes of a Ray cluster."""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from arena_core import ArenaError, CliApp, Pulse, echo, render_table
from arena_fleet.execute import Outcome, run_here, summary_rows
from arena_fleet.matrix import Cell, cells_of, load_matrix, plan

MATRIX_FILE = click.argument("matrix_file", metavar="FILE", type=click.Path(exists=True, dir_okay=False, path_type=Path))
OUTPUT = click.option("--output", type=click.Path(file_okay=False, path_type=Path), help="Results directory (default: arena-results).")


class CellsFailed(ArenaError):
    exit_code = 4


def _planned(app: CliApp, matrix_file: Path, output: Path | None) -> tuple[Path, list[tuple[Cell, str | None]], float]:
    registry = app.hooks.registry
    spec = load_matrix(matrix_file, registry)
    store = output or Path(app.config.run.output)
    return store, plan(store, cells_of(spec, registry, str(matrix_file))), spec.wait_for_hardware_s


@click.group("matrix")
def matrix_command() -> None:
    """A matrix of runs: models x backends x hardware x workload sets, declared in TOML."""


@matrix_command.command("plan")
@MATRIX_FILE
@OUTPUT
@click.pass_obj
def plan_command(app: CliApp, matrix_file: Path, output: Path | None) -> None:
    """Print FILE's cells, and which already have a completed, verified run in the store."""
    store, planned, _ = _planned(app, matrix_file, output)
    rows = [[cell.label(), cell.resource, cell.natural_key(), f"done: run {run_id}" if run_id else "to run"] for cell, run_id in planned]
    echo(render_table(["cell", "needs", "natural key", "status"], rows, whole=("cell",)))
    todo = sum(1 for _, run_id in planned if run_id is None)
    echo(f"{todo} of {len(planned)} cells to run; {len(planned) - todo} already measured and verified in {store}")


@matrix_command.command("run")
@MATRIX_FILE
@OUTPUT
@click.option("--ray", "ray_address", metavar="auto|ADDRESS", help="Run each cell as a Ray task on a box of its hardware (auto: the cluster on this machine).")
@click.option("--node-ip-address", metavar="IP", help="This driver's address in the Ray cluster (default: Ray's choice).")
@click.option(
    "--wait-for-hardware", "wait_s", type=click.FloatRange(min=0.1), help="Seconds a cell waits for a box of its hardware (default: the file's, or 600)."
)
@click.pass_obj
def run_command(app: CliApp, matrix_file: Path, output: Path | None, ray_address: str | None, node_ip_address: str | None, wait_s: float | None) -> None:
    """Run the cells of FILE that the store does not hold yet; ingest and verify each run."""
    store, planned, file_wait_s = _planned(app, matrix_file, output)
    todo = [cell for cell, run_id in planned if run_id is None]
    skipped = [Outcome(cell=cell, status="skipped", run_id=run_id, reason="already measured and verified") for cell, run_id in planned if run_id]
    echo(f"{len(todo)} of {len(planned)} cells to run ({len(skipped)} already measured and verified)")
    outcomes: list[Outcome] = []
    # a cell is a whole arena run (minutes): while one runs, the matrix says how long every 20 s
    pulse = Pulse(echo, live=False)
    pulse.now_doing(f"arena matrix: {len(todo)} cells to run")
    pulse.start()
    try:
        if todo and ray_address:
            from arena_fleet.on_ray import import_ray, join_cluster, run_on_ray

            ray = import_ray()
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            started = time.monotonic()
            join_cluster(ray, ray_address, node_ip_address)
            boxes = sorted({key for node in ray.nodes() if node.get("Alive") for key in node.get("Resources", {}) if key.startswith("hw:")})
            echo(f"joined the Ray cluster in {time.monotonic() - started:.1f} s; boxes advertise: {', '.join(boxes) or 'no hardware'}")
            try:
                outcomes = run_on_ray(todo, store, wait_s=wait_s or file_wait_s, say=pulse.say)
            finally:
                ray.shutdown()
        elif todo:
            outcomes = run_here(todo, store, say=pulse.say)
    except KeyboardInterrupt:
        echo(f"interrupted: finished cells are in {store}; arena matrix run {matrix_file} again runs the rest", err=True)
        raise SystemExit(130) from None
    finally:
        pulse.stop()
    echo(
        render_table(
            ["cell", "status", "box", "run", "cell s", "waited s", "overhead s", "why"], summary_rows([*skipped, *outcomes]), whole=("cell", "status", "run")
        )
    )
    failed = [o for o in outcomes if o.status == "failed"]
    if failed:
        raise CellsFailed(f"{len(failed)} of {len(planned)} cells failed; arena matrix run {matrix_file} again retries them")

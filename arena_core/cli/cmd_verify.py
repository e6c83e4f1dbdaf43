"""``arena verify RUN``: recompute the SHA-256 of every results file of a stored run."""

from __future__ import annotations

from pathlib import Path

import click

from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.cli.params import OUTPUT, results_dir
from arena_core.errors import ArenaError
from arena_core.run.integrity import verify
from arena_core.run.store import find_run


class VerifyFailed(ArenaError):
    exit_code = 1


@click.command("verify")
@click.argument("run_id")
@OUTPUT
@click.pass_obj
def verify_command(app: CliApp, run_id: str, output: Path | None) -> None:
    """Check that every results file of run RUN_ID is as the run left it (SHA-256 in its manifest)."""
    run_dir = find_run(results_dir(app, output), run_id, "arena verify")
    checked, problems = verify(run_dir)
    if not checked:
        raise VerifyFailed(f"run {run_id} cannot be verified: {problems[0]}")
    for problem in problems:
        echo(f"  {problem}", err=True)
    if problems:
        raise VerifyFailed(f"run {run_id}: {len(problems)} of {checked} files do not match the manifest")
    echo(f"run {run_id}: verified, {checked} files match their SHA-256 in the manifest")

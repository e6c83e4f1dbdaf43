"""``arena verify RUN``: recompute the SHA-256 of every results file of a stored run.
``arena verify FILE``: check a bundle from elsewhere offline, through the bundle hook."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.cli.params import OUTPUT, results_dir
from arena_core.errors import ArenaError, UsageError
from arena_core.report.text import wrap_text
from arena_core.results.views import standalone_card
from arena_core.run.integrity import verify
from arena_core.run.store import find_run
from arena_core.types import BundleRequest, OpenedBundle


class VerifyFailed(ArenaError):
    exit_code = 1


def opened_bundle(app: CliApp, path: Path, into: Path, *, trusted_keys: Path | None = None, refuse_untrusted: bool = False) -> OpenedBundle:
    """The bundle at ``path`` opened into ``into`` and checked by the plugin that reads it."""
    request = BundleRequest(
        path=path,
        into=into,
        registry=app.hooks.registry,
        card_of=lambda run_dir: standalone_card(run_dir, app.hooks),
        trusted_keys=trusted_keys,
        refuse_untrusted=refuse_untrusted,
    )
    reported = len(app.hooks.pm.problems)
    opened = app.hooks.open_bundle(request)
    if opened is None and len(app.hooks.pm.problems) > reported:  # a reader failed on it: its line says how
        raise UsageError(f"{path}: the plugin that reads it failed ({str(app.hooks.pm.problems[-1])[:300]})")
    if opened is None:
        raise UsageError(f"{path}: not a bundle any plugin reads (arena plugins lists them; arena_bundles reads Arena's own)")
    return opened


@click.command("verify")
@click.argument("run_id")
@OUTPUT
@click.option(
    "--trusted-keys", type=click.Path(dir_okay=False, path_type=Path), help="For a bundle: the file of keys a site trusts (one 'SHA256:... name' a line)."
)
@click.pass_obj
def verify_command(app: CliApp, run_id: str, output: Path | None, trusted_keys: Path | None) -> None:
    """Check that every results file of run RUN_ID is as the run left it (SHA-256 in its
    manifest). Given a bundle's FILE instead, check it offline: its signature, every file's
    digest, and every figure recomputed from its request records."""
    if Path(run_id).is_file():
        with tempfile.TemporaryDirectory(prefix="arena-verify-") as into:
            opened = opened_bundle(app, Path(run_id), Path(into), trusted_keys=app.config.bundles.trusted_keys_file(trusted_keys))
        for line in opened.checked:
            echo(wrap_text(line, indent="  ", hanging="    "))
        echo(wrap_text(f"bundle {Path(run_id).name}: verified, run {opened.run_id}, {opened.provenance.figures}", hanging="  "))
        return
    run_dir = find_run(results_dir(app, output), run_id, "arena verify")
    checked, problems = verify(run_dir)
    if not checked:
        raise VerifyFailed(f"run {run_id} cannot be verified: {problems[0]}")
    for problem in problems:
        echo(f"  {problem}", err=True)
    if problems:
        raise VerifyFailed(f"run {run_id}: {len(problems)} of {checked} files do not match the manifest")
    echo(f"run {run_id}: verified, {checked} files match their SHA-256 in the manifest")

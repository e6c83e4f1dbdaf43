"""``arena import``: reference-tool results, published cards and signed bundles into the store."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from arena_core.archives import is_packed
from arena_core.cli.app import CliApp
from arena_core.cli.cmd_verify import VerifyFailed, opened_bundle
from arena_core.cli.output import echo
from arena_core.errors import UsageError
from arena_core.hookspecs import hookimpl
from arena_core.report.text import wrap_text
from arena_core.results.imports import import_file, seed_cards_path
from arena_core.results.predictions import predicting_backend
from arena_core.run.integrity import write_provenance
from arena_core.run.store import adopt_run


@click.command("import")
@click.argument("file", type=click.Path(path_type=Path), required=False)
@click.option("--seeds", is_flag=True, help="Import the seed site's published cohort (17 models on a DGX Spark, CC-BY-4.0) that ships with Arena.")
@click.option("--workload", help="Which workload the file measured (llama-benchy and vllm bench serve files).")
@click.option("--model", help="Which catalog model it measured.")
@click.option("--hardware", help="Which hardware profile it ran on.")
@click.option("--backend", help="Which backend served it (default: the first registered that declares how it schedules; arena list backends).")
@click.option(
    "--trusted-keys",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Bundles: the file of keys the site trusts, one 'SHA256:... name' a line (default: the config's [bundles] trusted_keys).",
)
@click.option(
    "--untrusted",
    type=click.Choice(["mark", "refuse"]),
    help="Bundles signed by a key the trusted-keys file does not name: imported and shown as untrusted (mark), or refused (default: the config's [bundles] untrusted, else mark).",
)
@click.option("--output", type=click.Path(file_okay=False, path_type=Path), help="Results directory (default: arena-results).")
@click.pass_obj
def import_command(
    app: CliApp,
    file: Path | None,
    seeds: bool,
    workload: str | None,
    model: str | None,
    hardware: str | None,
    backend: str | None,
    trusted_keys: Path | None,
    untrusted: str | None,
    output: Path | None,
) -> None:
    """Import FILE: a signed bundle (arena bundle) or a folder of them, a llama-benchy
    --save-result JSON, a vllm bench serve result JSON, or an arena-cards/1 file, so results
    measured elsewhere or with the reference tools rank beside native ones. A bundle is imported
    only once it verifies (signature, digests, figures recomputed from its records)."""
    if seeds == (file is not None):
        raise UsageError("arena import: give a FILE or --seeds (one of the two)")
    store = output or Path(app.config.run.output)
    store.mkdir(parents=True, exist_ok=True)
    if file is not None and (file.is_dir() or is_packed(file)):
        trusted = app.config.bundles.trusted_keys_file(trusted_keys)
        _import_bundles(app, file, store, trusted, refuse_untrusted=(untrusted or app.config.bundles.untrusted) == "refuse")
        return
    if file is not None and not file.exists():  # a FIFO or a device exists: the reader refuses it, naming it
        raise UsageError(f"arena import: {file}: no such file or folder")
    served_by = predicting_backend(app.hooks.registry, backend).name
    run_ids = import_file(seed_cards_path() if seeds else file, store, app.hooks.registry, workload=workload, model=model, hardware=hardware, backend=served_by)  # type: ignore[arg-type]
    for run_id in run_ids:
        echo(f"imported as run {run_id} (arena card {run_id})")


def _import_bundles(app: CliApp, given: Path, store: Path, trusted_keys: Path | None, *, refuse_untrusted: bool) -> None:
    """Each bundle that verifies, adopted once (a run already stored is one row); each that does
    not, said in its line; the command fails when any was refused."""
    files = sorted(p for p in given.iterdir() if p.is_file() and is_packed(p)) if given.is_dir() else [given]
    if not files:
        raise UsageError(f"arena import: {given} holds no bundle (files made by arena bundle)")
    refused = 0
    for path in files:
        with tempfile.TemporaryDirectory(prefix="arena-import-", dir=store) as into:
            try:
                opened = opened_bundle(app, path, Path(into), trusted_keys=trusted_keys, refuse_untrusted=refuse_untrusted)
                named = Path(into) / "adopted" / opened.run_id  # a run folder is adopted under its run's id
                named.parent.mkdir()
                run_id, new = adopt_run(store, opened.run_dir.rename(named))  # another run of that id: refused
            except UsageError as exc:
                echo(f"refused: {exc}", err=True)
                refused += 1
                continue
            if new:
                write_provenance(store / run_id, opened.provenance)
        signer = opened.provenance.signer_name or f"untrusted key {opened.provenance.signer}"
        echo(
            wrap_text(
                f"{path.name}: {'imported as' if new else 'already in the store:'} run {run_id}, signed by {signer}, {opened.provenance.figures}", hanging="  "
            )
        )
    if refused:
        raise VerifyFailed(f"arena import: {refused} of {len(files)} bundles refused; the others are imported")


@hookimpl
def arena_register_commands(cli: click.Group) -> None:
    cli.add_command(import_command)

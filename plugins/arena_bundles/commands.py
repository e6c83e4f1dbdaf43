"""The commands of results that travel: ``arena bundle``, ``arena keys``, ``arena export``."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import click

import arena_core as arena
from arena_bundles import layout
from arena_bundles.check import open_bundle
from arena_bundles.keys import default_key_file, fingerprint, load_key, new_key, public_text
from arena_bundles.pack import bundle_bytes

KEY_FILE = click.option(
    "--key-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The signing key's file (default: $ARENA_SIGNING_KEY_FILE, else ~/.config/arena/signing-key).",
)
STORE = click.option("--output", type=click.Path(file_okay=False, path_type=Path), help="Results directory (default: arena-results).")


def _store(app: arena.CliApp, output: Path | None) -> Path:
    return output or Path(app.config.run.output)


@click.command("bundle")
@click.argument("run_id")
@KEY_FILE
@click.option("--to", "target", type=click.Path(path_type=Path), help="The bundle's file, or a folder for it (default: RUN_ID.arena-bundle here).")
@STORE
@click.pass_obj
def bundle_command(app: arena.CliApp, run_id: str, key_file: Path | None, target: Path | None, output: Path | None) -> None:
    """Pack stored run RUN_ID into one signed file: its manifest, request records, results, card,
    the environment (engine, versions, hardware, the weights' SHA-256) and an Ed25519 signature
    over all of it. Anyone can check it offline with arena verify FILE."""
    key = load_key(key_file)
    run_dir = arena.find_run(_store(app, output), run_id, "arena bundle")
    packed = bundle_bytes(run_dir, key, arena.standalone_card(run_dir, app.hooks))
    path = target or Path(run_dir.name + layout.SUFFIX)
    if path.is_dir():
        path = path / (run_dir.name + layout.SUFFIX)
    temporary = path.with_name(path.name + ".tmp")
    try:
        temporary.write_bytes(packed)
        _checked_as_a_stranger_would(app, temporary, run_dir.name)
        os.replace(temporary, path)
    except OSError as exc:
        raise arena.UsageError(f"--to: cannot write {path}: {exc.strerror or exc}") from None
    finally:
        temporary.unlink(missing_ok=True)
    arena.echo(
        arena.card_kit.wrap_text(f"bundled run {run_dir.name} into {path} ({len(packed):,} bytes), signed by {fingerprint(key.public_key())}", hanging="  ")
    )


def _checked_as_a_stranger_would(app: arena.CliApp, packed: Path, run_id: str) -> None:
    """The bundle just made, checked by ``arena verify FILE``'s own code: a run whose figures its
    records do not give (stored before Arena kept what recomputing needs, say) is never sent."""
    with tempfile.TemporaryDirectory(prefix="arena-bundle-") as into:
        request = arena.BundleRequest(
            path=packed, into=Path(into), registry=app.hooks.registry, card_of=lambda run_dir: arena.standalone_card(run_dir, app.hooks)
        )
        try:
            open_bundle(request)
        except arena.UsageError as exc:
            raise arena.UsageError(f"run {run_id} cannot be bundled: {str(exc).split(': ', 1)[-1]}") from None


@click.group("keys")
def keys_command() -> None:
    """The Ed25519 key that signs your bundles: make one, show its fingerprint."""


@keys_command.command("new")
@KEY_FILE
def keys_new(key_file: Path | None) -> None:
    """Make a signing key, readable by you alone (never overwrites one)."""
    path = key_file or default_key_file()
    key = new_key(path)
    arena.echo(f"made a signing key in {path}\nfingerprint: {fingerprint(key.public_key())}\npublic key: {public_text(key.public_key())}")


@keys_command.command("show")
@KEY_FILE
def keys_show(key_file: Path | None) -> None:
    """The signing key's fingerprint and public key (what a site's trusted-keys file names)."""
    key = load_key(key_file)
    arena.echo(f"fingerprint: {fingerprint(key.public_key())}\npublic key: {public_text(key.public_key())}")


#: Each runner's reference-tool file in a workload's folder, and the name an export gives it.
TOOL_FILES = {"llama-benchy": "llama-benchy.json", "vllm-bench": "vllm-bench.json"}


@click.command("export")
@click.argument("run_id")
@click.option("--to", "target", type=click.Path(file_okay=False, path_type=Path), required=True, help="The folder the files are written to.")
@STORE
@click.pass_obj
def export_command(app: arena.CliApp, run_id: str, target: Path, output: Path | None) -> None:
    """Write run RUN_ID as the reference tools' own result files: llama-benchy's --save-result
    JSON for each closed-loop workload, vllm bench serve's for each open-loop one, so their
    tools and seed-style sites read it (arena import reads them back)."""
    run_dir = arena.find_run(_store(app, output), run_id, "arena export")
    manifest = arena.read_manifest(run_dir)
    target.mkdir(parents=True, exist_ok=True)
    written = 0
    for name in manifest.workloads:
        result = arena.load_result(run_dir, name)
        tool_file = arena.workload_dir(run_dir, name) / TOOL_FILES.get(result.runner, "-") if result else None
        if tool_file is None or not tool_file.is_file():
            arena.echo(f"  {name}: no reference-tool file (its runner {result.runner if result else '?'} has none); not exported", err=True)
            continue
        path = target / f"{run_dir.name}-{name}.{tool_file.name}"
        shutil.copyfile(tool_file, path)
        command = f"arena import {path} --workload {name} --model {manifest.model} --hardware {manifest.hardware} --backend {manifest.backend}"
        arena.echo(f"{name}: {path}\n  {command}")  # the command on a line of its own, whole, to copy
        written += 1
    if not written:
        raise arena.UsageError(f"arena export: run {run_dir.name} has no workload measured with a reference tool's file")

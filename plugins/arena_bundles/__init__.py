"""Results that travel: ``arena bundle RUN`` packs a finished run with its card and environment
into one file signed with the user's key (``arena keys new`` makes one); ``arena verify FILE``
and ``arena import FILE`` check a bundle offline through :func:`arena_open_bundle`;
``arena export RUN`` writes a run as the reference tools' own result files."""

from __future__ import annotations

import click

from arena_core import BundleRequest, OpenedBundle, hookimpl, is_packed


@hookimpl
def arena_register_commands(cli: click.Group) -> None:
    from arena_bundles.commands import bundle_command, export_command, keys_command

    for command in (bundle_command, keys_command, export_command):
        cli.add_command(command)


@hookimpl
def arena_open_bundle(request: BundleRequest) -> OpenedBundle | None:
    from arena_bundles.check import open_bundle

    return open_bundle(request) if is_packed(request.path) else None

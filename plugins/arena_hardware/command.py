"""``arena hardware detect``: which hardware profile describes this machine, and why."""

from __future__ import annotations

import click

from arena_core import CliApp, echo, render_table


@click.group("hardware")
def hardware_command() -> None:
    """Hardware profiles and detection."""


@hardware_command.command("detect")
@click.pass_obj
def detect_command(app: CliApp) -> None:
    """Say which profile describes this machine, the evidence, and its key figures."""
    found = app.hooks.detect_hardware(app.config)
    if found is None:
        raise click.ClickException("no plugin recognised this machine")
    profile = found.profile
    rows = [
        ("profile", profile.name),
        ("title", profile.title),
        ("why", found.reason),
        ("memory", f"{profile.memory_gb:.1f} GB" if profile.memory_gb else "unknown"),
        ("unified memory", "yes" if profile.unified_memory else "no"),
        ("memory bandwidth", f"{profile.memory_bandwidth_gbs:g} GB/s" if profile.memory_bandwidth_gbs else "unknown"),
        ("probes", ", ".join(profile.probes) or "none"),
    ]
    echo(render_table(["", ""], rows))

"""``arena fleet join``: the ``ray start`` line that makes this box a worker of an arena's
cluster, advertising the hardware profile Arena detects here."""

from __future__ import annotations

import json
import shlex

import click

from arena_core import CliApp, UsageError, echo
from arena_fleet.on_ray import RAY_NICENESS


@click.group("fleet")
def fleet_command() -> None:
    """The boxes of an arena on Ray."""


@fleet_command.command("join")
@click.option("--address", default="HEAD_ADDRESS:6379", show_default=True, help="The Ray head's address (ray start --head prints it).")
@click.option("--hardware", help="Advertise this hardware profile instead of the detected one.")
@click.pass_obj
def join_command(app: CliApp, address: str, hardware: str | None) -> None:
    """Print the ray start command for this box, from hardware detection."""
    registry = app.hooks.registry
    if hardware is not None:
        registry.get("hardware", hardware)
        reason = "chosen with --hardware"
    else:
        found = app.hooks.detect_hardware(app.config)
        if found is None:
            raise UsageError("no plugin recognised this machine's hardware; name its profile with --hardware (arena list hardware)")
        hardware, reason = found.profile.name, found.reason
    resources = json.dumps({f"hw:{hardware}": 1})
    echo(f"# this box: {hardware} ({reason}); one cell at a time runs here")
    # Ray nices its workers (15) by default: a cell's server would be measured behind everything else
    echo(f"{RAY_NICENESS}=0 ray start --address={shlex.quote(address)} --resources={shlex.quote(resources)}")

"""``arena config check FILE``: validate a configuration file without running anything."""

from __future__ import annotations

from pathlib import Path

import click

from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.config import check_config, load_config


@click.group("config")
def config_command() -> None:
    """Work with configuration files."""


@config_command.command("check")
@click.argument("file", type=click.Path(path_type=Path))
@click.pass_obj
def check_command(app: CliApp, file: Path) -> None:
    """Check FILE: TOML syntax, known keys, value types and ranges, registered names."""
    config = load_config(file)
    check_config(config, app.hooks.registry)
    overridden = ", ".join(config.workloads) or "none"
    echo(f"{file}: ok (workload overrides: {overridden})")

"""The built-in commands, added through the same hook third-party plugins use."""

from __future__ import annotations

import click

from arena_core.hookspecs import hookimpl


@hookimpl
def arena_register_commands(cli: click.Group) -> None:
    from arena_core.cli.cmd_calibrate import calibrate_command
    from arena_core.cli.cmd_capacity import capacity_command
    from arena_core.cli.cmd_card import card_command
    from arena_core.cli.cmd_compare import compare_command
    from arena_core.cli.cmd_config import config_command
    from arena_core.cli.cmd_hardware import hardware_command
    from arena_core.cli.cmd_import import import_command
    from arena_core.cli.cmd_leaderboard import leaderboard_command
    from arena_core.cli.cmd_list import list_command
    from arena_core.cli.cmd_plugins import plugins_command
    from arena_core.cli.cmd_predict import predict_command
    from arena_core.cli.cmd_publish import publish_command
    from arena_core.cli.cmd_quality import quality_command
    from arena_core.cli.cmd_run import run_command
    from arena_core.cli.cmd_runs import runs_command
    from arena_core.cli.cmd_show import show_command
    from arena_core.cli.cmd_verify import verify_command

    for command in (
        run_command,
        quality_command,
        capacity_command,
        predict_command,
        calibrate_command,
        runs_command,
        card_command,
        leaderboard_command,
        compare_command,
        import_command,
        publish_command,
        plugins_command,
        list_command,
        show_command,
        verify_command,
        config_command,
        hardware_command,
    ):
        cli.add_command(command)

"""The essential commands: the ones every ``arena`` has, whatever is disabled (an ``arena``
without ``run`` or ``plugins`` could not even say why). Added through the same hook third-party
plugins use. Every other command is a default plugin of its own (``DEFAULT_COMMANDS`` in
:mod:`arena_core.plugins`), which ``ARENA_DISABLED_PLUGINS`` can leave out and a third party
can then replace."""

from __future__ import annotations

import click

from arena_core.hookspecs import hookimpl


@hookimpl
def arena_register_commands(cli: click.Group) -> None:
    from arena_core.cli.cmd_card import card_command
    from arena_core.cli.cmd_config import config_command
    from arena_core.cli.cmd_list import list_command
    from arena_core.cli.cmd_plugins import plugins_command
    from arena_core.cli.cmd_run import run_command
    from arena_core.cli.cmd_runs import runs_command
    from arena_core.cli.cmd_show import show_command
    from arena_core.cli.cmd_verify import verify_command

    for command in (run_command, runs_command, card_command, plugins_command, list_command, show_command, verify_command, config_command):
        cli.add_command(command)

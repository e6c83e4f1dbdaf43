"""The arena across many boxes (``shared/spec/fleet.md``): ``arena matrix`` runs a declared matrix
of runs on this machine or, with ``--ray``, as Ray tasks on the boxes of a cluster; ``arena fleet
join`` prints the ``ray start`` line for a box. Ray is an optional extra (``arena-bench[fleet]``)."""

from __future__ import annotations

import click

from arena_core import hookimpl


@hookimpl
def arena_register_commands(cli: click.Group) -> None:
    from arena_fleet.cmd_fleet import fleet_command
    from arena_fleet.cmd_matrix import matrix_command

    cli.add_command(matrix_command)
    cli.add_command(fleet_command)

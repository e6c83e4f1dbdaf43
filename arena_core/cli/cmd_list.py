"""``arena list [KIND]``: what plugins registered, of one kind or of every kind the hookspecs define."""

from __future__ import annotations

import inspect

import click

from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.cli.params import KindType
from arena_core.registry import KINDS, Kind
from arena_core.report import render_json, render_table

#: Commands are a plugin kind too (``arena_register_commands``), added to the CLI, not the registry.
COMMANDS = Kind(plural="commands", singular="command", hook="arena_register_commands", item_type=click.Command)
#: Every kind ``arena list`` knows, in the order it lists them.
LISTED = (*KINDS.values(), COMMANDS)


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else ""


def _rows(app: CliApp, kind: Kind) -> list[tuple[str, str, str]]:
    """(name, description, plugin) of each registered item of ``kind``."""
    if kind is COMMANDS:
        group = click.get_current_context().find_root().command
        assert isinstance(group, click.Group)
        return [(name, _first_line(command.help), app.hooks.command_plugins.get(name, "")) for name, command in sorted(group.commands.items())]
    return [(reg.item.name, _first_line(reg.item.description), reg.plugin) for reg in app.hooks.registry.registrations(kind.plural)]


@click.command("list")
@click.argument("kind", type=KindType(extra=(COMMANDS,)), metavar="[KIND]", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_obj
def list_command(app: CliApp, kind: Kind | None, as_json: bool) -> None:
    """List what plugins registered of one KIND, with the plugin that registered each; with no
    KIND, every kind the hookspecs define, each with its hook."""
    kinds = (kind,) if kind is not None else LISTED
    found = {each: _rows(app, each) for each in kinds}
    if as_json:
        items = {each: [{"name": n, "description": d, "plugin": p} for n, d, p in rows] for each, rows in found.items()}
        if kind is not None:
            echo(render_json(items[kind]))
        else:
            echo(render_json([{"kind": each.plural, "hook": each.hook, "items": listed} for each, listed in items.items()]))
        return
    for each, rows in found.items():
        if kind is None:
            echo(f"\n{each.plural} ({len(rows)}; plugins add them with {each.hook})")
        echo(render_table(["name", "description", "plugin"], rows) if rows else f"No {each.plural} registered.")


# the kinds named in the help are the kinds listed: written once, in LISTED
list_command.help = inspect.cleandoc(list_command.help or "") + "\n\nKIND is one of " + ", ".join(each.plural for each in LISTED) + " (singular works too)."

"""The ``arena`` command line: a click group whose commands all come from plugins.

The essential commands are an ordinary plugin (:mod:`arena_core.cli.essential_commands`), each
other built-in command a default plugin of its own; third parties add theirs through
``arena_register_commands``. Errors a user can cause print one line
and exit 2; a traceback appears only with ``--debug`` (or ``ARENA_DEBUG=1``).
"""

from __future__ import annotations

import os
import select
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from arena_core import __version__
from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.errors import ArenaError, UsageError
from arena_core.plugins import DEFAULT_COMMANDS, ENV_DISABLED, ArenaPluginManager, PluginProblem, make_plugin_manager


class ArenaGroup(click.Group):
    """Maps :class:`ArenaError` (and, without ``--debug``, any crash) to one line and an exit code."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command; for a default command whose plugin is disabled and that nobody replaced,
        one line saying so (rather than click's "No such command")."""
        command = super().get_command(ctx, cmd_name)
        plugin = DEFAULT_COMMANDS.get(cmd_name)
        if command is None and isinstance(ctx.obj, CliApp) and plugin in ctx.obj.pm.disabled:
            raise UsageError(f"arena {cmd_name}: its plugin {plugin} is disabled ({ENV_DISABLED}), and no other plugin adds a command of that name")
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ArenaError as exc:
            app = ctx.obj
            if isinstance(app, CliApp) and app.debug:
                traceback.print_exc()
            echo(f"arena: error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except (click.ClickException, click.exceptions.Exit, click.Abort, KeyboardInterrupt):
            raise
        except OSError as exc:  # a full disk, a read-only folder: the file and the reason, one line
            if isinstance(exc, BrokenPipeError) and _reader_gone(sys.stdout):
                _exit_as_by_sigpipe(ctx)  # ``arena ... | head``: the reader has what it wanted
            app = ctx.obj
            if isinstance(app, CliApp) and app.debug:
                raise
            where = f"{exc.filename}: " if exc.filename else ""
            echo(f"arena: error: {where}{exc.strerror or exc}; files written before are kept", err=True)
            ctx.exit(1)
        except Exception as exc:
            app = ctx.obj
            if isinstance(app, CliApp) and app.debug:
                raise
            echo(f"arena: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)", err=True)
            ctx.exit(1)


#: The exit status of a process a closed pipe ended (128 + SIGPIPE), as a shell reports
#: ``yes | head``'s: a pipeline run under ``set -o pipefail`` still sees that it was cut short.
SIGPIPE_EXIT = 141


def _reader_gone(stream: Any) -> bool:
    """Whether ``stream`` is a pipe whose reading end is closed (on Linux and macOS, polling
    its writing end says so). A broken pipe elsewhere -- a server's socket -- is an error."""
    try:
        poller = select.poll()
        poller.register(stream.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll on this OS, or no file behind the stream
        return False


def _exit_as_by_sigpipe(ctx: click.Context) -> None:
    """Leave quietly, as a command whose reader went away: no message (nobody reads it), and
    standard output pointed at the null device, so the interpreter's last flush cannot fail again."""
    with open(os.devnull, "wb") as null:
        os.dup2(null.fileno(), sys.stdout.fileno())
    ctx.exit(SIGPIPE_EXIT)


def make_cli(pm: ArenaPluginManager) -> click.Group:
    """The ``arena`` group for ``pm``, with every plugin's commands added."""
    app = CliApp(pm)

    @click.group("arena", cls=ArenaGroup, context_settings={"obj": app, "help_option_names": ["-h", "--help"]})
    @click.version_option(__version__, "--version", prog_name="arena", message="%(prog)s %(version)s")
    @click.option(
        "--config",
        "config_path",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="Configuration file (default: ./arena.toml when it exists).",
    )
    @click.option("--strict-plugins", is_flag=True, help="Stop on the first misbehaving plugin (also ARENA_STRICT_PLUGINS=1).")
    @click.option("--debug", is_flag=True, envvar="ARENA_DEBUG", help="Show tracebacks (also ARENA_DEBUG=1).")
    @click.pass_obj
    def cli(app: CliApp, config_path: Path | None, strict_plugins: bool, debug: bool) -> None:
        """Arena: benchmark LLM inference servers and rank what they serve."""
        # --strict-plugins takes effect while plugins load, before click parses: see main().
        app.config_path = config_path
        app.debug = debug

    app.hooks.register_commands(cli)
    return cli


def _print_problem(problem: PluginProblem) -> None:
    echo(f"arena: warning: {problem}", err=True)


#: Options of ``arena`` itself, accepted after the subcommand too (``arena run --config F``).
GLOBAL_FLAGS, GLOBAL_OPTIONS = ("--strict-plugins", "--debug"), ("--config",)


def global_options_first(args: Sequence[str]) -> list[str]:
    """``args`` with ``arena``'s own options moved before the subcommand, wherever they were given
    (up to a ``--``, after which everything is an argument)."""
    front, rest, index = [], [], 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            rest += args[index:]
            break
        if arg in GLOBAL_FLAGS or arg.split("=", 1)[0] in GLOBAL_OPTIONS:
            takes_value = arg in GLOBAL_OPTIONS and index + 1 < len(args)
            front += args[index : index + (2 if takes_value else 1)]
            index += 2 if takes_value else 1
            continue
        rest.append(arg)
        index += 1
    return front + rest


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``arena`` console script."""
    args = global_options_first(sys.argv[1:] if argv is None else argv)
    # Plugins load before click parses, so the switches that affect loading are read early.
    strict = "--strict-plugins" in args or None
    debug = "--debug" in args or os.environ.get("ARENA_DEBUG", "") not in ("", "0")
    try:
        pm = make_plugin_manager(strict=strict, on_problem=_print_problem)
        cli = make_cli(pm)
    except ArenaError as exc:
        if debug:
            traceback.print_exc()
        echo(f"arena: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    cli.main(args=args, prog_name="arena")

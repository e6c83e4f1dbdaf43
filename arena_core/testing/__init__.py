"""Helpers for testing Arena and plugins written for it.

``plugin_manager_with(MyPlugin())`` gives a manager with exactly the plugins named (no entry
points, no environment switches), and ``run_cli(pm, [...])`` runs the CLI against it in-process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from click.testing import CliRunner, Result

from arena_core.cli import GLOBAL_OPTIONS, main, make_cli
from arena_core.plugins import ArenaPluginManager, make_plugin_manager


def plugin_manager_with(*plugins: object, builtins: Sequence[str] = (), strict: bool = False) -> ArenaPluginManager:
    """A fresh manager holding ``builtins`` (dotted names) and ``plugins``, nothing else.

    Each plugin is registered under its class name (or module name for a module); pass
    ``(name, plugin)`` to choose the name.
    """
    named = []
    for plugin in plugins:
        if isinstance(plugin, tuple):
            named.append(plugin)
        else:
            name = getattr(plugin, "__name__", None) or type(plugin).__name__
            named.append((name, plugin))
    return make_plugin_manager(builtins=builtins, extra_plugins=named, autoload=False, disabled=(), strict=strict, trace=False)


def run_cli(pm: ArenaPluginManager, args: Sequence[str]) -> Result:
    """Invoke the ``arena`` CLI built for ``pm``; the result has ``exit_code``, ``stdout``, ``stderr``."""
    return CliRunner().invoke(make_cli(pm), list(args), catch_exceptions=False)


#: The commands that measure: they start servers, install signal handlers and event loops of
#: their own, so :func:`arena` runs them as a child process, as a user's shell does.
MEASURING_COMMANDS = frozenset({"run", "capacity", "quality", "matrix", "calibrate"})


def arena(*args: str, cwd: Path | str | None = None, env: Mapping[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``arena ARGS`` as the console script runs it (its global options anywhere, one-line errors,
    exit codes), with ``cwd`` as the working folder and ``env`` for the environment (None: this
    one's). A command that reads, checks or renders runs in this process, a second or so sooner
    than a child interpreter; one of :data:`MEASURING_COMMANDS` runs as a child with ``timeout``.
    Returns what :func:`subprocess.run` returns either way."""
    given = [arg for index, arg in enumerate(args) if not (index and args[index - 1] in GLOBAL_OPTIONS)]  # --config's value is no command
    command = next((arg for arg in given if not arg.startswith("-")), "")
    if command in MEASURING_COMMANDS:
        return subprocess.run(arena_argv(*args), capture_output=True, text=True, cwd=cwd, env=dict(env) if env is not None else None, timeout=timeout)
    here = os.getcwd()
    replaced = {name: None for name in os.environ if env is not None and name not in env}
    with CliRunner().isolation(env={**replaced, **(env or {})}) as (stdout, stderr, _):
        code = 0
        try:
            if cwd is not None:
                os.chdir(cwd)
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            os.chdir(here)
        return subprocess.CompletedProcess(list(args), code, stdout.getvalue().decode(), stderr.getvalue().decode())


def arena_argv(*args: str) -> list[str]:
    """``arena ARGS`` as a child process of this interpreter (the console script need not be on PATH)."""
    return [sys.executable, "-m", "arena_core", *args]


def rig_run_argv(url: str, output: Path | str, *, tokenizer: Path | str, workloads: str, scale: str, extra: Sequence[str] = ()) -> list[str]:
    """``arena run`` against a server at ``url`` with a local tokenizer, as a child process: the
    command most end-to-end tests start from."""
    return arena_argv("run", "--base-url", url, "--tokenizer", str(tokenizer), "--workloads", workloads, "--scale", scale, "--output", str(output), *extra)

"""Helpers for testing Arena and plugins written for it.

``plugin_manager_with(MyPlugin())`` gives a manager with exactly the plugins named (no entry
points, no environment switches), and ``run_cli(pm, [...])`` runs the CLI against it in-process.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from click.testing import CliRunner, Result

from arena_core.cli import make_cli
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


def arena_argv(*args: str) -> list[str]:
    """``arena ARGS`` as a child process of this interpreter (the console script need not be on PATH)."""
    return [sys.executable, "-m", "arena_core", *args]


def rig_run_argv(url: str, output: Path | str, *, tokenizer: Path | str, workloads: str, scale: str, extra: Sequence[str] = ()) -> list[str]:
    """``arena run`` against a server at ``url`` with a local tokenizer, as a child process: the
    command most end-to-end tests start from."""
    return arena_argv("run", "--base-url", url, "--tokenizer", str(tokenizer), "--workloads", workloads, "--scale", scale, "--output", str(output), *extra)

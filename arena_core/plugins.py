"""Building a plugin manager: built-ins by name, then entry points, then validation.

Nothing here runs at import time. Every call of :func:`make_plugin_manager` returns a fresh
manager, so tests and embedding applications never share plugin state.

A plugin that misbehaves while loading (import error, hook argument the spec does not have,
misspelled hook name) is reported by name and left out; with ``strict`` the first such problem
raises :class:`~arena_core.errors.PluginError` instead.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from types import ModuleType
from typing import Any

import pluggy
from attrs import frozen

from arena_core import hookspecs
from arena_core.errors import PluginError

#: The essential commands (run, card, runs, verify, plugins, config, list, show): an ordinary
#: plugin, but one that every manager loads first and that cannot be disabled (an ``arena``
#: without ``run`` or ``plugins`` could not even say why).
ESSENTIAL_COMMANDS = "arena_core.cli.essential_commands"

#: The core's other commands: each a default plugin of its own, the module that defines it.
CORE_DEFAULT_COMMANDS = ("quality", "capacity", "predict", "calibrate", "leaderboard", "compare", "import", "publish")

#: Every command but the essential ones, by name, and the default plugin that adds it:
#: ``ARENA_DISABLED_PLUGINS`` leaves it out, and a third party's command of the same name then
#: takes its place.
DEFAULT_COMMANDS: dict[str, str] = {
    **{name: f"arena_core.cli.cmd_{name}" for name in CORE_DEFAULT_COMMANDS},
    "hardware": "arena_hardware",
    "matrix": "arena_fleet",
    "fleet": "arena_fleet",
    "bundle": "arena_bundles",
    "keys": "arena_bundles",
    "export": "arena_bundles",
}

#: The in-tree plugins, registered under these (importable) names before any entry point.
BUILTIN_PLUGINS: tuple[str, ...] = (
    ESSENTIAL_COMMANDS,
    *(DEFAULT_COMMANDS[name] for name in CORE_DEFAULT_COMMANDS),
    "arena_workloads",
    "arena_runners",
    "arena_backends",
    "arena_hardware",
    "arena_models",
    "arena_scoring",
    "arena_prediction",
    "arena_quality",
    "arena_fleet",
    "arena_renderers",
    "arena_site",
    "arena_agents",
    "arena_bundles",
)

#: Third-party plugins declare ``[project.entry-points.arena]`` in their ``pyproject.toml``.
ENTRY_POINT_GROUP = "arena"

ENV_STRICT = "ARENA_STRICT_PLUGINS"
ENV_DISABLE_AUTOLOAD = "ARENA_DISABLE_PLUGIN_AUTOLOAD"
ENV_DISABLED = "ARENA_DISABLED_PLUGINS"
ENV_TRACE = "ARENA_TRACE_PLUGINS"


@frozen(kw_only=True)
class PluginProblem:
    """Something a plugin did wrong, reported against its name."""

    plugin: str
    problem: str

    def __str__(self) -> str:
        return f"plugin {self.plugin!r}: {self.problem}"


@frozen(kw_only=True)
class PluginInfo:
    """What ``arena plugins`` shows about one registered plugin."""

    name: str
    version: str
    source: str
    builtin: bool
    hooks: tuple[str, ...]


class ArenaPluginManager(pluggy.PluginManager):
    """A pluggy manager that also remembers where each plugin came from and what went wrong.

    ``problems`` lists every reported misbehaviour; ``on_problem`` (set by the CLI) is told about
    each one as it happens; ``trace`` (when set) receives one line per hook call.
    """

    def __init__(self, *, strict: bool = False, trace: Callable[[str], None] | None = None) -> None:
        super().__init__(hookspecs.PROJECT_NAME)
        self.add_hookspecs(hookspecs)
        self.strict = strict
        self.trace_line = trace
        self.problems: list[PluginProblem] = []
        self.on_problem: Callable[[PluginProblem], None] | None = None
        self._origins: dict[str, tuple[str, str, bool]] = {}
        #: the plugins left out by name (``ARENA_DISABLED_PLUGINS``), for a command to say why a default is missing
        self.disabled: frozenset[str] = frozenset()

    def report(self, plugin: str, problem: str) -> None:
        """Record a misbehaving plugin; raise instead under ``strict``."""
        found = PluginProblem(plugin=plugin, problem=problem)
        if self.strict:
            raise PluginError(f"{found} (strict plugin mode)")
        self.problems.append(found)
        if self.on_problem is not None:
            self.on_problem(found)

    def add_plugin(self, plugin: object, name: str, *, version: str, source: str, builtin: bool) -> bool:
        """Register ``plugin``; on a validation error report it, undo it and return False."""
        try:
            self.register(plugin, name)
        except (pluggy.PluginValidationError, ValueError) as exc:
            if self.has_plugin(name) and self.get_plugin(name) is plugin:
                self.unregister(name=name)
            lines = str(exc).strip().splitlines()
            self.report(name, f"not loaded: {lines[-1] if lines else type(exc).__name__}")
            return False
        self._origins[name] = (version, source, builtin)
        if self.trace_line:
            self.trace_line(f"registered plugin {name!r} ({source})")
        return True

    def plugin_infos(self) -> list[PluginInfo]:
        infos = []
        for name, plugin in self.list_name_plugin():
            version, source, builtin = self._origins.get(name, ("", "registered directly", False))
            hooks = tuple(sorted(caller.name for caller in self.get_hookcallers(plugin) or ()))
            infos.append(PluginInfo(name=name, version=version, source=source, builtin=builtin, hooks=hooks))
        return infos

    def drop_unknown_hooks(self) -> None:
        """Report and unregister plugins that implement hooks no spec declares (misspellings)."""
        for caller in list(self.hook.__dict__.values()):
            if not isinstance(caller, pluggy.HookCaller) or caller.has_spec():
                continue
            for impl in caller.get_hookimpls():
                if impl.optionalhook:
                    continue
                self.report(impl.plugin_name, f"not loaded: unknown hook {caller.name!r} (no such hookspec; misspelled?)")
                if self.has_plugin(impl.plugin_name):
                    self.unregister(name=impl.plugin_name)


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _import(name: str) -> ModuleType:
    return importlib.import_module(name)


def _load_builtins(pm: ArenaPluginManager, names: Iterable[str], disabled: set[str], version: str) -> None:
    for name in dict.fromkeys([ESSENTIAL_COMMANDS, *names]):
        if (name in disabled and name != ESSENTIAL_COMMANDS) or pm.has_plugin(name):
            continue
        try:
            module = _import(name)
        except Exception as exc:  # any error while importing a plugin is that plugin's fault
            pm.report(name, f"not loaded: import failed: {type(exc).__name__}: {exc}")
            continue
        pm.add_plugin(module, name, version=version, source="builtin", builtin=True)


def _load_entry_points(pm: ArenaPluginManager, disabled: set[str]) -> None:
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.name in disabled or pm.has_plugin(entry_point.name):
            continue
        dist = entry_point.dist
        version = dist.version if dist else ""
        source = f"entry point {entry_point.value!r} of {dist.metadata['Name'] if dist else 'unknown'}"
        try:
            plugin = entry_point.load()
        except Exception as exc:  # a broken third-party package must not stop arena
            pm.report(entry_point.name, f"not loaded: import failed: {type(exc).__name__}: {exc}")
            continue
        pm.add_plugin(plugin, entry_point.name, version=version, source=source, builtin=False)


def make_plugin_manager(
    *,
    builtins: Sequence[str] = BUILTIN_PLUGINS,
    extra_plugins: Sequence[tuple[str, Any]] = (),
    autoload: bool | None = None,
    disabled: Iterable[str] | None = None,
    strict: bool | None = None,
    trace: bool | None = None,
    on_problem: Callable[[PluginProblem], None] | None = None,
) -> ArenaPluginManager:
    """A fresh, validated plugin manager.

    Order: the essential commands (always), ``builtins`` (dotted module names), then entry points of group ``arena`` unless
    ``autoload`` is false, then ``extra_plugins`` (``(name, object)`` pairs, for tests and
    embedding). Each argument left ``None`` comes from the environment: ``ARENA_STRICT_PLUGINS``,
    ``ARENA_DISABLE_PLUGIN_AUTOLOAD``, ``ARENA_DISABLED_PLUGINS`` (comma-separated names),
    ``ARENA_TRACE_PLUGINS``.
    """
    from arena_core import __version__

    strict = _env_flag(ENV_STRICT) if strict is None else strict
    autoload = not _env_flag(ENV_DISABLE_AUTOLOAD) if autoload is None else autoload
    trace = _env_flag(ENV_TRACE) if trace is None else trace
    if disabled is None:
        disabled = [part.strip() for part in os.environ.get(ENV_DISABLED, "").split(",")]
    disabled_names = {name for name in disabled if name}

    pm = ArenaPluginManager(strict=strict, trace=_stderr_trace if trace else None)
    pm.on_problem = on_problem
    pm.disabled = frozenset(disabled_names)
    _load_builtins(pm, builtins, disabled_names, __version__)
    if autoload:
        _load_entry_points(pm, disabled_names)
    for name, plugin in extra_plugins:
        if name not in disabled_names:
            pm.add_plugin(plugin, name, version="", source="registered directly", builtin=False)
    pm.drop_unknown_hooks()
    pm.check_pending()
    return pm


def _stderr_trace(line: str) -> None:
    print(f"arena trace: {line}", file=sys.stderr)

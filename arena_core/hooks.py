"""The typed facade over the hooks: the only module that calls ``pm.hook``.

Each implementation is called on its own, so an exception is reported against the plugin that
raised it (and that plugin's contribution dropped) while the others still run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

import pluggy

from arena_core.errors import PluginError, UsageError
from arena_core.registry import KINDS, Registry, RegistryBuilder

if TYPE_CHECKING:
    import click

    from arena_core.config import ArenaConfig
    from arena_core.plugins import ArenaPluginManager
    from arena_core.types import BundleRequest, DescribedModel, HardwareDetection, ModelQuery, OpenedBundle, RunInfo, RunResult


class ArenaHooks:
    """Typed calls of every hook for one plugin manager; the registry is collected once."""

    def __init__(self, pm: ArenaPluginManager) -> None:
        self.pm = pm
        self._registry: Registry | None = None
        #: command name -> the plugin that added it, once :meth:`register_commands` ran
        self.command_plugins: dict[str, str] = {}

    # --- collect ---------------------------------------------------------------------------

    @property
    def registry(self) -> Registry:
        """Everything the plugins registered, collected on first use."""
        if self._registry is None:
            builder = RegistryBuilder(self.pm.report)
            for kind in KINDS.values():
                for impl in self._impls(kind.hook, call_order=False):
                    self._guarded(impl, builder.collect, kind, impl.plugin_name, partial(self._call, impl))
            self._registry = builder.build()
        return self._registry

    def register_commands(self, cli: click.Group) -> None:
        """Let each plugin add commands; a name already taken keeps its first command. Which
        plugin added each is kept in :attr:`command_plugins` (``arena list commands``)."""
        for impl in self._impls("arena_register_commands", call_order=False):
            before = dict(cli.commands)
            succeeded, _ = self._guarded(impl, self._call, impl, cli=cli)
            if not succeeded:
                cli.commands.clear()
                cli.commands.update(before)
                continue
            for name, command in before.items():
                if cli.commands[name] is not command:
                    cli.commands[name] = command
                    self.pm.report(impl.plugin_name, f"command {name!r} is already taken; skipped")
            self.command_plugins.update({name: impl.plugin_name for name in cli.commands if name not in before})

    # --- firstresult -----------------------------------------------------------------------

    def detect_hardware(self, config: ArenaConfig) -> HardwareDetection | None:
        for impl in self._impls("arena_detect_hardware", call_order=True):
            _, found = self._guarded(impl, self._call, impl, config=config)
            if found is not None:
                return found
        return None

    def describe_model(self, query: ModelQuery) -> DescribedModel | None:
        """The first model source's description of ``query.source``; a source that finds it
        wrong says so in one line (its :class:`UsageError` is the user's error, not a bug)."""
        return self._first_answer("arena_describe_model", query=query)

    def open_bundle(self, request: BundleRequest) -> OpenedBundle | None:
        """The first bundle reader's check of ``request.path``; its refusal is the user's error."""
        return self._first_answer("arena_open_bundle", request=request)

    def _first_answer(self, hook_name: str, **kwargs: Any) -> Any:
        """The first implementation's answer that is not None. Its :class:`UsageError` is the
        user's error (raised as it is); any other exception is its plugin's bug, reported, and
        the next implementation asked."""
        for impl in self._impls(hook_name, call_order=True):
            try:
                found = self._call(impl, **kwargs)
            except (UsageError, PluginError):  # the user's error, or strict mode's stop
                raise
            except Exception as exc:
                self.pm.report(impl.plugin_name, f"{impl.function.__name__} raised {type(exc).__name__}: {exc}; skipped")
                continue
            if found is not None:
                return found
        return None

    # --- notify ----------------------------------------------------------------------------

    def run_started(self, run: RunInfo) -> None:
        for impl in self._impls("arena_run_started", call_order=True):
            self._guarded(impl, self._call, impl, run=run)

    def run_finished(self, run: RunInfo, result: RunResult) -> None:
        for impl in self._impls("arena_run_finished", call_order=True):
            self._guarded(impl, self._call, impl, run=run, result=result)

    # --- plumbing --------------------------------------------------------------------------

    def _impls(self, hook_name: str, *, call_order: bool) -> Iterator[pluggy.HookImpl]:
        """Implementations in registration order, or in pluggy's call order (tryfirst first)."""
        impls = getattr(self.pm.hook, hook_name).get_hookimpls()
        for impl in reversed(impls) if call_order else impls:
            if impl.hookwrapper or impl.wrapper:
                self.pm.report(impl.plugin_name, f"{hook_name}: hook wrappers are not supported; ignored")
                continue
            yield impl

    def _call(self, impl: pluggy.HookImpl, **kwargs: Any) -> Any:
        if self.pm.trace_line:
            self.pm.trace_line(f"{impl.plugin_name}.{impl.function.__name__}({', '.join(impl.argnames)})")
        return impl.function(*(kwargs[name] for name in impl.argnames))

    def _guarded(self, impl: pluggy.HookImpl, action: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[bool, Any]:
        """``(True, action(...))``, or ``(False, None)`` after reporting the plugin that raised."""
        try:
            return True, action(*args, **kwargs)
        except PluginError:  # strict mode: already reported, stop here
            raise
        except Exception as exc:  # a plugin's bug must not take the other plugins down
            self.pm.report(impl.plugin_name, f"{impl.function.__name__} raised {type(exc).__name__}: {exc}; skipped")
            return False, None

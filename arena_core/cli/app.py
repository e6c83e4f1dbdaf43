"""The object every command receives as ``ctx.obj``."""

from __future__ import annotations

import time
from pathlib import Path

from arena_core.config import ArenaConfig, load_config
from arena_core.hooks import ArenaHooks
from arena_core.plugins import ArenaPluginManager


class CliApp:
    """What every command receives as ``ctx.obj``: the plugin manager, its hooks, the config."""

    def __init__(self, pm: ArenaPluginManager) -> None:
        self.pm = pm
        self.hooks = ArenaHooks(pm)
        self.config_path: Path | None = None
        self.debug = False
        self._config: ArenaConfig | None = None
        #: when the command began (``time.monotonic()``): a run's budget counts from here
        self.started = time.monotonic()

    @property
    def config(self) -> ArenaConfig:
        """``--config FILE``, else ``./arena.toml`` when present, else the defaults."""
        if self._config is None:
            self._config = load_config(self.config_path)
        return self._config

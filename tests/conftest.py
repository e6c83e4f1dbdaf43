"""Shared fixtures: a clean plugin environment for every test."""

from __future__ import annotations

import pytest

from arena_core.plugins import ENV_DISABLE_AUTOLOAD, ENV_DISABLED, ENV_STRICT, ENV_TRACE


@pytest.fixture(autouse=True)
def _clean_plugin_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests decide the plugin switches themselves; the caller's environment must not leak in."""
    for name in (ENV_STRICT, ENV_DISABLE_AUTOLOAD, ENV_DISABLED, ENV_TRACE, "ARENA_DEBUG"):
        monkeypatch.delenv(name, raising=False)

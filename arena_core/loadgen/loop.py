"""Running the measuring client's event loop: uvloop where it is installed, asyncio otherwise.

uvloop calls ``data_received`` straight from libuv, which halves the client's CPU per streamed
token when tokens arrive one by one (``bench/client_overhead.py`` shows it). Set
``ARENA_EVENT_LOOP=asyncio`` to use the standard loop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_name() -> str:
    """``uvloop`` or ``asyncio``: the loop :func:`run` will use."""
    if os.environ.get("ARENA_EVENT_LOOP", "").lower() == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on the best available loop."""
    if loop_name() == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(coroutine)
    return asyncio.run(coroutine)

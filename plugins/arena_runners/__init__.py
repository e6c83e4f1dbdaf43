"""Runners: the load generators that turn a workload into request records.

``llama-benchy`` (closed-loop) is here; the open-loop ``vllm-bench`` runner arrives with the
measuring instrument, part 2.
"""

from __future__ import annotations

from collections.abc import Callable

from arena_core import RunnerSpec, hookimpl
from arena_runners import llama_benchy


@hookimpl
def arena_register_runners(register: Callable[[RunnerSpec], None]) -> None:
    register(llama_benchy.SPEC)

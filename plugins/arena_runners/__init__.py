"""Runners: the load generators that turn a workload into request records.

``llama-benchy`` drives closed-loop workloads, ``vllm-bench`` open-loop ones; each has a
``native`` instrument (Arena's own) and an ``external`` one (the real tool).
``cache-states`` measures one prompt shape's TTFT cold, uncached and as a prefix hit (native only).
"""

from __future__ import annotations

from collections.abc import Callable

from arena_core import RunnerSpec, hookimpl
from arena_runners import cache_states, llama_benchy, vllm_bench


@hookimpl
def arena_register_runners(register: Callable[[RunnerSpec], None]) -> None:
    register(llama_benchy.SPEC)
    register(vllm_bench.SPEC)
    register(cache_states.SPEC)

"""Coding agents as a workload family (issue 57): sessions that share a prefix, call tools, wait
for them and grow their context (:mod:`arena_agents.sessions` plans them, :mod:`arena_agents.runner`
sends them, :mod:`arena_agents.summary` reads their figures). The ``agents`` workload is
optional: a run that names no workloads leaves it out."""

from __future__ import annotations

from collections.abc import Callable

import arena_core as arena
from arena_agents import runner

SPEC = arena.RunnerSpec(
    name=runner.NAME,
    description="Coding-agent sessions at once: tool calls read and judged, each turn's TTFT, prefill and cache hit",
    loop="closed",
    instruments=("native",),
    create=lambda instrument: runner.NativeInstrument(),
)

#: Coding agents at their standard size: eight at once, each up to twelve tool calls over a
#: 4,000-token shared prefix (system prompt and tool definitions, as an agent's framework sends)
#: and 6,000 tokens of files it read, its tools answering 200-2,000 tokens after 0.5-3 s.
AGENTS = arena.WorkloadSpec(
    name="agents",
    title="Coding agents",
    description=(
        "Agents working at once, each a session of tool calls: a prefix every session shares, a context of its own, then turns that each"
        " add a tool's output after its delay. Each turn's time to first chunk, prefill and cache hit, and whether the calls parse and are right."
    ),
    runner=runner.NAME,
    shape=arena.AgentShape(
        agents=8,
        turns=12,
        shared_prefix_tokens=4000,
        session_context_tokens=6000,
        tool_output_tokens=(200, 2000),
        tool_delay_s=(0.5, 3.0),
        answer_tokens=150,
        context_cap_tokens=32768,
    ),  # fmt: skip
    optional=True,
    roles=("agent-capacity",),
)


@arena.hookimpl
def arena_register_runners(register: Callable[[arena.RunnerSpec], None]) -> None:
    register(SPEC)


@arena.hookimpl
def arena_register_workloads(register: Callable[[arena.WorkloadSpec], None]) -> None:
    register(AGENTS)

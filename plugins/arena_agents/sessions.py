"""Coding-agent sessions, planned offline from a seed (issue 57).

An agent's traffic: a prefix every session shares (its system prompt and tool definitions), a
context of its own (the files it read first), then turns. Each turn the model answers with a
tool call; the agent runs the tool (a delay), and the tool's output joins the history before the
next turn. So a turn prefills the new tool output on top of a history the server may have
cached, and the context grows until the session ends or would pass its cap.

:func:`plan_sessions` draws every number of that from ``seed`` alone: which tool each turn
calls and with what arguments, how many tokens each output has, how long each tool takes. The
text is built at run time from the corpus (token-exact, as every workload's), so one seed is one
workload on every server. A session whose next turn would pass ``context_cap_tokens`` ends
there; a shape whose first turn cannot fit is refused with its numbers before any request.
"""

from __future__ import annotations

import json
import random
from typing import Any

from attrs import frozen

from arena_core import AgentShape, bounds

#: The tools a coding agent offers the model, as OpenAI's ``tools`` list writes them.
TOOLS: tuple[dict[str, Any], ...] = tuple(
    {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": {"type": "object", "properties": properties, "required": list(properties)}},
    }
    for name, description, properties in (
        ("read_file", "Read a file of the repository.", {"path": {"type": "string", "description": "the file's path"}}),
        ("search_code", "Search the repository for a text.", {"query": {"type": "string"}, "max_results": {"type": "integer"}}),
        ("run_tests", "Run the tests of one module and return their output.", {"target": {"type": "string"}}),
        ("edit_file", "Replace one text with another in a file.", {"path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}}),
    )
)


@frozen(kw_only=True)
class PlannedTurn:
    """One turn: the call the model is asked to make, then its tool's output and delay."""

    tool: str
    arguments: str  # the call's arguments as JSON text, as the model is asked to write them
    output_tokens: int
    delay_s: float

    def asked(self) -> str:
        """The line that ends the turn's message and asks for its call (the rig's ``ASKED_CALL``
        reads it back; a test keeps the two in step)."""
        return f"Call {self.tool} with {self.arguments}."


@frozen(kw_only=True)
class PlannedSession:
    index: int
    turns: tuple[PlannedTurn, ...]

    def context_tokens(self, shape: AgentShape) -> int:
        """The longest context it reaches: prefix, own context, every output and answer."""
        return shape.first_turn_tokens() + sum(t.output_tokens + shape.answer_tokens for t in self.turns[:-1])


def _call(rng: random.Random, session: int) -> tuple[str, dict[str, Any]]:
    module = f"src/agent_{session}/module_{rng.randrange(100)}.py"
    tool = rng.choice(TOOLS)["function"]["name"]
    arguments: dict[str, Any] = {
        "read_file": {"path": module},
        "search_code": {"query": f"def handler_{rng.randrange(1000)}", "max_results": rng.randrange(1, 20)},
        "run_tests": {"target": module.replace("src/", "tests/test_")},
        "edit_file": {"path": module, "old": f"return {rng.randrange(100)}", "new": f"return {rng.randrange(100)}"},
    }[tool]
    return tool, arguments


def plan_sessions(shape: AgentShape, sessions: int, seed: int) -> tuple[PlannedSession, ...]:
    """``sessions`` sessions of ``shape``, the same for the same seed on every machine. A session
    ends before the turn that would take its context past ``context_cap_tokens``; a shape whose
    first turn does not fit is a ValueError with the numbers."""
    if sessions < 1 or sessions > bounds.CONCURRENCY.most:
        raise ValueError(f"sessions must be {bounds.CONCURRENCY.wording}, got {sessions}")
    first = shape.first_turn_tokens()
    if first > shape.context_cap_tokens:
        raise ValueError(
            f"a session's first turn needs {first:,} tokens (shared prefix {shape.shared_prefix_tokens:,}, its own context "
            f"{shape.session_context_tokens:,}, an answer {shape.answer_tokens:,}), more than the context cap of {shape.context_cap_tokens:,}"
        )
    planned = []
    for index in range(sessions):
        rng = random.Random(f"{seed}:agent-session:{index}")
        turns, context = [], first
        for _ in range(shape.turns):  # at most bounds.TURNS, which the shape's validator holds
            tool, arguments = _call(rng, index)
            output = rng.randint(*shape.tool_output_tokens)
            delay = round(rng.uniform(*shape.tool_delay_s), 3)
            turns.append(PlannedTurn(tool=tool, arguments=json.dumps(arguments), output_tokens=output, delay_s=delay))
            context += output + shape.answer_tokens
            if context > shape.context_cap_tokens:
                break  # the next turn would not fit: the session ends with this call
        planned.append(PlannedSession(index=index, turns=tuple(turns)))
    return tuple(planned)

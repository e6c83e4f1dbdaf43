"""Agent sessions planned from a seed (issue 57): reproducible, within the stated shape, ended
before their context passes its cap, and a shape that cannot fit refused with its numbers."""

from __future__ import annotations

import json

import pytest

from arena_agents.sessions import TOOLS, plan_sessions
from arena_core import AgentShape
from arena_core.testing.fake_server import ASKED_CALL

SHAPE = AgentShape(
    agents=4,
    turns=12,
    shared_prefix_tokens=2000,
    session_context_tokens=3000,
    tool_output_tokens=(200, 1500),
    tool_delay_s=(0.5, 3.0),
    answer_tokens=100,
    context_cap_tokens=16384,
)


def test_a_seed_is_one_plan_and_sessions_differ():
    plan = plan_sessions(SHAPE, 6, seed=7)
    assert plan == plan_sessions(SHAPE, 6, seed=7) and plan != plan_sessions(SHAPE, 6, seed=8)
    assert len({session.turns for session in plan}) == 6
    assert plan_sessions(SHAPE, 3, seed=7) == plan[:3]  # a session does not depend on how many there are


def test_every_turn_is_within_the_shape_and_asks_for_a_call_the_rig_reads():
    names = {tool["function"]["name"] for tool in TOOLS}
    for session in plan_sessions(SHAPE, 8, seed=1):
        for turn in session.turns:
            assert turn.tool in names and isinstance(json.loads(turn.arguments), dict)
            assert 200 <= turn.output_tokens <= 1500 and 0.5 <= turn.delay_s <= 3.0
            asked = ASKED_CALL.search(f"The tests failed.\n{turn.asked()}")
            assert asked and (asked.group(1), asked.group(2)) == (turn.tool, turn.arguments)


def test_a_session_ends_before_its_context_passes_the_cap():
    plan = plan_sessions(SHAPE, 20, seed=3)
    assert {len(s.turns) for s in plan} != {12}  # this cap ends some sessions early
    for session in plan:
        reached = session.context_tokens(SHAPE)
        assert reached <= SHAPE.context_cap_tokens
        if len(session.turns) < SHAPE.turns:  # ended by the cap: one more turn would not have fit
            assert reached + session.turns[-1].output_tokens + SHAPE.answer_tokens > SHAPE.context_cap_tokens


def test_a_shape_that_cannot_fit_is_refused_with_its_numbers():
    small = AgentShape(**{**_fields(SHAPE), "context_cap_tokens": 4096})
    with pytest.raises(
        ValueError, match=r"first turn needs 5,100 tokens \(shared prefix 2,000, its own context 3,000, an answer 100\), more than the context cap of 4,096"
    ):
        plan_sessions(small, 1, seed=0)
    with pytest.raises(ValueError, match="tool_output_tokens: least 900 is more than most 200"):
        AgentShape(**{**_fields(SHAPE), "tool_output_tokens": (900, 200)})
    with pytest.raises(ValueError, match="tool_delay_s"):
        AgentShape(**{**_fields(SHAPE), "tool_delay_s": (-1.0, 2.0)})
    with pytest.raises(ValueError, match="sessions must be"):
        plan_sessions(SHAPE, 0, seed=0)


def _fields(shape: AgentShape) -> dict:
    import attrs

    return attrs.asdict(shape, recurse=False)

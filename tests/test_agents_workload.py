"""The ``agents`` workload (issue 57): coding-agent sessions on the rig, whose answers and cache
the test knows, and on the real embedded server, which cannot call tools."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import attrs
import pytest

from arena_core import AgentShape, ConfigError, make_plugin_manager
from arena_core.config import WorkloadOverride, apply_override
from arena_core.hooks import ArenaHooks
from arena_core.testing import arena, rig_run_argv
from arena_core.testing.fake_server import FakeServerProcess

TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"
#: A small shape for the tests: four agents of up to six turns (two of three on the real server).
SMALL = "[workloads.agents]\nagents = {agents}\nturns = {turns}\n"


def _agents():
    return ArenaHooks(make_plugin_manager(autoload=False, strict=True)).registry.get("workloads", "agents")


def test_the_shape_scales_its_lengths_and_keeps_agents_turns_and_delays():
    shape = _agents().shape
    small = shape.scaled(0.02)
    assert (small.agents, small.turns, small.tool_delay_s) == (shape.agents, shape.turns, shape.tool_delay_s)
    assert (small.shared_prefix_tokens, small.session_context_tokens, small.tool_output_tokens, small.context_cap_tokens) == (80, 120, (16, 40), 655)
    conversation = shape.as_closed_loop()  # what a budget and a predictor see
    assert conversation.concurrency == 8 and conversation.depth == 10_000 and conversation.generated_tokens == 150 and conversation.runs == 1
    assert 1 <= conversation.turns <= shape.turns and conversation.context_needed() <= shape.context_needed()


def test_a_config_sets_agents_and_refuses_what_is_not_an_agents_field():
    agents = _agents()
    changed = apply_override(agents, WorkloadOverride(agents=2, turns=3))
    assert (changed.shape.agents, changed.shape.turns, changed.custom) == (2, 3, "turns=3, agents=2")
    with pytest.raises(ConfigError, match=r"does not apply to agent-session workload 'agents'"):
        apply_override(agents, WorkloadOverride(request_rate=2.0))
    with pytest.raises(ValueError, match="tool_output_tokens: least 900 is more than most 200"):
        attrs.evolve(agents.shape, tool_output_tokens=(900, 200))
    assert isinstance(changed.shape, AgentShape)


def _rig_agents(tmp_path: Path, *rig_args: str, agents: int = 4, turns: int = 6) -> tuple[dict, str]:
    (tmp_path / "arena.toml").write_text(SMALL.format(agents=agents, turns=turns))
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "0", "--prefix-cache", *rig_args]) as rig:
        argv = rig_run_argv(rig.url, tmp_path / "store", tokenizer=TOKENIZER, workloads="agents", scale="0.02")
        done = arena(*argv[3:], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = Path(re.search(r"results: (\S+)", done.stdout).group(1))
    run_dir = run_dir if run_dir.is_absolute() else tmp_path / run_dir
    result = json.loads((run_dir / "workloads" / "agents" / "result.json").read_text())
    card = arena("card", run_dir.name, "--output", str(tmp_path / "store"), env={**os.environ, "COLUMNS": "80"})
    assert card.returncode == 0 and max(map(len, card.stdout.splitlines())) <= 80, card.stdout
    return result, card.stdout


@pytest.mark.slow
def test_on_the_rig_accuracy_parse_failures_and_the_cache_are_the_ones_it_was_told(tmp_path):
    result, card = _rig_agents(tmp_path, "--tool-answers", "correct,correct,wrong,malformed")
    metrics = result["metrics"]
    assert result["verdict"]["valid"], result["verdict"]
    answered = int(metrics["tool_calls_answered"])
    assert answered == result["requests"] and 4 <= answered <= 24  # some sessions end at the cap
    # the rig answers in turn, whichever agent asks: the shares of the cycle over that many answers, exactly
    assert metrics["tool_call_accuracy"] == sum(i % 4 in (0, 1) for i in range(answered)) / answered
    assert metrics["tool_call_parse_failure_rate"] == sum(i % 4 == 3 for i in range(answered)) / answered
    assert metrics["tool_calls_as_text_rate"] == metrics["tool_calls_missing_rate"] == 0
    # the rig's cache holds each earlier prompt: every turn after the first finds the one before it
    assert metrics["prompt_cache_hit_rate_intended"] <= metrics["prompt_cache_hit_rate"] <= metrics["prompt_cache_hit_rate_intended_most"]
    assert metrics["turn_1_requests"] == 4 and metrics["turn_2_cache_hit_rate"] > metrics["turn_1_cache_hit_rate"]
    assert metrics["turn_3_context_tokens"] > metrics["turn_2_context_tokens"] > metrics["turn_1_context_tokens"]
    assert metrics["turn_2_prefilled_tokens"] < metrics["turn_2_context_tokens"] / 2  # only the new tool output and its ask
    assert metrics["sessions"] == 4 and metrics["session_seconds_p50"] >= 0.5  # each waited for its tools
    assert re.search(r"tool calls: \d+\.\d% right \(\d+ of \d+ answers\); \d+\.\d% did not parse · 4 sessions", " ".join(card.split()))
    assert re.search(r"turn +answered +TTFT p50 +context +prefilled +cached +latency p50", card)
    assert re.search(r"^ +1 +4 ", card, re.MULTILINE)


@pytest.mark.slow
def test_a_server_that_writes_its_calls_as_text_is_said_so_never_scored_right(tmp_path):
    result, card = _rig_agents(tmp_path, "--tool-answers", "text", agents=2, turns=2)
    metrics = result["metrics"]
    assert metrics["tool_calls_as_text_rate"] == 1.0 and metrics["tool_call_accuracy"] == 0.0
    assert "100.0% written as text (the server's tool parser is off)" in " ".join(card.split())


@pytest.mark.slow
def test_the_embedded_server_runs_agents_and_the_card_says_its_calls_did_not_parse(tmp_path):
    """Gemma 3 270M answers in text, not tool calls: measured as what it did, never an accuracy it
    did not earn. Its llama.cpp keeps each session's prompt in its slot: turns after the first
    find it there."""
    (tmp_path / "arena.toml").write_text(SMALL.format(agents=2, turns=3))
    done = arena("run", "--workloads", "agents", "--scale", "0.02", "--no-quality", "--output", str(tmp_path / "store"), cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir,) = [p for p in (tmp_path / "store").iterdir() if (p / "manifest.json").is_file()]
    result = json.loads((run_dir / "workloads" / "agents" / "result.json").read_text())
    metrics = result["metrics"]
    assert result["verdict"]["valid"], result["verdict"]
    assert metrics["tool_calls_answered"] == result["requests"] == 6 and metrics["tool_call_accuracy"] < 1
    assert metrics["turn_2_cache_hit_rate"] > 0.5 and metrics["turn_1_cache_hit_rate"] < 0.5
    card = arena("card", run_dir.name, "--output", str(tmp_path / "store"), env={**os.environ, "COLUMNS": "80"}).stdout
    said = " ".join(card.split())
    assert re.search(r"tool calls: \d+\.\d% right \(\d of 6 answers\)", said) and ("made no call" in said or "written as text" in said)


@pytest.mark.slow
def test_a_server_that_refuses_tools_is_one_line_quoting_it_and_the_run_goes_on(tmp_path):
    (tmp_path / "arena.toml").write_text(SMALL.format(agents=2, turns=3))
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--refuse-tools"]) as rig:
        argv = rig_run_argv(rig.url, tmp_path / "store", tokenizer=TOKENIZER, workloads="agents,chat", scale="0.02")
        done = arena(*argv[3:], cwd=tmp_path)
        sent = [entry for entry in rig.stop() if entry.get("path") == "/v1/chat/completions" and "tools" in entry.get("body_keys", ())]
    assert done.returncode == 4, done.stderr[-2000:]  # a result is invalid; the other was measured
    assert len(sent) == 2  # each agent's first turn, then its session stopped
    (run_dir,) = [p for p in (tmp_path / "store").iterdir() if (p / "manifest.json").is_file()]
    agents = json.loads((run_dir / "workloads" / "agents" / "result.json").read_text())
    (reason,) = agents["verdict"]["reasons"]
    assert reason.startswith("the server refused every request offering tools") and "--enable-auto-tool-choice" in reason and "\n" not in reason
    assert json.loads((run_dir / "workloads" / "chat" / "result.json").read_text())["verdict"]["valid"]


@pytest.mark.slow
def test_a_session_shape_the_servers_context_cannot_hold_is_refused_before_a_request(tmp_path):
    (tmp_path / "arena.toml").write_text(SMALL.format(agents=2, turns=3))
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--tool-answers", "correct", "--max-model-len", "300"]) as rig:
        argv = rig_run_argv(rig.url, tmp_path / "store", tokenizer=TOKENIZER, workloads="agents", scale="0.02")
        done = arena(*argv[3:], cwd=tmp_path)
        sent = [entry for entry in rig.stop() if entry.get("path") == "/v1/chat/completions" and "tools" in entry.get("body_keys", ())]
    assert done.returncode == 2 and not sent
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("arena: error:")]
    assert line == (
        "arena: error: workload 'agents': a session's first turn needs 216 tokens (shared prefix 80, its own context 120, an answer 16),"
        " more than the context cap of 108 (the server's max_model_len: 300 tokens, less 192 for the chat template)"
    )


#: A rig with 4 slots whose tool calls stream a fragment every 100 ms (about half a second an
#: answer): an agent with a slot sees its first chunk after the 10 ms prefill, a fifth waits for
#: a slot, most often most of an answer. With no tool delay every agent is always asking, so
#: queueing arithmetic gives a capacity of exactly 4 agents under a 300 ms TTFT limit.
AGENT_SLOTS_RIG = [
    "--tokenizer",
    str(TOKENIZER / "tokenizer.json"),
    "--tool-answers",
    "correct",
    "--slots",
    "4",
    "--prefill-base-ms",
    "10",
    "--decode-gap-ms",
    "100",
]


@pytest.mark.slow
def test_capacity_over_agents_finds_the_rigs_slots_in_as_many_probes_as_users(tmp_path):
    (tmp_path / "arena.toml").write_text("[workloads.agents]\nturns = 6\ntool_delay_s = [0, 0]\n")
    with FakeServerProcess(AGENT_SLOTS_RIG) as rig:
        argv = ["capacity", "--agents", "--base-url", rig.url, "--tokenizer", str(TOKENIZER), "--scale", "0.02", "--slo", "ttft=300ms,tps=none"]
        done = arena(*argv, "--limit", "16", "--output", str(tmp_path / "store"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Capacity: 4 agents (TTFT ≤ 0.3 s for 95% of requests), fails at 5; 6 probes" in done.stdout
    # the users search of the same rig's slots takes these six probes too (test_capacity.py)
    assert re.findall(r"probe (\d+) agents?: .*: (pass|fail)", done.stderr) == [
        ("1", "pass"),
        ("2", "pass"),
        ("4", "pass"),
        ("8", "fail"),
        ("6", "fail"),
        ("5", "fail"),
    ]
    run_id = re.search(r"arena card (\S+)\)", done.stdout).group(1)
    card = arena("card", run_id, "--output", str(tmp_path / "store"))
    assert "Capacity: 4 agents (TTFT ≤ 0.3 s for 95% of requests, fails at 5)" in card.stdout
    board = json.loads(arena("leaderboard", "--include-scaled", "--json", "--output", str(tmp_path / "store")).stdout)
    assert [(row["capacity"], row["agents_at_slo"]) for row in board] == [(None, "4 agents (ttft=300ms,tps=none)")]
    refused = arena("capacity", "--agents", "--workload", "chat", "--base-url", rig.url, "--output", str(tmp_path / "store"))
    assert (
        refused.returncode == 2
        and "--workload chat is a closed-loop workload: search it over users (--load users), or name an agents workload" in refused.stderr
    )


@pytest.mark.slow
def test_quality_under_load_is_asked_alone_and_at_the_capacity_with_the_difference(tmp_path):
    from test_tool_calling_quality import _canonical

    from arena_quality.tool_calling import items

    known = tmp_path / "known-calls.json"
    known.write_text(json.dumps({item.question: {"name": name, "arguments": arguments} for item in items() for ((name, arguments),) in [_canonical(item)]}))
    (tmp_path / "arena.toml").write_text("[workloads.agents]\nturns = 6\ntool_delay_s = [0, 0]\n")
    with FakeServerProcess([*AGENT_SLOTS_RIG, "--known-calls", str(known)]) as rig:
        argv = ["capacity", "--agents", "--base-url", rig.url, "--tokenizer", str(TOKENIZER), "--scale", "0.02", "--slo", "ttft=300ms,tps=none"]
        done = arena(*argv, "--limit", "4", "--quality-suite", "tool-calls", "--output", str(tmp_path / "store"), cwd=tmp_path)
        asked = [e for e in rig.stop() if e.get("path") == "/v1/chat/completions" and not e.get("stream") and "tools" in e.get("body_keys", ())]
    assert done.returncode == 0, done.stderr[-3000:]
    assert "quality: tool-calls under load (4 at once)" in done.stderr
    assert len(asked) == 50  # the 25 items, one at a time and then 4 at once
    apart = [(b["received_ns"] - a["received_ns"]) / 1e6 for a, b in zip(asked, asked[1:])]
    # one at a time, each waits for the answer before it (a fragment every 100 ms); four at once
    # take about a quarter of that time in all
    assert min(apart[:24]) > 100 and sum(apart[25:]) < sum(apart[:24]) / 2, apart
    (manifest,) = (tmp_path / "store").glob("*/manifest.json")
    recorded = json.loads(manifest.read_text())
    (alone,), (loaded,) = recorded["measured_quality"], recorded["quality_under_load"]
    assert recorded["quality_load"] == 4 and alone["items"] == loaded["items"] == 25
    card = arena("card", manifest.parent.name, "--output", str(tmp_path / "store"), env={**os.environ, "COLUMNS": "120"}).stdout
    difference = loaded["value"] - alone["value"]
    row = re.search(
        r"BFCL +(\d+\.\d) \[\S+\] +(\d+\.\d) \[\S+\] +([+-]\d+\.\d) \[[+-]\d+\.\d, [+-]\d+\.\d\] +(not told apart|worse under load|better under load)", card
    )
    assert row, card
    assert (float(row.group(1)), float(row.group(2)), float(row.group(3))) == (round(alone["value"], 1), round(loaded["value"], 1), round(difference, 1))
    assert re.search(r"quality under load +1 at once +4 at once +difference, 95 %", card)

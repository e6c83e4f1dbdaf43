"""The prefix cache's part in every result: measured per request, stated beside what the
workload intends, and a result invalid when the two are more than 5 points apart."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import attrs
import pytest

from arena_core.loadgen.cache_state import cache_metrics, cache_problem, intended_cached_tokens
from arena_core.loadgen.chat import record_from
from arena_core.loadgen.http import Exchange
from arena_core.loadgen.stream import ChatStreamSink
from arena_core.testing import arena, rig_run_argv
from arena_core.testing.fake_server import FakeServerProcess
from arena_core.types import RequestRecord

TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"


def record(
    prompt: int, cached: int | None, *, turn: int = 0, request: int = 0, phase: str = "standard", completion: int = 10, expected: int | None = None
) -> RequestRecord:
    return RequestRecord(
        workload="w",
        run_index=1,
        request_index=request,
        turn_index=turn,
        phase=phase,
        sent_ns=0,
        http_status=200,
        prompt_tokens_server=prompt,
        completion_tokens_server=completion,
        cached_prompt_tokens_server=cached,
        expected_prompt_tokens=expected,
    )


def test_a_conversation_intends_its_history_and_an_inference_phase_its_context():
    turns = [record(100, 1, turn=0), record(210, 110, turn=1), record(320, 0, turn=2)]
    phased = [record(500, 0, phase="context", request=1, expected=480), record(530, 490, phase="inference", request=1)]
    # a turn intends the previous prompt at least, and its answer at most
    assert intended_cached_tokens(turns + phased) == [(0, 0), (100, 110), (210, 220), (0, 0), (480, 480)]
    metrics = cache_metrics(turns + phased)
    assert metrics["prompt_cache_hit_rate"] == pytest.approx(601 / 1660)
    assert metrics["prompt_cache_hit_rate_intended"] == pytest.approx(790 / 1660)
    assert metrics["prompt_cache_hit_rate_intended_most"] == pytest.approx(810 / 1660)
    # the third turn found nothing of its history: 11.4 points short of what was intended
    assert "took 36.2% of the prompt tokens from its cache where the workload intends 47.6%–48.8%" in cache_problem(metrics)
    # found all of it, answers included (an engine that keeps what it generated): as intended
    kept = [record(100, 1, turn=0), record(210, 110, turn=1), record(320, 220, turn=2)]
    assert cache_problem(cache_metrics(kept)) == ""


def test_the_templates_opening_is_set_aside_and_nothing_more():
    fresh = [record(60, 4, request=i) for i in range(10)]  # a 4-token shared template opening, 6.7 %
    metrics = cache_metrics(fresh, template_tokens=5)
    assert metrics["prompt_cache_hit_rate"] == pytest.approx(4 / 60) and metrics["prompt_cache_template_rate"] == pytest.approx(4 / 60)
    assert cache_problem(metrics) == ""
    assert cache_problem(cache_metrics(fresh, template_tokens=1)) == ""  # 5.0 points left over: at the limit
    unexplained = cache_problem(cache_metrics(fresh, template_tokens=0))  # 6.7 points: over it
    assert "took 6.7% of the prompt tokens from its cache where the workload intends 0.0%: " in unexplained
    # prompts sent again: the whole prompt from the cache, only the template's share set aside
    repeated = [record(60, 60, request=i) for i in range(10)]
    assert "took 100.0% of the prompt tokens from its cache where the workload intends 0.0% (and the chat template's opening explains 8.3%)" in cache_problem(
        cache_metrics(repeated, template_tokens=5)
    )


def test_a_server_that_says_nothing_of_its_cache_leaves_no_figure():
    assert cache_metrics([record(60, None)]) == {} and cache_problem({}) == ""


def sink_record(events: list[dict], request_bytes: int = 400) -> RequestRecord:
    sink = ChatStreamSink()
    sink.request_bytes = request_bytes
    sink.on_head(0, 200, {"content-type": "text/event-stream"})
    for t, event in enumerate([{"choices": [{"delta": {"content": "a"}}]}, *events], start=1):
        sink.on_body(t, f"data: {json.dumps(event)}\n\n".encode())
    return record_from(Exchange(sent_ns=0, head_ns=0, end_ns=9, status=200), sink, workload="w", run_index=1, request_index=0, max_tokens=8)


def test_cached_tokens_are_read_from_usage_or_llama_cpps_timings_and_bounded():
    usage = {"prompt_tokens": 50, "completion_tokens": 1}
    assert sink_record([{"choices": [], "usage": {**usage, "prompt_tokens_details": {"cached_tokens": 12}}}]).cached_prompt_tokens_server == 12
    assert sink_record([{"choices": [], "usage": usage, "timings": {"cache_n": 7, "prompt_n": 43}}]).cached_prompt_tokens_server == 7
    assert sink_record([{"choices": [], "usage": usage}]).cached_prompt_tokens_server is None
    # more cached than the prompt holds cannot be true: dropped, and the record says why
    lying = sink_record([{"choices": [], "usage": {**usage, "prompt_tokens_details": {"cached_tokens": 51}}}])
    assert lying.cached_prompt_tokens_server is None and "51 cached prompt tokens of 50 prompt tokens" in lying.usage_rejected
    assert sink_record([{"choices": [], "usage": {**usage, "prompt_tokens_details": {"cached_tokens": "9"}}}]).cached_prompt_tokens_server is None


def run_on_rig(tmp_path: Path, *rig_args: str) -> tuple[int, dict[str, dict], str]:
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), *rig_args]) as rig:
        argv = rig_run_argv(rig.url, tmp_path / "store", tokenizer=TOKENIZER, workloads="chat,monday-peak", scale="0.02")
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    (run_dir,) = [p for p in (tmp_path / "store").iterdir() if (p / "manifest.json").is_file()]
    results = {p.parent.name: json.loads(p.read_text()) for p in (run_dir / "workloads").glob("*/result.json")}
    card = arena("card", run_dir.name, "--output", str(tmp_path / "store"), "--wide")
    return done.returncode, results, card.stdout


@pytest.mark.slow
def test_the_rig_reports_cached_tokens_and_a_wrong_rate_is_invalid(tmp_path):
    # half of every second prompt "from the cache": about 25 % where none is intended
    code, results, card = run_on_rig(tmp_path / "hit", "--cached-share", "0.5", "--cached-every", "2")
    assert code != 0
    for name in ("chat", "monday-peak"):
        metrics, verdict = results[name]["metrics"], results[name]["verdict"]
        assert 0.15 < metrics["prompt_cache_hit_rate"] < 0.35 and metrics["prompt_cache_hit_rate_intended"] == 0
        assert not verdict["valid"] and any("from its cache where the workload intends 0.0%" in r for r in verdict["reasons"]), verdict
    assert "prompt cache: " in card and "of prompt tokens (intended 0.0%" in card
    # a server whose cache is not touched: valid, and the card says so
    code, results, card = run_on_rig(tmp_path / "cold", "--cached-share", "0")
    assert code == 0 and all(r["metrics"]["prompt_cache_hit_rate"] == 0 and r["verdict"]["valid"] for r in results.values())
    assert "prompt cache: 0.0% of prompt tokens (intended 0.0%)" in card
    # a server that says nothing: the card says that, never a guess
    code, results, card = run_on_rig(tmp_path / "silent")
    assert code == 0 and "prompt cache: not recorded (the server did not say" in card


def test_cache_states_are_judged_by_what_each_state_found_in_the_cache():
    from arena_core import ClosedLoopShape
    from arena_runners.cache_states import cache_states_result

    shape = ClosedLoopShape(prompt_tokens=64, depth=2048, generated_tokens=16, concurrency=1, runs=1)
    states = [("cold", 2120, 0), ("uncached", 2120, 1), ("prefix", 2120, 2060)]
    records = [
        RequestRecord(
            workload="w",
            run_index=1,
            request_index=i,
            phase=state,
            sent_ns=0,
            http_status=200,
            chunk_ns=(t,),
            chunk_kinds="c",
            prompt_tokens_server=prompt,
            completion_tokens_server=1,
            cached_prompt_tokens_server=cached,
        )  # fmt: skip
        for i, ((state, prompt, cached), t) in enumerate(zip(states, (3 * 10**9, 3 * 10**9, 2 * 10**8)))
    ]
    result = cache_states_result(records, shape, "w", cleared="llama.cpp")
    assert result.verdict.valid and result.metrics["ttft_prefix_p50_s"] == 0.2 and result.metrics["prompt_cache_hit_rate_prefix"] == 2060 / 2120
    # the "prefix hit" that found nothing in the cache: invalid, whatever its TTFT
    missed = [*records[:2], attrs.evolve(records[2], cached_prompt_tokens_server=0)]
    assert not cache_states_result(missed, shape, "w", cleared="llama.cpp").verdict.valid
    # an answer without text has no TTFT, and no crash; a server that cannot empty its cache has no cold figure
    silent = [attrs.evolve(r, chunk_ns=(), chunk_kinds="") for r in records[1:]]
    result = cache_states_result(silent, shape, "w", cleared="")
    assert result.metrics["ttft_uncached_p50_s"] is None and result.metrics["ttft_cold_p50_s"] is None
    assert "cold: not measured (the server offers no way to empty its cache)" in result.verdict.labels


def test_two_workloads_with_one_seed_draw_their_prompts_from_different_offsets():
    """With one seed for all, rag-8k's prompts began where long-context-25k's did, and a vLLM that
    kept its prefix cache between them found a 128-token block of each (measured on vLLM 0.32)."""
    import asyncio

    from arena_core.loadgen import ApproximateCodec, PromptBuilder

    async def firsts(stream: str, length: int) -> list[str]:
        codec = ApproximateCodec(4.0)
        ids = await codec.encode("".join(f"word{i} " for i in range(20_000)))
        builder = PromptBuilder(ids, codec, 42, stream=stream)
        return [(await builder.build(length))[1][:40] for _ in range(5)]

    rag, long_context = asyncio.run(firsts("rag-8k", 160)), asyncio.run(firsts("long-context-25k", 537))
    assert not set(rag) & set(long_context)
    assert asyncio.run(firsts("rag-8k", 160)) == rag  # each workload's prompts are still reproducible


def test_the_intended_cache_rate_is_counted_in_the_server_s_whole_blocks():
    """vLLM finds a prefix 128 tokens at a time on its CPU build: a second turn whose first turn
    was 300 tokens intends 256 of them there, 300 on a server that caches token by token."""
    from arena_core.loadgen.cache_state import cache_metrics, cache_problem
    from arena_core.types import RequestRecord

    def record(turn: int, prompt: int, cached: int) -> RequestRecord:
        return RequestRecord(
            workload="multi-turn", http_status=200, sent_ns=0, first_byte_ns=1, end_ns=2, run_index=1, request_index=0, turn_index=turn,
            prompt_tokens_server=prompt, completion_tokens_server=0, cached_prompt_tokens_server=cached,
        )  # fmt: skip

    turns = [record(0, 300, 0), record(1, 600, 256)]
    blocked = cache_metrics(turns, block=128)
    assert blocked["prompt_cache_hit_rate_intended"] == 256 / 900 and blocked["prompt_cache_block_tokens"] == 128
    assert cache_problem(blocked) == ""
    assert cache_metrics(turns)["prompt_cache_hit_rate_intended"] == 300 / 900

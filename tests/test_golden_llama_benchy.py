"""Golden parity: Arena's llama-benchy metrics equal llama-benchy 0.4.0's own result code.

Synthetic request timelines (covering runners.md C.4) are turned into llama-benchy's
``RequestResult`` objects by llama-benchy's own stream-finalising code, fed to its
``BenchmarkResults.add``, and compared field by field with :func:`llama_benchy_entry` on the
same records, to 1e-9 relative.
"""

from __future__ import annotations

import math
import random

import pytest
from compare import assert_same

from arena_core.loadgen.closed_metrics import llama_benchy_entry, sliding_peak, token_timeline
from arena_core.types import RequestRecord

llama_benchy_client = pytest.importorskip("llama_benchy.client")
llama_benchy_results = pytest.importorskip("llama_benchy.results")

NS = 1_000_000_000


class WordTokenizer:
    """Stands in for a local tokenizer: one token per whitespace-separated word."""

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [0] * len(text.split())


def synthetic_record(rng: random.Random, scenario: str, run: int, index: int, base_s: float) -> RequestRecord:
    """One request's timeline in the given scenario; times in ns on a shared origin."""
    start = base_s + rng.uniform(0, 0.01)
    role = start + rng.uniform(0.001, 0.02) if scenario == "role-early" else None
    first = start + rng.uniform(0.02, 0.3)
    gap = rng.choice([0.0005, 0.004, 0.012, 0.05])  # spans below and above one second
    chunks = 1 if scenario == "one-chunk" else rng.randint(2, 60)
    k = rng.randint(2, 4) if scenario in ("bundles-ids", "bundles-usage") else 1
    times = [first + i * gap * k * rng.uniform(0.8, 1.2) for i in range(chunks)]
    times = sorted(times)
    with_ids = scenario in ("ids", "bundles-ids", "one-chunk", "role-early")
    usage_completion = chunks * k if scenario not in ("no-usage",) else None
    if scenario == "usage-only":
        times, usage_completion = [], rng.randint(1, 40)
    kinds = "".join(rng.choice("cccR") if scenario == "reasoning" else "c" for _ in times)
    error = ""
    status = 200
    if scenario == "failed" and index % 2 == 0:
        error, status = "HTTP 500: injected", 500
    prompt_usage = rng.choice([None, 512, 515, 700])
    return RequestRecord(
        workload="golden",
        run_index=run,
        request_index=index,
        sent_ns=round(start * NS),
        first_response_ns=round((role if role is not None else (times[0] if times else first)) * NS),
        chunk_ns=tuple(round(t * NS) for t in times),
        chunk_tokens=tuple((k if with_ids else None) for _ in times),
        chunk_kinds=kinds,
        end_ns=round(((times[-1] if times else first) + 0.002) * NS),
        prompt_tokens_server=prompt_usage,
        completion_tokens_server=usage_completion,
        http_status=status,
        error=error,
        content=" ".join(["word"] * (chunks * k)),
        completion_tokens_client=chunks * k if scenario == "no-usage" else None,
    )


def as_llama_benchy(record: RequestRecord):
    """llama-benchy's RequestResult for a record, finalised by llama-benchy's own code."""
    result = llama_benchy_client.RequestResult()
    result.start_ts = record.sent_ns / NS
    if record.error:
        result.error = record.error
        return result
    result.first_response_ts = record.first_response_ns / NS if record.first_response_ns else None
    result.prompt_tokens = record.prompt_tokens_server or 0
    chunks = []
    for t, n, kind in zip(record.chunk_ns, record.chunk_tokens, record.chunk_kinds):
        if kind in "cRr":
            chunks.append({"text": "word " * (n or 1), "timestamp": t / NS, "token_ids": [0] * n if n is not None else None})
    if chunks:
        result.first_token_ts = chunks[0]["timestamp"]
    client = llama_benchy_client.LLMClient("http://unused", "EMPTY", "m")
    client._finalize_stream_tokens(result, chunks, record.completion_tokens_server, WordTokenizer())
    result.end_ts = record.end_ns / NS
    return result


SCENARIOS = ["ids", "bundles-ids", "bundles-usage", "usage-only", "no-usage", "role-early", "one-chunk", "failed", "reasoning"]


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("concurrency", [1, 4])
@pytest.mark.parametrize("latency", [0.0, 0.015])
def test_entry_equals_llama_benchy(scenario, concurrency, latency):
    rng = random.Random(f"{scenario}-{concurrency}-{latency}")
    runs = [[synthetic_record(rng, scenario, run, i, base_s=100.0 + run * 5) for i in range(concurrency)] for run in range(3)]
    expected_pp = 512
    theirs = llama_benchy_results.BenchmarkResults()
    theirs.add("m", 512, 64, 0, concurrency, [[as_llama_benchy(r) for r in run] for run in runs], latency, expected_pp)
    ours = llama_benchy_entry(
        runs, concurrency=concurrency, latency_s=latency, expected_prompt_tokens=expected_pp, prompt_size=512, response_size=64, context_size=0
    )
    theirs_entry = theirs.runs[0].model_dump()
    assert set(ours) == set(theirs_entry)
    assert_same(ours, theirs_entry)


def test_context_phase_entry_equals_llama_benchy():
    rng = random.Random(7)
    runs = [[synthetic_record(rng, "ids", run, i, base_s=10.0 + run) for i in range(3)] for run in range(2)]
    theirs = llama_benchy_results.BenchmarkResults()
    theirs.add("m", 128, 32, 1024, 3, [[as_llama_benchy(r) for r in run] for run in runs], 0.0, 1024, is_context_phase=True)
    ours = llama_benchy_entry(
        runs, concurrency=3, latency_s=0.0, expected_prompt_tokens=1024, prompt_size=128, response_size=32, context_size=1024, context_phase=True
    )
    theirs_entry = theirs.runs[0].model_dump()
    assert set(ours) == set(theirs_entry)
    assert_same(ours, theirs_entry)


def test_sliding_peak_equals_llama_benchy():
    rng = random.Random(3)
    reference = llama_benchy_results.BenchmarkResults()
    for _ in range(200):
        times = sorted(rng.uniform(0, rng.choice([0.3, 0.99, 1.0, 2.5, 7])) for _ in range(rng.randint(1, 80)))
        assert math.isclose(sliding_peak(times), reference._calculate_peak_throughput(list(times)), rel_tol=1e-12)


def test_documented_example_two_requests():
    # runners.md A.8: p = 100 each, first tokens at 0.2 s and 0.3 s, L = 0.05.
    def record(first_s, second_token_s, index):
        return RequestRecord(
            workload="w",
            run_index=0,
            request_index=index,
            sent_ns=1 * NS,
            first_response_ns=round((1 + first_s) * NS),
            chunk_ns=(round((1 + first_s) * NS), round((1 + second_token_s) * NS)),
            chunk_tokens=(1, 1),
            chunk_kinds="cc",
            end_ns=round((1 + second_token_s) * NS),
            prompt_tokens_server=100,
            http_status=200,
        )

    entry = llama_benchy_entry(
        [[record(0.2, 0.3, 0), record(0.3, 0.35, 1)]],
        concurrency=2,
        latency_s=0.05,
        expected_prompt_tokens=100,
        prompt_size=100,
        response_size=2,
        context_size=0,
    )
    assert entry["pp_throughput"]["values"] == [pytest.approx(200 / 0.3)]
    assert entry["pp_req_throughput"]["values"] == [pytest.approx(100 / 0.15), pytest.approx(100 / 0.25)]
    assert entry["est_ppt"]["values"] == [pytest.approx(150), pytest.approx(250)]
    assert entry["tg_throughput"]["values"] == [pytest.approx(2 / 0.15)]
    assert entry["tg_req_throughput"]["values"] == [pytest.approx(10), pytest.approx(20)]


def test_token_timeline_sources():
    base = dict(workload="w", run_index=0, request_index=0, sent_ns=0, http_status=200, chunk_kinds="cc")
    ids = RequestRecord(chunk_ns=(10, 20), chunk_tokens=(1, 3), **base)
    assert token_timeline(ids).source == "token_ids" and token_timeline(ids).count == 4
    usage = RequestRecord(chunk_ns=(10, 20), chunk_tokens=(None, None), completion_tokens_server=5, **base)
    assert token_timeline(usage).source == "usage" and len(token_timeline(usage).times) == 5
    local = RequestRecord(chunk_ns=(10, 20), chunk_tokens=(None, None), completion_tokens_client=3, **base)
    assert token_timeline(local).source == "client-count" and token_timeline(local).count == 3
    chunks = RequestRecord(chunk_ns=(10, 20), chunk_tokens=(None, None), **base)
    assert token_timeline(chunks).source == "chunks" and token_timeline(chunks).count == 2


def test_first_answer_token_is_reported_when_reasoning_streams_first():
    from arena_core import ClosedLoopShape
    from arena_core.loadgen import ClosedLoopPlan, SessionFacts, closed_loop_result, llama_benchy_report

    def record(index, kinds):
        times = tuple((1 + 0.1 * (i + 1)) * NS for i in range(len(kinds)))
        return RequestRecord(
            workload="think",
            run_index=1,
            request_index=index,
            sent_ns=1 * NS,
            first_response_ns=int(times[0]),
            chunk_ns=tuple(int(t) for t in times),
            chunk_tokens=(1,) * len(kinds),
            chunk_kinds=kinds,
            end_ns=int(times[-1]),
            http_status=200,
            completion_tokens_server=len(kinds),
            expected_prompt_tokens=10,
        )

    records = [record(0, "rrrcc"), record(1, "RRccc")]
    plan = ClosedLoopPlan(workload="think", model="m", shape=ClosedLoopShape(prompt_tokens=10, generated_tokens=5, concurrency=2, runs=1))
    facts = SessionFacts(latency_s=0.0, delta_user=0, delta_context=0, coherence="skipped")
    result = closed_loop_result(records, plan, facts, llama_benchy_report(records, plan, facts, "m"), runner="llama-benchy", instrument="native")
    assert result.ttft_p50_s == pytest.approx(0.1)  # reasoning counts as a token for llama-benchy
    assert result.metrics["first_answer_token_p50_s"] == pytest.approx(0.35)  # 0.4 and 0.3

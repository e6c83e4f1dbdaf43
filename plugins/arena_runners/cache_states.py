"""The ``cache-states`` runner: one prompt shape's time to first token in three cache states.

A prefix-cache hit turns a long prefill into almost none, so one TTFT says little without its
cache state. Each round sends, one request at a time (nothing else in flight):

1. **cold**: the server's prompt cache emptied first, where the engine offers a way (llama.cpp:
   ``POST /slots/N?action=erase`` for every slot; vLLM: ``POST /reset_prefix_cache``, in its
   development mode), then a prompt never sent before;
2. **uncached**: another prompt never sent before, with the cache warm from the first (only the
   chat template's opening can be found in it);
3. **prefix hit**: the second request's context (a system message of ``depth`` tokens) again,
   with a new question of ``prompt_tokens`` after it: everything but the question can come from
   the cache.

Each record says what the server took from its cache, so the three states are measured, not
assumed: a result whose prefix requests found much less than their prefix is invalid, as is
one whose fresh prompts found much more than the template's opening. Where the cache cannot be
emptied, "cold" is not measured and the result says so.
"""

from __future__ import annotations

import asyncio

import arena_core as arena

NAME = "cache-states"
STATES = ("cold", "uncached", "prefix")
#: The most slots erased one by one (a llama.cpp server has a few; more is not a real answer).
MAX_SLOTS = 64
#: The longest one call to empty the cache may take.
CALL_DEADLINE_S = 10.0


async def clear_cache(client: arena.ChatClient) -> str:
    """Empty the server's prompt cache where its engine offers a way; how it was done, or "" when
    it cannot be (an engine without the endpoint, vLLM outside its development mode). Each call
    waits at most :data:`CALL_DEADLINE_S` and the first erase that fails ends the attempt."""
    status, slots, _ = await client.call("GET", "/slots", deadline_s=CALL_DEADLINE_S)
    if status == 200 and isinstance(slots, list):
        ids = [s["id"] for s in slots[:MAX_SLOTS] if isinstance(s, dict) and type(s.get("id")) is int and 0 <= s["id"] < MAX_SLOTS]
        for slot in ids:
            if (await client.call("POST", f"/slots/{slot}?action=erase", {}, deadline_s=CALL_DEADLINE_S))[0] != 200:
                break
        else:
            if ids:
                return "llama.cpp: POST /slots/N?action=erase for each slot"
    status, _, _ = await client.call("POST", "/reset_prefix_cache", None, deadline_s=CALL_DEADLINE_S)
    return "vLLM: POST /reset_prefix_cache" if status == 200 else ""


def _shape(workload: arena.WorkloadSpec) -> arena.ClosedLoopShape:
    shape = workload.shape
    if not isinstance(shape, arena.ClosedLoopShape) or shape.depth <= 0:
        raise arena.UsageError(f"workload {workload.name!r}: the {NAME} runner needs a closed-loop shape with a context (depth) to share")
    return shape


class NativeInstrument:
    """Arena's own: there is no reference tool for cache states."""

    def run(self, workload: arena.WorkloadSpec, context: arena.RunContext) -> arena.WorkloadResult:
        return arena.run_measurement(self._run(workload, context))

    async def _run(self, workload: arena.WorkloadSpec, context: arena.RunContext) -> arena.WorkloadResult:
        shape = _shape(workload)
        corpus = arena.load_corpus(context.options.corpus, max(8 * (shape.prompt_tokens + shape.depth), 20_000) * 5)
        client = arena.ChatClient(context.endpoint, request_timeout=context.options.request_timeout_s)
        writer = arena.RecordWriter(context.path("records.jsonl"))
        records: list[arena.RequestRecord] = []
        try:
            codec = await arena.choose_codec(client, context.options.tokenizer, corpus.text)
            prompts = arena.PromptBuilder(await codec.encode(corpus.text), codec, workload.seed, stream=workload.name)
            cleared = await clear_cache(client)
            status, page = await client.call_text("/metrics", deadline_s=arena.METRICS_DEADLINE_S, max_bytes=arena.METRICS_MAX_BYTES)
            block = arena.cache_block_tokens(page) if status == 200 else 1

            async def send(state: str, round_index: int, messages: list[dict[str, str]]) -> None:
                body = {
                    "model": context.endpoint.model,
                    "messages": messages,
                    "max_tokens": shape.generated_tokens,
                    "stream": True,
                    "stream_options": {"include_usage": True},
                }
                exchange, sink = await client.stream(client.prepare(body))
                record = arena.record_from(
                    exchange,
                    sink,
                    workload=workload.name,
                    run_index=round_index,
                    request_index=STATES.index(state),
                    phase=state,
                    expected_prompt_tokens=shape.depth + shape.prompt_tokens,
                    max_tokens=shape.generated_tokens,
                )
                records.append(record)
                writer.append([record])
                ttft = _ttft(record)
                said = f"TTFT {ttft:.3f} s" if ttft is not None else "no text streamed" if record.ok else record.error[:120]
                context.progress(f"{workload.name}: round {round_index}/{shape.runs}, {state}: {said}")

            for round_index in range(1, shape.runs + 1):
                # a round whose cache could not be emptied has no cold request (never one called cold that was not)
                if cleared and await clear_cache(client):
                    cold_context, cold_prompt = await prompts.build(shape.prompt_tokens, shape.depth)
                    await send("cold", round_index, arena.chat_messages(cold_context, cold_prompt))
                shared, first = await prompts.build(shape.prompt_tokens, shape.depth)
                await send("uncached", round_index, arena.chat_messages(shared, first))
                _, second = await prompts.build(shape.prompt_tokens, 0)
                await send("prefix", round_index, arena.chat_messages(shared, second))
                await asyncio.sleep(0)
        finally:
            await client.close()
        context.write_json(
            "session.json",
            {"tokenizer": codec.description, "corpus": corpus.source, "instrument": "native", "cache_cleared_by": cleared, "cache_block_tokens": block},
        )
        return cache_states_result(records, shape, workload.name, cleared=cleared, block=block)


def _ttft(record: arena.RequestRecord) -> float | None:
    first = arena.first_token_s(record)
    return first - record.sent_ns / 1e9 if first is not None else None


def cache_states_result(
    records: list[arena.RequestRecord], shape: arena.ClosedLoopShape, workload: str, *, cleared: str, block: int = 1
) -> arena.WorkloadResult:
    """The three TTFTs (medians), what each state took from the cache, and the verdict. A prefix
    hit intends its context, in whole blocks of ``block`` tokens where the server caches so
    (vLLM: :func:`arena_core.cache_block_tokens`)."""
    ok = [r for r in records if r.ok]
    metrics: dict[str, float | None] = {}
    for state in STATES:
        ttfts = [t for r in ok if r.phase == state and (t := _ttft(r)) is not None]
        metrics[f"ttft_{state}_p50_s"] = arena.median(ttfts) if ttfts else None
        told = [r for r in ok if r.phase == state and r.cached_prompt_tokens_server is not None and r.prompt_tokens_server]
        if told:
            metrics[f"prompt_cache_hit_rate_{state}"] = sum(r.cached_prompt_tokens_server or 0 for r in told) / sum(r.prompt_tokens_server or 0 for r in told)
    told = [r for r in ok if r.cached_prompt_tokens_server is not None and r.prompt_tokens_server]
    text = shape.depth + shape.prompt_tokens
    # the template's share of each request: what the server counts beyond the text Arena sent
    template = [min(r.cached_prompt_tokens_server or 0, max(0, (r.prompt_tokens_server or 0) - text)) for r in told]
    prefix = [shape.depth if r.phase == "prefix" else 0 for r in told]
    metrics.update(
        arena.cache_rates(
            prompt=sum(r.prompt_tokens_server or 0 for r in told),
            cached=sum(r.cached_prompt_tokens_server or 0 for r in told),
            intended=sum(p // block * block for p in prefix),
            intended_most=sum((p + t) // block * block if p else 0 for p, t in zip(prefix, template)),
            template=sum(t for p, t in zip(prefix, template) if not p),
            requests=len(told),
        )
    )
    if block > 1:
        metrics["prompt_cache_block_tokens"] = float(block)
    reasons = (
        [f"{len(records) - len(ok)} of {len(records)} requests failed (first: {next(r.error for r in records if not r.ok)[:120]})"]
        if len(ok) < len(records)
        else []
    )
    if problem := arena.cache_problem(metrics):
        reasons.append(problem)
    if not told and ok:
        reasons.append("the server did not say what it took from its cache: the states cannot be told apart")
    labels = [] if cleared else ["cold: not measured (the server offers no way to empty its cache)"]
    return arena.WorkloadResult(
        workload=workload,
        runner=NAME,
        instrument="native",
        requests=len(records),
        failed=len(records) - len(ok),
        tokens_per_second=None,
        ttft_p50_s=metrics.get("ttft_uncached_p50_s"),
        metrics=metrics,
        verdict=arena.Verdict(valid=not reasons, reasons=tuple(reasons), labels=tuple(labels)),
    )


SPEC = arena.RunnerSpec(
    name=NAME,
    description="One prompt shape's TTFT cold (cache emptied), warm but uncached, and with its context a prefix hit",
    loop="closed",
    instruments=("native",),
    create=lambda instrument: NativeInstrument(),
)

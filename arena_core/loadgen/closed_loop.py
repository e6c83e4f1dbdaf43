"""The closed-loop driver: llama-benchy 0.4.0's session and test semantics (runners.md A.3-A.6).

A session probes the chat template (prompt adaptation), optionally checks coherence, measures
the latency to subtract, then runs one test: an unmeasured warmup run and ``runs`` measured runs,
each of ``concurrency`` simultaneous requests. Depth is prior context in a system message; with
prefix caching a run has a context-load phase and an inference phase. Beyond llama-benchy, a
test may be a conversation of several turns in which each answer joins the history.

Every prompt is built and every single-turn request encoded before the first measured request.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from attrs import field, frozen

from arena_core.loadgen.cache_state import METRICS_DEADLINE_S, METRICS_MAX_BYTES, cache_block_tokens
from arena_core.loadgen.chat import ChatClient, ServerRefused, record_from
from arena_core.loadgen.codec import Codec
from arena_core.loadgen.plausible import template_tokens_problem
from arena_core.loadgen.prompts import CONTEXT_PROBE, PromptBuilder, chat_messages
from arena_core.loadgen.until_precise import margin_text, precise_enough
from arena_core.types import ClosedLoopShape, RequestRecord

WARMUP_TEXT = "Warmup " * 10
COHERENCE_PROMPT = "What is the capital of France? Please reply with one word only"


@frozen(kw_only=True)
class ClosedLoopPlan:
    """One closed-loop test: the workload's ``shape`` and the session switches of llama-benchy."""

    workload: str
    model: str
    shape: ClosedLoopShape
    warmup: bool = True
    prefix_caching: bool = False
    no_cache: bool = False
    exact_output: bool = False
    adapt_prompt: bool = True
    check_coherence: bool = False
    seed: int = 42
    extra_body: Mapping[str, Any] = field(factory=dict)


@frozen(kw_only=True)
class SessionFacts:
    """What the session measured before the test: subtracted latency, template deltas, coherence."""

    latency_s: float
    delta_user: int
    delta_context: int
    coherence: str
    #: the tokens the server caches at once (vLLM's block; 1: token by token or not stated)
    cache_block: int = 1


Progress = Callable[[str], None]


@contextmanager
def paused_gc() -> Iterator[None]:
    """No garbage-collection pause inside a measured run: a full collection can stall the loop
    for milliseconds and delay every timestamp behind it. Collected between runs instead."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
        gc.collect()


SKIPPED_TURN = "not sent: an earlier turn of this conversation failed"


class ClosedLoopDriver:
    def __init__(
        self,
        client: ChatClient,
        plan: ClosedLoopPlan,
        prompts: PromptBuilder,
        codec: Codec,
        on_run: Callable[[list[RequestRecord]], Awaitable[list[RequestRecord]]],
        progress: Progress | None = None,
    ) -> None:
        self.client = client
        self.plan = plan
        self.prompts = prompts
        self.codec = codec
        self.on_run = on_run
        self.progress = progress or (lambda line: None)
        self.on_request: Callable[[int, int, int], None] | None = None
        #: Told, synchronously, about the requests of a run that finished before Ctrl-C stopped it.
        self.on_interrupt: Callable[[list[RequestRecord]], None] | None = None
        self._in_run: list[RequestRecord] = []
        self._done = self._tokens = 0
        self._measuring_since = 0.0
        self._total = (plan.shape.runs + plan.warmup) * plan.shape.concurrency * plan.shape.turns * (2 if plan.prefix_caching and plan.shape.depth > 0 else 1)

    # --- session phases --------------------------------------------------------------------

    async def _probe_usage(self, messages: list[dict[str, str]]) -> int | None:
        answer = await self.client.call_ok("POST", "/v1/chat/completions", {"model": self.plan.model, "messages": messages, "max_tokens": 1})
        usage = answer.get("usage") if isinstance(answer, dict) else None
        return usage.get("prompt_tokens") if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int) else None

    async def template_deltas(self) -> tuple[int, int]:
        """Tokens the chat template adds around a user message, and around a system message."""
        local = len(await self.codec.encode(WARMUP_TEXT))
        server_user = await self._probe_usage([{"role": "user", "content": WARMUP_TEXT}])
        delta_user = server_user - local if server_user is not None else 0
        server_context = await self._probe_usage([{"role": "system", "content": WARMUP_TEXT}, {"role": "user", "content": CONTEXT_PROBE}])
        probe = len(await self.codec.encode(CONTEXT_PROBE))
        delta_context = server_context - local - probe if server_context is not None else delta_user
        if problem := template_tokens_problem(delta_user, "a user message") or template_tokens_problem(delta_context, "a system message"):
            raise ServerRefused(f"{self.client.endpoint.base_url}: {problem}")
        return delta_user, delta_context

    async def coherence(self) -> str:
        status, answer, exchange = await self.client.call(
            "POST", "/v1/chat/completions", {"model": self.plan.model, "messages": [{"role": "user", "content": COHERENCE_PROMPT}], "max_tokens": 100}
        )
        message: dict[str, Any] = {}
        if isinstance(answer, dict) and answer.get("choices"):
            message = answer["choices"][0].get("message") or {}
        text = (message.get("content") or "") + (message.get("reasoning") or message.get("reasoning_content") or "")
        if "paris" in text.lower():
            return "passed"
        return f"failed: expected 'Paris', got {text[:80]!r}" if not exchange.error else f"failed: {exchange.error}"

    async def latency(self) -> float:
        """llama-benchy's latency: mean of 3 samples; ``api`` reads /v1/models whole,
        ``generation`` waits for the first line of a 1-token stream; ``none`` is 0."""
        mode = self.plan.shape.latency_mode
        if mode == "none":
            return 0.0
        samples = []
        for _ in range(3):
            if mode == "api":
                _, _, exchange = await self.client.call("GET", "/v1/models")
                if not exchange.error and exchange.end_ns:
                    samples.append((exchange.end_ns - exchange.sent_ns) / 1e9)
            else:
                body = {"model": self.plan.model, "messages": [{"role": "user", "content": "hello"}], "max_tokens": 1, "stream": True}
                exchange, sink = await self.client.stream(self.client.prepare(body))
                if not exchange.error and sink.first_byte_ns is not None:
                    samples.append((sink.first_byte_ns - exchange.sent_ns) / 1e9)
        return sum(samples) / len(samples) if samples else 0.0

    async def session(self) -> SessionFacts:
        plan = self.plan
        delta_user = delta_context = 0
        if plan.adapt_prompt or plan.warmup:
            delta_user, delta_context = await self.template_deltas()
        coherence = await self.coherence() if plan.check_coherence else "skipped"
        latency = await self.latency()
        status, page = await self.client.call_text("/metrics", deadline_s=METRICS_DEADLINE_S, max_bytes=METRICS_MAX_BYTES)
        cache_block = cache_block_tokens(page) if status == 200 else 1
        self.progress(
            f"{plan.workload}: latency {latency * 1000:.2f} ms ({plan.shape.latency_mode}), "
            f"template adds {delta_user} / {delta_context} tokens, coherence {coherence}"
            + (f", the server caches whole blocks of {cache_block} tokens" if cache_block > 1 else "")
        )
        return SessionFacts(latency_s=latency, delta_user=delta_user, delta_context=delta_context, coherence=coherence, cache_block=cache_block)

    # --- the test --------------------------------------------------------------------------

    def body(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """llama-benchy's streamed request body, in its field order (A.6)."""
        plan = self.plan
        body: dict[str, Any] = {
            "model": plan.model,
            "messages": messages,
            "max_tokens": plan.shape.generated_tokens,
            "stream": True,
            "return_token_ids": True,
            "stream_options": {"include_usage": True},
        }
        if plan.no_cache:
            body["cache_prompt"] = False
        body.update(plan.extra_body)
        if plan.exact_output:
            body["max_tokens"] = body["min_tokens"] = plan.shape.generated_tokens
            body["ignore_eos"] = True
        return body

    async def run(self) -> tuple[SessionFacts, list[RequestRecord]]:
        try:
            return await self._run()
        except (asyncio.CancelledError, KeyboardInterrupt):
            if self.on_interrupt is not None and self._in_run:
                self.on_interrupt(list(self._in_run))  # every finished request is kept
            raise

    async def _run(self) -> tuple[SessionFacts, list[RequestRecord]]:
        facts = await self.session()
        plan = self.plan
        prompt, depth = plan.shape.prompt_tokens, plan.shape.depth
        if plan.adapt_prompt:
            if depth == 0:
                prompt = max(1, prompt - facts.delta_user)
            else:
                depth = max(1, depth - facts.delta_context)
        all_runs = [0] * plan.warmup + list(range(1, plan.shape.runs + 1))
        if plan.shape.turns > 1:
            records = await self._conversations(all_runs, prompt)
        else:
            records = await self._single_turn(all_runs, prompt, depth)
        return facts, records

    async def _send(self, request: bytes, **labels: Any) -> RequestRecord:
        exchange, sink = await self.client.stream(request)
        record = record_from(exchange, sink, workload=self.plan.workload, max_tokens=self.plan.shape.generated_tokens, **labels)
        self._in_run.append(record)
        if self.on_request is not None:
            self._done += 1
            self._tokens += record.completion_tokens_server or len(record.chunk_ns)
            self.on_request(self._done, self._total, self._tokens)
        return record

    async def _single_turn(self, all_runs: Sequence[int], prompt: int, depth: int) -> list[RequestRecord]:
        plan = self.plan
        phased = plan.prefix_caching and plan.shape.depth > 0
        prepared: list[list[tuple[str, int, bytes]]] = []  # per run: (phase, expected tokens, request)
        for _ in all_runs:
            pairs = [await self.prompts.build(prompt, depth, plan.no_cache) for _ in range(plan.shape.concurrency)]
            if phased:
                batch = [("context", depth, self.client.prepare(self.body(chat_messages(c, CONTEXT_PROBE)))) for c, _ in pairs]
                batch += [("inference", prompt, self.client.prepare(self.body(chat_messages(c, p)))) for c, p in pairs]
            else:
                batch = [("standard", prompt + depth, self.client.prepare(self.body(chat_messages(c, p)))) for c, p in pairs]
            prepared.append(batch)
        await self.client.http.warm(plan.shape.concurrency)
        records: list[RequestRecord] = []
        for run_index, batch in zip(all_runs, prepared):
            if self._time_is_up(run_index, records):
                break
            started = time.perf_counter()
            run_records: list[RequestRecord] = []
            for phase in ("context", "inference") if phased else ("standard",):
                phase_batch = [(expected, request) for name, expected, request in batch if name == phase]
                sends = [
                    self._send(request, run_index=run_index, request_index=i, phase=phase, warmup=run_index == 0, expected_prompt_tokens=expected)
                    for i, (expected, request) in enumerate(phase_batch)
                ]
                with paused_gc():
                    run_records += await asyncio.gather(*sends)
            records += await self._finish_run(run_index, run_records, time.perf_counter() - started)
        return records

    async def _conversations(self, all_runs: Sequence[int], prompt: int) -> list[RequestRecord]:
        plan = self.plan
        user_turns = [
            [[(await self.prompts.build(prompt, 0, plan.no_cache))[1] for _ in range(plan.shape.turns)] for _ in range(plan.shape.concurrency)]
            for _ in all_runs
        ]
        await self.client.http.warm(plan.shape.concurrency)
        records: list[RequestRecord] = []
        for run_index, conversations in zip(all_runs, user_turns):
            if self._time_is_up(run_index, records):
                break
            started = time.perf_counter()
            with paused_gc():
                results = await asyncio.gather(*(self._conversation(run_index, i, turns, prompt) for i, turns in enumerate(conversations)))
            run_records = [record for conversation in results for record in conversation]
            records += await self._finish_run(run_index, run_records, time.perf_counter() - started)
        return records

    async def _conversation(self, run_index: int, index: int, user_texts: list[str], prompt: int) -> list[RequestRecord]:
        history: list[dict[str, str]] = []
        records: list[RequestRecord] = []
        answered = 0
        for turn, text in enumerate(user_texts):
            labels = dict(run_index=run_index, request_index=index, turn_index=turn, warmup=run_index == 0)
            expected = prompt * (turn + 1) + answered
            if records and not records[-1].ok:
                records.append(
                    RequestRecord(
                        workload=self.plan.workload,
                        sent_ns=time.perf_counter_ns(),
                        error=SKIPPED_TURN,
                        expected_prompt_tokens=expected,
                        max_tokens=self.plan.shape.generated_tokens,
                        **labels,
                    )
                )
                continue
            history.append({"role": "user", "content": text})
            record = await self._send(self.client.prepare(self.body(list(history))), expected_prompt_tokens=expected, **labels)
            records.append(record)
            history.append({"role": "assistant", "content": record.content})
            answered += record.completion_tokens_server or self.plan.shape.generated_tokens
        return records

    def _time_is_up(self, run_index: int, records: Sequence[RequestRecord]) -> bool:
        """Whether a test should start no more measured runs, once it has its fewest: its
        headline figures are within the asked precision, or its stated duration has passed
        (counted from the first measured run)."""
        shape = self.plan.shape
        if run_index == 1:
            self._measuring_since = time.perf_counter()
        if run_index <= shape.min_runs:
            return False
        if shape.precision is not None:
            enough, margins = precise_enough(records, shape.precision)
            if enough:
                self.progress(f"{self.plan.workload}: within {margin_text(shape.precision)} after {run_index - 1} runs: {margins}")
                return True
        if shape.duration_s is None or time.perf_counter() - self._measuring_since < shape.duration_s:
            return False
        also = f", not yet within {margin_text(shape.precision)}: {precise_enough(records, shape.precision)[1]}" if shape.precision is not None else ""
        self.progress(f"{self.plan.workload}: {shape.duration_s:g} s have passed: {run_index - 1} of at most {shape.runs} runs measured{also}")
        return True

    async def _finish_run(self, run_index: int, records: list[RequestRecord], seconds: float) -> list[RequestRecord]:
        """Hand a finished run to ``on_run`` (which counts and stores it) between runs, when no
        request is in flight, and report progress."""
        self._in_run.clear()
        records = await self.on_run(records)
        failed = sum(not r.ok for r in records)
        label = "warmup run" if run_index == 0 else f"run {run_index}/{self.plan.shape.runs}"
        tokens = sum(r.completion_tokens_server or 0 for r in records)
        self.progress(f"{self.plan.workload}: {label}: {len(records)} requests, {tokens} tokens in {seconds:.1f} s" + (f", {failed} failed" if failed else ""))
        return records

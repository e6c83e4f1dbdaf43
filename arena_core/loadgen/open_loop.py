"""The open-loop driver: ``vllm bench serve`` 0.33's traffic (runners.md B.3-B.5, B.8).

Requests are due at the seeded gamma offsets and let go at those absolute times whatever the
server is doing; ``max_concurrency`` queues them client-side (that wait is recorded and, as in
vLLM, excluded from TTFT). Every request body is encoded before the first is due. Records go to
disk in batches written by a worker thread while the run goes on; in memory stay only the small
per-request values the metrics need, so a run of 100,000 requests fits in a small footprint.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs
from attrs import field, frozen

from arena_core.loadgen.chat import ChatClient, encode_json, record_from
from arena_core.loadgen.datasets import SampledRequest
from arena_core.loadgen.open_metrics import VllmOutput, vllm_output
from arena_core.loadgen.records_io import RecordWriter
from arena_core.loadgen.stream import ANSWER
from arena_core.types import OpenLoopShape, RequestRecord

FLUSH_EVERY = 256
WARM_CONNECTIONS = 16


@frozen(kw_only=True)
class OpenLoopPlan:
    """One open-loop test: the workload's ``shape``, its seed, and how requests ask for tokens."""

    workload: str
    model: str
    shape: OpenLoopShape
    seed: int = 0
    ignore_eos: bool = False
    extra_body: Mapping[str, Any] = field(factory=dict)


@frozen(kw_only=True)
class OpenLoopOutcome:
    """What the metrics need, kept small: one vLLM output, lateness and first answer per request."""

    outputs: tuple[VllmOutput, ...]
    lateness_s: tuple[float, ...]
    first_answer_s: tuple[float, ...]
    duration_s: float
    dispatch_span_s: float
    completion_tokens_server: int
    completion_tokens_client: int
    #: answered records that cannot be trusted (malformed events, no usage); empty when all is well
    suspicious: tuple[RequestRecord, ...] = ()


def chat_body(plan: OpenLoopPlan, request: SampledRequest) -> dict[str, Any]:
    """vLLM's openai-chat body: content as a list of text parts, ``max_completion_tokens``."""
    body: dict[str, Any] = {
        "model": plan.model,
        "messages": [{"role": "user", "content": [{"type": "text", "text": request.prompt}]}],
        "max_completion_tokens": request.expected_output_len,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if plan.ignore_eos:
        body["ignore_eos"] = True
    body.update(plan.extra_body)
    return body


class OpenLoopDriver:
    def __init__(self, client: ChatClient, plan: OpenLoopPlan, writer: RecordWriter, progress: Callable[[str], None] | None = None) -> None:
        self.client = client
        self.plan = plan
        self.writer = writer
        self.progress = progress or (lambda line: None)
        self._pending_lines: list[str] = []
        self._finished = 0
        self._tokens = 0
        self._total = 0
        self.on_request: Callable[[int, int, int], None] | None = None
        # One writer thread: batches reach the file in order, and the disk never blocks the loop.
        self._disk = ThreadPoolExecutor(max_workers=1, thread_name_prefix="arena-records")
        self._flushes: list[asyncio.Future[None]] = []

    async def run(self, requests: Sequence[SampledRequest], offsets: Sequence[float]) -> OpenLoopOutcome:
        plan = self.plan
        count = self._total = len(requests)
        prepared = [self.client.http.build_request("POST", "/v1/chat/completions", encode_json(chat_body(plan, r))) for r in requests]
        prompt_lens = [r.prompt_len for r in requests]
        asked = [r.expected_output_len for r in requests]
        await self.client.http.warm(min(count, plan.shape.max_concurrency or WARM_CONNECTIONS))
        outputs: list[VllmOutput | None] = [None] * count
        lateness: list[float] = [0.0] * count
        answers: list[float] = []
        counts = [0, 0]
        suspicious: list[RequestRecord] = []

        async def one(index: int, due_ns: int, dispatched_ns: int) -> None:
            request, prepared[index] = prepared[index], b""  # sent once; keep memory flat
            exchange, sink = await self.client.stream(request)
            record = record_from(
                exchange,
                sink,
                workload=plan.workload,
                run_index=1,
                request_index=index,
                scheduled_ns=due_ns,
                dispatched_ns=dispatched_ns,
                max_tokens=asked[index],
            )
            if record.chunk_tokens and all(n is not None for n in record.chunk_tokens):
                record = _with_client_count(record)
            outputs[index] = vllm_output(record, prompt_lens[index])
            lateness[index] = (dispatched_ns - due_ns) / 1e9
            if ANSWER in record.chunk_kinds and record.chunk_kinds[0] != ANSWER:
                answers.append((record.chunk_ns[record.chunk_kinds.index(ANSWER)] - record.sent_ns) / 1e9)
            counts[0] += record.completion_tokens_server or 0
            counts[1] += record.completion_tokens_client or 0
            if record.ok and (record.malformed_events or (record.chunk_ns and record.completion_tokens_server is None)):
                suspicious.append(record)
            self._keep(record)

        # With a concurrency cap, that many workers take due requests in arrival order (what
        # vLLM's semaphore does), so a long queue costs a tuple per request, not a task.
        queue: asyncio.Queue[tuple[int, int, int] | None] = asyncio.Queue()

        async def worker() -> None:
            while (item := await queue.get()) is not None:
                await one(*item)

        workers = [asyncio.ensure_future(worker()) for _ in range(plan.shape.max_concurrency or 0)]
        tasks = []
        gc_was_enabled = gc.isenabled()
        gc.disable()  # no collection pause while requests are in flight (see closed_loop.paused_gc)
        try:
            start_ns = last_dispatch = time.perf_counter_ns()
            for index, offset in enumerate(offsets):
                due_ns = start_ns + round(offset * 1e9)
                wait = (due_ns - time.perf_counter_ns()) / 1e9
                if wait > 0:
                    await asyncio.sleep(wait)
                last_dispatch = time.perf_counter_ns()
                if workers:
                    queue.put_nowait((index, due_ns, last_dispatch))
                else:
                    tasks.append(asyncio.ensure_future(one(index, due_ns, last_dispatch)))
            for _ in workers:
                queue.put_nowait(None)
            await asyncio.gather(*tasks, *workers)
            duration = (time.perf_counter_ns() - start_ns) / 1e9
        except (asyncio.CancelledError, KeyboardInterrupt):
            # Ctrl-C: the workers stop (the sentinels end one that is between requests), and what
            # finished is written now, in this thread, before the loop goes away.
            for worker_task in workers:
                worker_task.cancel()
                queue.put_nowait(None)
            self._disk.shutdown(wait=True)
            if self._pending_lines:
                self.writer.write_lines(self._pending_lines)
            raise
        finally:
            if gc_was_enabled:
                gc.enable()
        self._flush()
        await asyncio.gather(*self._flushes)
        self._disk.shutdown()
        return OpenLoopOutcome(
            outputs=tuple(o for o in outputs if o is not None),
            lateness_s=tuple(lateness),
            first_answer_s=tuple(answers),
            duration_s=duration,
            dispatch_span_s=(last_dispatch - start_ns) / 1e9,
            completion_tokens_server=counts[0],
            completion_tokens_client=counts[1],
            suspicious=tuple(suspicious),
        )

    def _keep(self, record: RequestRecord) -> None:
        self._pending_lines += self.writer.lines((record,))
        self._finished += 1
        if self.on_request is not None:
            self._tokens += record.completion_tokens_server or len(record.chunk_ns)
            self.on_request(self._finished, self._total, self._tokens)
        if len(self._pending_lines) >= FLUSH_EVERY:
            self._flush()
            self.progress(f"{self.plan.workload}: {self._finished} requests done")

    def _flush(self) -> None:
        if self._pending_lines:
            lines, self._pending_lines = self._pending_lines, []
            self._flushes = [f for f in self._flushes if not f.done()]
            self._flushes.append(asyncio.get_running_loop().run_in_executor(self._disk, self.writer.write_lines, lines))


def _with_client_count(record: RequestRecord) -> RequestRecord:
    """With token ids in every chunk, the client's own count is their sum."""
    return attrs.evolve(record, completion_tokens_client=sum(n or 0 for n in record.chunk_tokens))

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
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs
from attrs import field, frozen

from arena_core.loadgen.cache_state import cache_rates
from arena_core.loadgen.chat import ChatClient, encode_json, record_from
from arena_core.loadgen.datasets import SampledRequest
from arena_core.loadgen.goodput import share_kept_up
from arena_core.loadgen.open_metrics import VllmOutput, vllm_output
from arena_core.loadgen.records_io import RecordWriter
from arena_core.loadgen.stream import ANSWER
from arena_core.loadgen.until_precise import FEWEST_REQUESTS, margin_text, precise_enough
from arena_core.types import OpenLoopShape, RequestRecord

#: Finished records reach the disk (written and fsynced by a worker thread) in batches of this
#: many, or within this long after a request finishes, whichever comes first: a SIGKILL loses
#: at most the last quarter second of answers.
FLUSH_EVERY = 256
FLUSH_INTERVAL_S = 0.25
WARM_CONNECTIONS = 16
#: ``--precision``: the finished requests' figures are checked each time this many more finish.
PRECISION_CHECK_EVERY = 5
#: The metronome waits on an event until this close to a due time, then sleeps the rest.
COARSE_WAIT_MARGIN_S = 0.002
#: The schedule starts this long after the metronome is set up, so the first request is not late.
START_DELAY_NS = 1_000_000


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
    #: the prefix cache's part (:func:`~arena_core.loadgen.cache_state.cache_rates`); empty when
    #: no request said what it took from the cache
    cache: Mapping[str, float] = field(factory=dict)
    #: the share of the offered rate the server kept up with (:func:`~arena_core.loadgen.goodput.share_kept_up`)
    served_share: float | None = None


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


class Metronome:
    """Lets requests go at their due times, to well under a millisecond.

    The event loop's timers have a resolution of a millisecond (uvloop counts in whole ms, the
    selector's poll too), so a request due at 12.3 ms left at 13 ms or later. A thread sleeps
    instead (``time.sleep`` is a nanosleep, precise to tens of microseconds, and holds no GIL)
    and hands each due index to the loop with ``call_soon_threadsafe``, which wakes it at once.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        due_ns: Sequence[int],
        on_due: Callable[[int, int], None],
        *,
        clock_ns: Callable[[], int] = time.perf_counter_ns,
        sleep: Callable[[float], None] = time.sleep,
        wait: Callable[[float], bool] | None = None,
    ) -> None:
        """``clock_ns``, ``sleep`` and ``wait`` (seconds; True when stopped; the stop event's by
        default) are the real clock's unless a test hands in a virtual one."""
        self._loop, self._due_ns, self._on_due = loop, due_ns, on_due
        self._stop = threading.Event()
        self._clock_ns, self._sleep, self._wait = clock_ns, sleep, wait or self._stop.wait
        self._thread = threading.Thread(target=self._beat, name="arena-metronome", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _beat(self) -> None:
        for index, due in enumerate(self._due_ns):
            # Wait on the event until close (so stop() is heard), then sleep the rest precisely.
            while (remaining := (due - self._clock_ns()) / 1e9) > COARSE_WAIT_MARGIN_S:
                if self._wait(remaining - COARSE_WAIT_MARGIN_S):
                    return
            if remaining > 0:
                self._sleep(remaining)
            if self._stop.is_set():
                return
            try:
                self._loop.call_soon_threadsafe(self._on_due, index, due)
            except RuntimeError:  # the loop closed under us (interrupted)
                return


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
        self._flush_timer: asyncio.TimerHandle | None = None
        #: requests let go; with ``--precision``, the finished ones the rule reads, and whether it stopped the schedule
        self.dispatched = 0
        self._finished_records: list[RequestRecord] = []
        self._precise = False
        self._next_check = 0

    async def run(self, requests: Sequence[SampledRequest], offsets: Sequence[float]) -> OpenLoopOutcome:
        """Send every request at its offset from the start, whatever the server is doing."""
        plan = self.plan
        self._total = len(requests)
        self._prepared = [self.client.http.build_request("POST", "/v1/chat/completions", encode_json(chat_body(plan, r))) for r in requests]
        self._requests = requests
        self._outcome = _Tally(len(requests))
        await self.client.http.warm(min(len(requests), plan.shape.max_concurrency or WARM_CONNECTIONS))
        # With a concurrency cap, that many workers take due requests in arrival order (what
        # vLLM's semaphore does), so a long queue costs a tuple per request, not a task.
        self._queue: asyncio.Queue[tuple[int, int, int] | None] = asyncio.Queue()
        self._workers = [asyncio.ensure_future(self._worker()) for _ in range(plan.shape.max_concurrency or 0)]
        self._tasks: list[asyncio.Future[None]] = []
        gc_was_enabled = gc.isenabled()
        gc.disable()  # no collection pause while requests are in flight (see closed_loop.paused_gc)
        try:
            duration, start_ns = await self._dispatch_all(offsets)
        except (asyncio.CancelledError, KeyboardInterrupt):
            self._interrupted()
            raise
        finally:
            if gc_was_enabled:
                gc.enable()
        self._flush()
        await asyncio.gather(*self._flushes)
        self._disk.shutdown()
        if plan.shape.precision is not None and not self._precise:
            said = precise_enough(self._finished_records, plan.shape.precision, open_loop=True)[1]
            self.progress(f"{plan.workload}: all {self.dispatched} requests let go, not yet within {margin_text(plan.shape.precision)}: {said}")
        return self._outcome.outcome(duration, (self._last_dispatch - start_ns) / 1e9, self.dispatched)

    async def _dispatch_all(self, offsets: Sequence[float]) -> tuple[float, int]:
        """Let each request go when the metronome says it is due; wait for all to finish."""
        loop = asyncio.get_running_loop()
        all_sent = loop.create_future()
        start_ns = self._last_dispatch = time.perf_counter_ns() + START_DELAY_NS
        due = [start_ns + round(offset * 1e9) for offset in offsets]

        def on_due(index: int, due_ns: int) -> None:
            if self._precise:  # due after the figures became precise: not let go
                return
            self._last_dispatch = time.perf_counter_ns()
            self.dispatched += 1
            if self._workers:
                self._queue.put_nowait((index, due_ns, self._last_dispatch))
            else:
                self._tasks.append(loop.create_task(self._one(index, due_ns, self._last_dispatch)))
            if index == len(due) - 1 and not all_sent.done():
                all_sent.set_result(None)

        metronome = Metronome(loop, due, on_due)

        def stop_schedule() -> None:  # precise: no more requests let go, and the wait for the last one ends
            metronome.stop()
            if not all_sent.done():
                all_sent.set_result(None)

        self._stop_schedule = stop_schedule
        metronome.start()
        try:
            if due:
                await all_sent
            for _ in self._workers:
                self._queue.put_nowait(None)
            await asyncio.gather(*self._tasks, *self._workers)
        finally:
            metronome.stop()
        return (time.perf_counter_ns() - start_ns) / 1e9, start_ns

    async def _worker(self) -> None:
        while (item := await self._queue.get()) is not None:
            await self._one(*item)

    async def _one(self, index: int, due_ns: int, dispatched_ns: int) -> None:
        request, self._prepared[index] = self._prepared[index], b""  # sent once; keep memory flat
        exchange, sink = await self.client.stream(request)
        asked = self._requests[index].expected_output_len
        record = record_from(
            exchange, sink, workload=self.plan.workload, run_index=1, request_index=index, scheduled_ns=due_ns, dispatched_ns=dispatched_ns, max_tokens=asked
        )
        if record.chunk_tokens and all(n is not None for n in record.chunk_tokens):
            record = _with_client_count(record)
        self._outcome.add(index, record, self._requests[index].prompt_len, (dispatched_ns - due_ns) / 1e9)
        self._keep(record)

    def _interrupted(self) -> None:
        """Ctrl-C: the workers stop (the sentinels end one that is between requests), and what
        finished is written now, in this thread, before the loop goes away."""
        for worker_task in self._workers:
            worker_task.cancel()
            self._queue.put_nowait(None)
        if self._flush_timer is not None:
            self._flush_timer.cancel()
        self._disk.shutdown(wait=True)
        if self._pending_lines:
            self.writer.write_lines(self._pending_lines)

    def _keep(self, record: RequestRecord) -> None:
        self._pending_lines += self.writer.lines((record,))
        self._finished += 1
        if self.plan.shape.precision is not None:
            self._check_precision(record)
        if self.on_request is not None:
            self._tokens += record.completion_tokens_server or len(record.chunk_ns)
            self.on_request(self._finished, self._total, self._tokens)
        if len(self._pending_lines) >= FLUSH_EVERY:
            self._flush()
            self.progress(f"{self.plan.workload}: {self._finished} requests done")
        elif self._flush_timer is None:  # the rest go to disk within FLUSH_INTERVAL_S however quiet it gets
            self._flush_timer = asyncio.get_running_loop().call_later(FLUSH_INTERVAL_S, self._flush)

    def _check_precision(self, record: RequestRecord) -> None:
        """``--precision``: once the finished requests' headline figures are within the margin
        (checked from :data:`FEWEST_REQUESTS` on, each time 5 % more, at least
        :data:`PRECISION_CHECK_EVERY`, have finished: a check sorts them all, in the loop that
        lets requests go), no more are let go; those in flight finish and count."""
        self._finished_records.append(record)
        target = self.plan.shape.precision
        finished = len(self._finished_records)
        if self._precise or target is None or finished < max(FEWEST_REQUESTS, self._next_check):
            return
        self._next_check = max(finished + PRECISION_CHECK_EVERY, math.ceil(finished * 1.05))
        enough, said = precise_enough(self._finished_records, target, open_loop=True)
        if enough:
            self._precise = True
            self._stop_schedule()
            self.progress(f"{self.plan.workload}: within {margin_text(target)} after {finished} requests ({self.dispatched} let go): {said}")

    def _flush(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        if self._pending_lines:
            lines, self._pending_lines = self._pending_lines, []
            self._flushes = [f for f in self._flushes if not f.done()]
            self._flushes.append(asyncio.get_running_loop().run_in_executor(self._disk, self.writer.write_lines, lines))


class _Tally:
    """What the metrics need of each finished request, kept small (see :class:`OpenLoopOutcome`)."""

    def __init__(self, count: int) -> None:
        self.outputs: list[VllmOutput | None] = [None] * count
        self.lateness: list[float] = [0.0] * count
        self.answers: list[float] = []
        self.server_tokens = self.client_tokens = 0
        self.suspicious: list[RequestRecord] = []
        self.due_and_end: list[tuple[int, int]] = []
        # prompt tokens, those from the cache, those of them the template's opening explains, requests
        self.cache_sums = [0, 0, 0, 0]

    def add(self, index: int, record: RequestRecord, prompt_len: int, lateness_s: float) -> None:
        self.outputs[index] = vllm_output(record, prompt_len)
        self.lateness[index] = lateness_s
        if ANSWER in record.chunk_kinds and record.chunk_kinds[0] != ANSWER:
            self.answers.append((record.chunk_ns[record.chunk_kinds.index(ANSWER)] - record.sent_ns) / 1e9)
        if record.ok and record.scheduled_ns is not None and record.end_ns is not None:
            self.due_and_end.append((record.scheduled_ns, record.end_ns))
        self.server_tokens += record.completion_tokens_server or 0
        self.client_tokens += record.completion_tokens_client or 0
        cached, prompt = record.cached_prompt_tokens_server, record.prompt_tokens_server
        if record.ok and cached is not None and prompt:
            # none of an open-loop workload's prompt is meant to be reused: only the template's
            # opening (what the server counts beyond the prompt text) is set aside
            sums = self.cache_sums
            sums[0] += prompt
            sums[1] += cached
            sums[2] += min(cached, max(0, prompt - prompt_len))
            sums[3] += 1
        if record.ok and (record.malformed_events or record.usage_rejected or (record.chunk_ns and record.completion_tokens_server is None)):
            self.suspicious.append(record)

    def outcome(self, duration_s: float, dispatch_span_s: float, dispatched: int) -> OpenLoopOutcome:
        """The run's outcome; ``dispatched``: the requests let go (the first of the schedule)."""
        return OpenLoopOutcome(
            outputs=tuple(o for o in self.outputs if o is not None),
            lateness_s=tuple(self.lateness[:dispatched]),
            first_answer_s=tuple(self.answers),
            duration_s=duration_s,
            dispatch_span_s=dispatch_span_s,
            completion_tokens_server=self.server_tokens,
            completion_tokens_client=self.client_tokens,
            suspicious=tuple(self.suspicious),
            cache=cache_rates(prompt=self.cache_sums[0], cached=self.cache_sums[1], template=self.cache_sums[2], intended=0, requests=self.cache_sums[3]),
            served_share=share_kept_up(self.due_and_end),
        )


def outcome_from_records(
    records: Sequence[RequestRecord], prompt_lens: Sequence[int], *, duration_s: float, dispatch_span_s: float, dispatched: int
) -> OpenLoopOutcome:
    """The outcome a driver reached, again, from its stored records (in the order they finished)
    and what it kept beside them: each request's prompt length, the run's duration and dispatch
    span, the requests let go. The driver's own tally, fed the same records, so a stored result
    can be recomputed by the code that made it (``arena verify BUNDLE``)."""
    tally = _Tally(len(prompt_lens))
    for record in records:
        if not 0 <= record.request_index < len(prompt_lens) or record.scheduled_ns is None or record.dispatched_ns is None:
            raise ValueError(f"record {record.request_index} is not one of the {len(prompt_lens)} requests scheduled")
        tally.add(record.request_index, record, prompt_lens[record.request_index], (record.dispatched_ns - record.scheduled_ns) / 1e9)
    return tally.outcome(duration_s, dispatch_span_s, dispatched)


def _with_client_count(record: RequestRecord) -> RequestRecord:
    """With token ids in every chunk, the client's own count is their sum."""
    return attrs.evolve(record, completion_tokens_client=sum(n or 0 for n in record.chunk_tokens))

"""A tiny closed-loop runner: ``runs`` rounds of ``concurrency`` simultaneous chat requests.

Everything it uses comes from ``arena_core``'s public names: the streaming client and its
records, the record writer, the verdict, the statistics, and the run context that says where
to write. Arena's run session adds telemetry, the decode-ceiling check and the scale label.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from arena_core import (
    ChatClient,
    ClosedLoopShape,
    RecordWriter,
    RequestRecord,
    RunContext,
    RunnerSpec,
    UsageError,
    WorkloadResult,
    WorkloadSpec,
    hookimpl,
    median,
    record_from,
    run_measurement,
    verdict_for,
)

NAME = "tiny-closed-loop"


def decode_speed(record: RequestRecord) -> float | None:
    """Tokens per second after the first one, from the server's count and the arrival times."""
    if not record.ok or not record.chunk_ns or not record.completion_tokens_server or record.end_ns is None:
        return None
    span = (record.chunk_ns[-1] - record.chunk_ns[0]) / 1e9
    return (record.completion_tokens_server - 1) / span if span > 0 and record.completion_tokens_server > 1 else None


class TinyInstrument:
    def run(self, workload: WorkloadSpec, context: RunContext) -> WorkloadResult:
        if not isinstance(workload.shape, ClosedLoopShape):
            raise UsageError(f"workload {workload.name!r} is open-loop; {NAME} drives closed-loop workloads")
        return run_measurement(self._run(workload, workload.shape, context))

    async def _run(self, workload: WorkloadSpec, shape: ClosedLoopShape, context: RunContext) -> WorkloadResult:
        client = ChatClient(context.endpoint, request_timeout=context.options.request_timeout_s)
        writer = RecordWriter(context.path("records.jsonl"))
        prompt = " ".join(["word"] * shape.prompt_tokens)
        body = {
            "model": context.endpoint.model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": shape.generated_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        records: list[RequestRecord] = []
        try:
            for run_index in range(1, shape.runs + 1):
                exchanges = await asyncio.gather(*(client.stream(client.prepare(body)) for _ in range(shape.concurrency)))
                batch = [
                    record_from(exchange, sink, workload=workload.name, run_index=run_index, request_index=index, max_tokens=shape.generated_tokens)
                    for index, (exchange, sink) in enumerate(exchanges)
                ]
                writer.append(batch)
                records += batch
                context.say(f"{workload.name}: run {run_index}/{shape.runs} done")
        finally:
            await client.close()
        speeds = [s for r in records if (s := decode_speed(r)) is not None]
        ttfts = [(r.chunk_ns[0] - r.sent_ns) / 1e9 for r in records if r.ok and r.chunk_ns]
        return WorkloadResult(
            workload=workload.name,
            runner=NAME,
            instrument="native",
            requests=len(records),
            failed=sum(1 for r in records if not r.ok),
            tokens_per_second=sum(speeds) / len(speeds) if speeds else None,
            ttft_p50_s=median(ttfts) if ttfts else None,
            metrics={"output_tokens": float(sum(r.completion_tokens_server or 0 for r in records))},
            verdict=verdict_for(records, exact_output=False),
        )


TINY_CHAT = WorkloadSpec(
    name="tiny-chat",
    title="Tiny chat",
    description="Two rounds of four short chats at once, by the tiny runner.",
    runner=NAME,
    shape=ClosedLoopShape(prompt_tokens=32, generated_tokens=32, concurrency=4, runs=2),
)


@hookimpl
def arena_register_runners(register: Callable[[RunnerSpec], None]) -> None:
    register(
        RunnerSpec(
            name=NAME,
            description="A tiny closed-loop runner (an example plugin).",
            loop="closed",
            instruments=("native",),
            create=lambda instrument: TinyInstrument(),
        )
    )


@hookimpl
def arena_register_workloads(register: Callable[[WorkloadSpec], None]) -> None:
    register(TINY_CHAT)

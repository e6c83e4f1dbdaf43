"""``vllm bench serve`` 0.33's metrics (runners.md B.8-B.11) from request records.

:func:`vllm_output` reads one record the way vLLM's openai-chat request function reads a stream;
:func:`vllm_metrics` is vLLM's ``calculate_metrics`` over those outputs; :func:`vllm_result`
lays them out in the JSON that ``vllm bench serve --save-result`` writes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from attrs import frozen

from arena_core.loadgen.stream import VLLM_KINDS
from arena_core.types import RequestRecord

NEVER_A_TOKEN = "Never received a valid chunk to calculate TTFT.This response will be marked as failed!"
PERCENTILE_METRICS = ("ttft", "tpot", "itl", "e2el")


@frozen(kw_only=True)
class VllmOutput:
    """vLLM's ``RequestFuncOutput``: seconds; ``output_tokens`` from usage (0 when absent)."""

    success: bool
    start_time: float
    ttft: float = 0.0
    itl: tuple[float, ...] = ()
    latency: float = 0.0
    output_tokens: int = 0
    counted_tokens: int | None = None  # the client's own count, vLLM's fallback when usage is absent
    prompt_len: int = 0
    error: str = ""
    queue_time: float = 0.0
    generated_text: str = ""
    asked_tokens: int = 0  # not in vLLM: the length asked for, to spot short completions


def vllm_output(record: RequestRecord, prompt_len: int) -> VllmOutput:
    start = record.sent_ns / 1e9
    times = [t for t, kind in zip(record.chunk_ns, record.chunk_kinds) if kind in VLLM_KINDS]
    dispatched = record.dispatched_ns if record.dispatched_ns is not None else record.sent_ns
    queue = (record.sent_ns - dispatched) / 1e9  # vLLM's client queue: waiting for a concurrency slot
    if record.prompt_tokens_server is not None:
        prompt_len = record.prompt_tokens_server
    counted = record.completion_tokens_client
    if counted is None and record.completion_tokens_server is None:
        counted = len(times)  # without usage (absent, or not believed) vLLM counts the text: the token chunks are that count
    if not record.ok or not times:
        error = record.error or NEVER_A_TOKEN
        return VllmOutput(success=False, start_time=start, prompt_len=prompt_len, error=error, queue_time=queue)
    return VllmOutput(
        success=True,
        start_time=start,
        ttft=(times[0] - record.sent_ns) / 1e9,
        itl=tuple((b - a) / 1e9 for a, b in zip(times, times[1:])),
        latency=(times[-1] - record.sent_ns) / 1e9,
        output_tokens=record.completion_tokens_server or 0,
        counted_tokens=counted,
        prompt_len=prompt_len,
        queue_time=queue,
        generated_text=record.content,
        asked_tokens=record.max_tokens or 0,
    )


def _summary(values: list[float], percentiles: Sequence[float]) -> dict[str, Any]:
    data = values or 0  # vLLM summarises an empty list as [0]
    return {
        "mean": float(np.mean(data)) * 1000,
        "median": float(np.median(data)) * 1000,
        "std": float(np.std(data)) * 1000,
        "percentiles": [(p, float(np.percentile(data, p)) * 1000) for p in percentiles],
    }


def output_length(output: VllmOutput) -> int:
    """vLLM's output length of a request: usage's count, else the client's, else 1."""
    return output.output_tokens or output.counted_tokens or 1


def time_per_output_token(output: VllmOutput) -> float | None:
    """vLLM's TPOT of a request: its time after the first token over the tokens after it (None
    for an answer of one token)."""
    length = output_length(output)
    return (output.latency - output.ttft) / (length - 1) if output.success and length > 1 else None


def vllm_metrics(
    outputs: Sequence[VllmOutput], duration: float, percentiles: Sequence[float] = (50, 90, 95, 99), goodput: Mapping[str, float] | None = None
) -> dict[str, Any]:
    """vLLM's ``BenchmarkMetrics`` fields, and ``actual_output_lens``."""
    lens: list[int] = []
    ttfts: list[float] = []
    tpots: list[float] = []
    all_tpots: list[float] = []
    itls: list[float] = []
    e2els: list[float] = []
    total_input = completed = 0
    for output in outputs:
        if not output.success:
            lens.append(0)
            continue
        length = output_length(output)
        lens.append(length)
        total_input += output.prompt_len
        tpot = time_per_output_token(output)
        if tpot is not None:
            tpots.append(tpot)
        all_tpots.append(tpot or 0.0)
        itls += output.itl
        ttfts.append(output.ttft)
        e2els.append(output.latency)
        completed += 1
    good = 0
    if goodput:
        columns = [(values, goodput[name] / 1000) for name, values in (("ttft", ttfts), ("tpot", all_tpots), ("e2el", e2els)) if name in goodput]
        good = sum(all(limit >= value[i] for value, limit in columns) for i in range(completed))
    peak_tokens, peak_concurrency = _bucket_peaks([o for o in outputs if o.success])
    total_output = sum(lens)
    metrics: dict[str, Any] = {
        "completed": completed,
        "failed": len(outputs) - completed,
        "total_input": total_input,
        "total_output": total_output,
        "request_throughput": completed / duration,
        "request_goodput": good / duration,
        "output_throughput": total_output / duration,
        "total_token_throughput": (total_input + total_output) / duration,
    }
    for name, values in (("ttft", ttfts), ("tpot", tpots), ("itl", itls), ("e2el", e2els)):
        summary = _summary(values, percentiles)
        metrics[f"mean_{name}_ms"] = summary["mean"]
        metrics[f"median_{name}_ms"] = summary["median"]
        metrics[f"std_{name}_ms"] = summary["std"]
        metrics[f"percentiles_{name}_ms"] = summary["percentiles"]
    metrics.update(max_output_tokens_per_s=peak_tokens, max_concurrent_requests=peak_concurrency, rtfx=0.0, actual_output_lens=lens)
    return metrics


def _bucket_peaks(successes: Sequence[VllmOutput]) -> tuple[float, int]:
    """vLLM's peaks: token *chunks* per 1-s bucket from the earliest start, and requests touching
    each bucket (both overstate what a sliding window would show; kept for comparability)."""
    if not successes:
        return 0.0, 0
    start = min(o.start_time for o in successes)
    end = max(o.start_time + o.latency for o in successes)
    buckets = int(np.ceil(end - start)) + 1
    tokens = np.zeros(buckets)
    for output in successes:
        # cumsum adds one gap at a time, as vLLM's loop does, so the times are bit-identical
        times = np.cumsum(np.array((output.start_time + output.ttft, *output.itl)))
        index = (times - start).astype(np.int64)  # truncation toward zero, like int()
        index = index[(index >= 0) & (index < buckets)]
        tokens += np.bincount(index, minlength=buckets)[:buckets]
    return float(np.max(tokens)), peak_concurrency([(o.start_time, o.start_time + o.latency) for o in successes])


def peak_concurrency(spans: Sequence[tuple[float, float]]) -> int:
    """vLLM's ``max_concurrent_requests``: the most requests, each a (sent, finished) span in
    seconds, that touch one 1-s bucket counted from the earliest send (0 with none)."""
    if not spans:
        return 0
    start = min(sent for sent, _ in spans)
    buckets = int(np.ceil(max(end for _, end in spans) - start)) + 1
    active = np.zeros(buckets + 1)
    for sent, end in spans:
        active[int(sent - start)] += 1
        active[int(end - start) + 1] -= 1
    return int(np.max(np.cumsum(active)[:buckets]))


def percentile_key(p: float) -> str:
    return str(int(p)) if int(p) == p else str(p)


def vllm_result(
    outputs: Sequence[VllmOutput], metrics: Mapping[str, Any], *, header: Mapping[str, Any], duration: float, goodput: bool, detailed: bool = False
) -> dict[str, Any]:
    """The JSON ``vllm bench serve --save-result`` writes, keys in its order."""
    result: dict[str, Any] = dict(header)
    result.update(
        duration=duration,
        completed=metrics["completed"],
        failed=metrics["failed"],
        total_input_tokens=metrics["total_input"],
        total_output_tokens=metrics["total_output"],
        request_throughput=metrics["request_throughput"],
        request_goodput=metrics["request_goodput"] if goodput else None,
        output_throughput=metrics["output_throughput"],
        total_token_throughput=metrics["total_token_throughput"],
    )
    if detailed:
        result.update(
            input_lens=[o.prompt_len for o in outputs],
            output_lens=list(metrics["actual_output_lens"]),
            ttfts=[o.ttft for o in outputs],
            itls=[list(o.itl) for o in outputs],
        )
    result["latencies"] = [o.latency for o in outputs]
    if detailed:
        result["start_times"] = [o.start_time for o in outputs]
    result["queue_times"] = [o.queue_time for o in outputs]
    if detailed:
        result.update(generated_texts=[o.generated_text for o in outputs], errors=[o.error for o in outputs])
    result.update(max_output_tokens_per_s=metrics["max_output_tokens_per_s"], max_concurrent_requests=metrics["max_concurrent_requests"], rtfx=0.0)
    for name in PERCENTILE_METRICS:
        result[f"mean_{name}_ms"] = metrics[f"mean_{name}_ms"]
        result[f"median_{name}_ms"] = metrics[f"median_{name}_ms"]
        result[f"std_{name}_ms"] = metrics[f"std_{name}_ms"]
        for p, value in metrics[f"percentiles_{name}_ms"]:
            result[f"p{percentile_key(p)}_{name}_ms"] = value
    return result


def request_rate_label(rate: float) -> float | str:
    return "inf" if math.isinf(rate) else rate

"""llama-benchy 0.4.0's metrics, as pure functions of request records (runners.md A.7-A.9).

Per request: prompt tokens used, ttfr, e2e_ttft, est_ppt, pp and tg speed, sliding-window peak.
Per run (a batch of simultaneous requests): batch pp, batch tg, batch peak. Per test: the
statistics llama-benchy writes in its JSON (``mean``, population ``std``, ``values``), with its
c = 1 / c > 1 selection. Times inside are seconds (records hold nanoseconds).

Where llama-benchy silently drops failed requests, these functions do too -- the failures are
counted separately by the caller, never hidden from the Arena result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attrs import frozen

from arena_core.loadgen.stats import mean, population_std
from arena_core.loadgen.stream import LLAMA_BENCHY_KINDS
from arena_core.types import RequestRecord

NS = 1e9
PEAK_WINDOW_S = 1.0
USAGE_TOLERANCE = 0.2


@frozen(kw_only=True)
class TokenTimeline:
    """How many output tokens a request produced and when each arrived (seconds)."""

    count: int
    times: tuple[float, ...]
    source: str  # token_ids | usage | client-count | chunks | none


def token_timeline(record: RequestRecord) -> TokenTimeline:
    """Output tokens by llama-benchy's hierarchy: token_ids, then usage, then the client's own
    count of the streamed text (``completion_tokens_client``), then one per chunk."""
    chunks = [(t / NS, n) for t, n, kind in zip(record.chunk_ns, record.chunk_tokens, record.chunk_kinds) if kind in LLAMA_BENCHY_KINDS]
    usage = record.completion_tokens_server
    if not chunks:
        return TokenTimeline(count=usage or 0, times=(), source="usage" if usage is not None else "none")
    if all(n is not None for _, n in chunks):
        times: list[float] = []
        first = chunks[0][0]
        for t, n in chunks:
            if n == 1:
                times.append(t)
            elif n:
                # k tokens spread evenly over (previous token, this chunk]; the first chunk's
                # "previous" is the first-token time itself, so all its tokens land on t.
                previous = times[-1] if times else first
                times.extend(previous + (t - previous) * (i + 1) / n for i in range(n))
        return TokenTimeline(count=sum(n for _, n in chunks), times=tuple(times), source="token_ids")
    chunk_times = [t for t, _ in chunks]
    if usage is not None:
        return TokenTimeline(count=usage, times=_interpolate(chunk_times, usage), source="usage")
    if record.completion_tokens_client is not None:
        count = record.completion_tokens_client
        return TokenTimeline(count=count, times=_interpolate(chunk_times, count), source="client-count")
    return TokenTimeline(count=len(chunks), times=tuple(chunk_times), source="chunks")


def _interpolate(chunk_times: Sequence[float], count: int) -> tuple[float, ...]:
    if count <= 0 or not chunk_times:
        return ()
    first, last = chunk_times[0], chunk_times[-1]
    if count == 1 or len(chunk_times) == 1 or last <= first:
        return (first,) * count
    step = (last - first) / (count - 1)
    return tuple(first + step * i for i in range(count))


def first_token_s(record: RequestRecord) -> float | None:
    """llama-benchy's first_token_ts: the first chunk with content, reasoning or reasoning_content."""
    for t, kind in zip(record.chunk_ns, record.chunk_kinds):
        if kind in LLAMA_BENCHY_KINDS:
            return t / NS
    return None


def tokens_after_first(times: Sequence[float]) -> int:
    """Tokens strictly later than the first one (the whole first chunk is excluded)."""
    if len(times) < 2:
        return 0
    return sum(1 for t in times if t > times[0])


def sliding_peak(times: Sequence[float], window: float = PEAK_WINDOW_S) -> float:
    """Most tokens in any trailing window, per second; a burst shorter than the window uses its span."""
    if not times:
        return 0.0
    ordered = sorted(times)
    span = ordered[-1] - ordered[0]
    if 0 < span < window:
        return len(ordered) / span
    best, start = 0, 0
    for end, end_time in enumerate(ordered):
        while start < end and ordered[start] <= end_time - window:
            start += 1
        best = max(best, end - start + 1)
    return best / window


@frozen(kw_only=True)
class RequestMetrics:
    """One successful request's llama-benchy values (seconds and tokens/s); None where absent."""

    prompt_tokens: int
    start: float
    end: float
    first_token: float | None
    timeline: TokenTimeline
    ttfr: float | None
    e2e_ttft: float | None
    est_ppt: float | None
    pp_speed: float | None
    tg_speed: float | None
    peak: float | None


def request_metrics(record: RequestRecord, latency_s: float, expected_prompt_tokens: int) -> RequestMetrics:
    start = record.sent_ns / NS
    end = (record.end_ns or 0) / NS
    timeline = token_timeline(record)
    prompt = expected_prompt_tokens
    usage = record.prompt_tokens_server or 0
    if usage > 0 and abs(usage - expected_prompt_tokens) < expected_prompt_tokens * USAGE_TOLERANCE:
        prompt = usage
    ttfr = record.first_response_ns / NS - start if record.first_response_ns is not None else None
    first = first_token_s(record)
    e2e_ttft = est_ppt = None
    if first is not None:
        e2e_ttft = first - start
        est_ppt = max(0.0, (ttfr or 0.0) - latency_s)
    pp_speed = prompt / est_ppt if est_ppt else None
    tg_speed = None
    times = timeline.times
    if timeline.count > 1 and len(times) > 1:
        decode_time, decode_tokens = times[-1] - times[0], tokens_after_first(times)
        if decode_time > 0 and decode_tokens > 0:
            tg_speed = decode_tokens / decode_time
    return RequestMetrics(
        prompt_tokens=prompt,
        start=start,
        end=end,
        first_token=first,
        timeline=timeline,
        ttfr=ttfr,
        e2e_ttft=e2e_ttft,
        est_ppt=est_ppt,
        pp_speed=pp_speed,
        tg_speed=tg_speed,
        peak=sliding_peak(times) if times else None,
    )


@frozen(kw_only=True)
class BatchMetrics:
    """One run's aggregate values over its successful requests."""

    pp: float | None
    tg: float | None
    peak: float | None


def batch_metrics(requests: Sequence[RequestMetrics]) -> BatchMetrics:
    if not requests:
        return BatchMetrics(pp=None, tg=None, peak=None)
    firsts = [r.first_token for r in requests if r.first_token is not None]
    pp = tg = None
    if firsts:
        pp_duration = max(firsts) - min(r.start for r in requests)
        if pp_duration > 0:
            pp = sum(r.prompt_tokens for r in requests) / pp_duration
        lasts = [r.timeline.times[-1] if r.timeline.times else r.end for r in requests if r.timeline.times or r.end]
        last = max(lasts) if lasts else max(r.end for r in requests)
        tg_duration = last - min(firsts)
        if tg_duration > 0:
            decoded = sum(tokens_after_first(r.timeline.times) for r in requests)
            if decoded > 0:
                tg = decoded / tg_duration
    merged = [t for r in requests for t in r.timeline.times]
    return BatchMetrics(pp=pp, tg=tg, peak=sliding_peak(merged) if merged else None)


def metric(values: Sequence[float], scale: float = 1.0) -> dict[str, Any] | None:
    """llama-benchy's ``{mean, std, values}`` object (``None`` with no samples)."""
    if not values:
        return None
    return {"mean": mean(values) * scale, "std": population_std(values) * scale, "values": [v * scale for v in values]}


def llama_benchy_entry(
    runs: Sequence[Sequence[RequestRecord]],
    *,
    concurrency: int,
    latency_s: float,
    expected_prompt_tokens: int | None,
    prompt_size: int,
    response_size: int,
    context_size: int,
    context_phase: bool = False,
) -> dict[str, Any]:
    """One entry of llama-benchy's JSON ``benchmarks`` list, from the measured runs of one test.

    ``expected_prompt_tokens`` is llama-benchy's X for the usage check; ``None`` takes each
    record's own (conversation turns carry different histories).
    """
    per_request: list[RequestMetrics] = []
    batches: list[BatchMetrics] = []
    for run in runs:
        measured = [request_metrics(r, latency_s, expected_prompt_tokens or r.expected_prompt_tokens or 0) for r in run if r.ok]
        per_request.extend(measured)
        batches.append(batch_metrics(measured))
    pp_req = [r.pp_speed for r in per_request if r.pp_speed is not None]
    tg_req = [r.tg_speed for r in per_request if r.tg_speed is not None]
    pp = metric(pp_req if concurrency == 1 else [b.pp for b in batches if b.pp is not None])
    tg = metric(tg_req if concurrency == 1 else [b.tg for b in batches if b.tg is not None])
    return {
        "concurrency": concurrency,
        "context_size": context_size,
        "prompt_size": prompt_size,
        "response_size": response_size,
        "is_context_prefill_phase": context_phase,
        "pp_throughput": pp,
        "pp_req_throughput": pp if concurrency == 1 else metric(pp_req),
        "tg_throughput": tg,
        "tg_req_throughput": tg if concurrency == 1 else metric(tg_req),
        "peak_throughput": metric([b.peak for b in batches if b.peak is not None]),
        "peak_req_throughput": metric([r.peak for r in per_request if r.peak is not None]),
        "ttfr": metric([r.ttfr for r in per_request if r.ttfr is not None], 1000),
        "est_ppt": metric([r.est_ppt for r in per_request if r.est_ppt is not None], 1000),
        "e2e_ttft": metric([r.e2e_ttft for r in per_request if r.e2e_ttft is not None], 1000),
        "throughput_over_time": None,
        "requests_throughput_over_time": None,
    }

"""From closed-loop records to llama-benchy's JSON report and the Arena's workload result."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import attrs

from arena_core.loadgen.cache_state import cache_metrics, cache_problem
from arena_core.loadgen.closed_loop import ClosedLoopPlan, SessionFacts
from arena_core.loadgen.closed_metrics import llama_benchy_entry, request_metrics
from arena_core.loadgen.precision import mean_figure
from arena_core.loadgen.stats import median, tail_metrics
from arena_core.loadgen.stream import ANSWER
from arena_core.loadgen.until_precise import precision_label
from arena_core.loadgen.verdict import verdict_for
from arena_core.types import RequestRecord, Verdict, WorkloadResult

LLAMA_BENCHY_SCHEMA_VERSION = "0.4.0"


def _groups(records: Sequence[RequestRecord], phase: str, turn: int) -> list[list[RequestRecord]]:
    runs: dict[int, list[RequestRecord]] = {}
    for record in records:
        if not record.warmup and record.phase == phase and record.turn_index == turn:
            runs.setdefault(record.run_index, []).append(record)
    return [runs[index] for index in sorted(runs)]


def llama_benchy_report(records: Sequence[RequestRecord], plan: ClosedLoopPlan, facts: SessionFacts, model: str) -> dict[str, Any]:
    """The report llama-benchy would write with ``--format json`` for this test."""
    common = dict(
        concurrency=plan.shape.concurrency, latency_s=facts.latency_s, prompt_size=plan.shape.prompt_tokens, response_size=plan.shape.generated_tokens
    )
    entries = []
    if plan.shape.turns > 1:
        for turn in range(plan.shape.turns):
            depth = turn * (plan.shape.prompt_tokens + plan.shape.generated_tokens)
            entries.append(llama_benchy_entry(_groups(records, "standard", turn), expected_prompt_tokens=None, context_size=depth, **common))
    elif plan.prefix_caching and plan.shape.depth > 0:
        for phase in ("context", "inference"):
            entries.append(
                llama_benchy_entry(
                    _groups(records, phase, 0), expected_prompt_tokens=None, context_size=plan.shape.depth, context_phase=phase == "context", **common
                )
            )
    else:
        entries.append(llama_benchy_entry(_groups(records, "standard", 0), expected_prompt_tokens=None, context_size=plan.shape.depth, **common))
    return {
        "version": LLAMA_BENCHY_SCHEMA_VERSION,
        "timestamp": time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime()),
        "latency_mode": plan.shape.latency_mode,
        "latency_ms": facts.latency_s * 1000,
        "model": model,
        "prefix_caching_enabled": plan.prefix_caching,
        "max_concurrency": plan.shape.concurrency,
        "benchmarks": entries,
        "generator": "arena native instrument (llama-benchy 0.4.0 semantics)",
    }


def _mean_of(entry: dict[str, Any], key: str) -> float | None:
    value = entry.get(key)
    return value["mean"] if value else None


def closed_loop_result(
    records: Sequence[RequestRecord], plan: ClosedLoopPlan, facts: SessionFacts, report: dict[str, Any], *, runner: str, instrument: str
) -> WorkloadResult:
    """The Arena result: the card's figures (per-user decode t/s at c, TTFT p50) and the rest."""
    measured = [r for r in records if not r.warmup]
    ok = [r for r in measured if r.ok]
    per_request = [request_metrics(r, facts.latency_s, r.expected_prompt_tokens or 0) for r in ok]
    ttfts = [m.e2e_ttft for m in per_request if m.e2e_ttft is not None]
    decode = [m.tg_speed for m in per_request if m.tg_speed is not None]
    entries = [e for e in report["benchmarks"] if not e["is_context_prefill_phase"]]
    totals = [t for t in (_mean_of(e, "tg_throughput") for e in entries) if t is not None]
    metrics: dict[str, float | None] = {
        "decode_tps_per_user": sum(decode) / len(decode) if decode else None,
        "decode_tps_total": sum(totals) / len(totals) if totals else None,
        "prefill_tps_total": _mean_of(entries[0], "pp_throughput") if entries else None,
        "peak_tps": _mean_of(entries[0], "peak_throughput") if entries else None,
        "latency_s": facts.latency_s,
        "output_tokens": float(sum(r.completion_tokens_server or 0 for r in ok)),
        "concurrency": float(plan.shape.concurrency),  # as the external instrument's reading of the tool's JSON has it
    }
    for key, values in (("decode_tps_per_user", decode), ("decode_tps_total", totals)):  # 95 % Student t intervals
        figure = mean_figure(values)  # the total's across the workload's runs
        if figure is not None and figure.low is not None and figure.high is not None:
            metrics[f"{key}_ci_low"], metrics[f"{key}_ci_high"] = max(0.0, figure.low), figure.high
    tail_metrics("ttft", ttfts, metrics)
    seed_ttft = [t for t in (_mean_of(e, "ttfr") for e in entries) if t is not None]
    if seed_ttft:  # llama-benchy's mean time to first response: what the seed cards print as "TTFT p50"
        metrics["ttfr_mean_s"] = sum(seed_ttft) / len(seed_ttft) / 1000
    ttfrs = [m.ttfr for m in per_request if m.ttfr is not None]
    if ttfrs:
        metrics["ttfr_p50_s"] = median(ttfrs)
    answers = [_first_answer_s(r) for r in ok if ANSWER in r.chunk_kinds and r.chunk_kinds[0] != ANSWER]
    if answers:
        metrics["first_answer_token_p50_s"] = median([a for a in answers if a is not None])
    if plan.shape.turns > 1:
        for turn in range(plan.shape.turns):
            turn_ttfts = [m.e2e_ttft for r, m in zip(ok, per_request) if r.turn_index == turn and m.e2e_ttft is not None]
            turn_decode = [m.tg_speed for r, m in zip(ok, per_request) if r.turn_index == turn and m.tg_speed is not None]
            metrics[f"turn{turn + 1}_ttft_p50_s"] = median(turn_ttfts) if turn_ttfts else None
            metrics[f"turn{turn + 1}_decode_tps_per_user"] = sum(turn_decode) / len(turn_decode) if turn_decode else None
    metrics.update(cache_metrics(measured, template_tokens=max(0, facts.delta_user), block=facts.cache_block))
    if facts.delta_user > 0:  # what the chat template adds to a user message alone: the prediction prefills it too
        metrics["template_tokens"] = float(facts.delta_user)
    extra = [] if not facts.coherence.startswith("failed") else [f"coherence check {facts.coherence}"]
    if problem := cache_problem(metrics):
        extra.append(problem)
    return WorkloadResult(
        workload=plan.workload,
        runner=runner,
        instrument=instrument,
        requests=len(measured),
        failed=len(measured) - len(ok),
        tokens_per_second=metrics["decode_tps_per_user"],
        ttft_p50_s=metrics.get("ttft_p50_s"),
        metrics=metrics,
        verdict=_with_precision(verdict_for(measured, exact_output=plan.exact_output, extra_reasons=extra), metrics, plan, measured),
    )


def _with_precision(verdict: Verdict, metrics: dict[str, float | None], plan: ClosedLoopPlan, measured: Sequence[RequestRecord]) -> Verdict:
    """A workload measured until precise (``--precision``) is labelled with the margins it reached."""
    if plan.shape.precision is None:
        return verdict
    runs = len({r.run_index for r in measured})
    label = precision_label(metrics, plan.shape.precision, f"{runs} run{'s' if runs != 1 else ''}")
    return attrs.evolve(verdict, labels=(*verdict.labels, label))


def _first_answer_s(record: RequestRecord) -> float | None:
    """Time to the first answer (non-reasoning) chunk, for models that stream thinking first."""
    for t, kind in zip(record.chunk_ns, record.chunk_kinds):
        if kind == ANSWER:
            return (t - record.sent_ns) / 1e9
    return None

"""From an open-loop outcome to vLLM's JSON and the Arena's workload result, with its verdict."""

from __future__ import annotations

import time
from typing import Any

import attrs

from arena_core.loadgen.cache_state import cache_problem
from arena_core.loadgen.goodput import kept_up
from arena_core.loadgen.open_loop import OpenLoopOutcome, OpenLoopPlan
from arena_core.loadgen.open_metrics import request_rate_label, time_per_output_token, vllm_metrics, vllm_result
from arena_core.loadgen.stats import percentile, tail_metrics
from arena_core.loadgen.until_precise import precision_label
from arena_core.loadgen.verdict import TOKEN_COUNT_TOLERANCE, stream_problems
from arena_core.types import Verdict, WorkloadResult

PERCENTILES = (50, 90, 95, 99)
LATE_P99_S = 0.010  # lateness p99 above this means the client, not the server, fell behind
RATE_SHORTFALL = 0.05
MIN_REQUESTS_FOR_SATURATION = 20  # fewer say little about a served rate
#: The label of an open-loop result whose server did not keep up with the offered rate
#: (:func:`~arena_core.loadgen.goodput.kept_up`): a finding, not an error.
SATURATED = "saturated"


def open_loop_report(outcome: OpenLoopOutcome, plan: OpenLoopPlan, *, tokenizer: str, num_prompts: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(metrics, vLLM JSON)`` for a finished run."""
    metrics = vllm_metrics(outcome.outputs, outcome.duration_s, PERCENTILES)
    header = {
        "date": time.strftime("%Y%m%d-%H%M%S"),
        "endpoint_type": "openai-chat",
        "backend": "openai-chat",
        "label": None,
        "model_id": plan.model,
        "tokenizer_id": tokenizer,
        "num_prompts": num_prompts,
        "request_rate": request_rate_label(plan.shape.request_rate),
        "burstiness": plan.shape.burstiness,
        "max_concurrency": plan.shape.max_concurrency,
    }
    report = vllm_result(outcome.outputs, metrics, header=header, duration=outcome.duration_s, goodput=False)
    report["generator"] = "arena native instrument (vllm bench serve 0.33 semantics)"
    return metrics, report


def open_loop_result(outcome: OpenLoopOutcome, plan: OpenLoopPlan, metrics: dict[str, Any], *, runner: str, instrument: str, requested: int) -> WorkloadResult:
    """The Arena result of a finished open-loop run: the card's figures, the rest, the verdict."""
    summary = _summary(outcome, plan, metrics)
    failed = metrics["failed"] + (requested - len(outcome.outputs))
    return WorkloadResult(
        workload=plan.workload,
        runner=runner,
        instrument=instrument,
        requests=requested,
        failed=failed,
        tokens_per_second=metrics["output_throughput"],
        ttft_p50_s=metrics["median_ttft_ms"] / 1000 if any(o.success for o in outcome.outputs) else None,
        metrics=summary,
        verdict=_with_precision(_verdict(outcome, plan, summary, failed=failed, requested=requested), summary, plan, requested),
    )


def _with_precision(verdict: Verdict, summary: dict[str, float | None], plan: OpenLoopPlan, requested: int) -> Verdict:
    """A workload measured until precise (``--precision``) is labelled with the margins it reached."""
    if plan.shape.precision is None:
        return verdict
    return attrs.evolve(verdict, labels=(*verdict.labels, precision_label(summary, plan.shape.precision, f"{requested} requests")))


def _summary(outcome: OpenLoopOutcome, plan: OpenLoopPlan, metrics: dict[str, Any]) -> dict[str, float | None]:
    # Completions per second over the run less one typical request: a server that keeps up
    # finishes the last request about one latency after the last arrival.
    served_window = outcome.duration_s - metrics["median_e2el_ms"] / 1000
    summary: dict[str, float | None] = {
        "output_tps": metrics["output_throughput"],
        "total_tps": metrics["total_token_throughput"],
        "peak_concurrency": float(metrics["max_concurrent_requests"]),
        # vllm bench serve's own p95 (numpy's rule, every completed request): the seed's sweep judges by it
        "ttft_p95_tool_s": p95 / 1000 if (p95 := dict(metrics["percentiles_ttft_ms"]).get(95)) is not None and metrics["completed"] else None,
        # the seed site's open-loop "tokens/sec": total token throughput over peak concurrency
        "site_tps": metrics["total_token_throughput"] / metrics["max_concurrent_requests"] if metrics["max_concurrent_requests"] else None,
        "request_throughput": metrics["request_throughput"],
        "served_share": outcome.served_share,
        "served_rate": metrics["completed"] / served_window if served_window > 0 else metrics["request_throughput"],
        "requested_rate": plan.shape.request_rate,
        "dispatch_rate": (len(outcome.lateness_s) / outcome.dispatch_span_s) if outcome.dispatch_span_s > 0 else float("inf"),
        "lateness_p50_s": percentile(outcome.lateness_s, 50) if outcome.lateness_s else None,
        "lateness_p99_s": percentile(outcome.lateness_s, 99) if outcome.lateness_s else 0.0,
        "tpot_median_s": metrics["median_tpot_ms"] / 1000,
        "itl_median_s": metrics["median_itl_ms"] / 1000,
        "e2el_median_s": metrics["median_e2el_ms"] / 1000,
        "client_queue_p50_s": percentile([o.queue_time for o in outcome.outputs], 50) if outcome.outputs else None,
        "peak_output_chunks_per_s": metrics["max_output_tokens_per_s"],
        "duration_s": outcome.duration_s,
        "output_tokens": float(metrics["total_output"]),
    }
    tail_metrics("ttft", [o.ttft for o in outcome.outputs if o.success], summary)
    tail_metrics("tpot", [t for t in map(time_per_output_token, outcome.outputs) if t is not None], summary)
    summary.update(outcome.cache)
    if outcome.first_answer_s:
        summary["first_answer_token_p50_s"] = percentile(outcome.first_answer_s, 50)
    return summary


def _verdict(outcome: OpenLoopOutcome, plan: OpenLoopPlan, summary: dict[str, Any], *, failed: int, requested: int) -> Verdict:
    """Invalid when requests failed, the client fell behind its schedule, token counts disagree
    or completions came up short; labelled "saturated" when the server could not keep up."""
    successes = [o for o in outcome.outputs if o.success]
    offered, served, dispatched, lateness_p99 = plan.shape.request_rate, summary["served_rate"], summary["dispatch_rate"], summary["lateness_p99_s"]
    reasons: list[str] = []
    labels: list[str] = []
    if failed:
        first = next((o.error for o in outcome.outputs if not o.success), "")
        reasons.append(f"{failed} of {requested} requests failed (first: {first.strip().splitlines()[-1][:120] if first.strip() else 'unknown'})")
    if lateness_p99 > LATE_P99_S and dispatched < offered * (1 - RATE_SHORTFALL):
        reasons.append(f"the client fell behind the schedule: sent {dispatched:.2f} req/s of {offered:.2f} asked, lateness p99 {lateness_p99 * 1000:.1f} ms")
    elif not kept_up(share := outcome.served_share) and len(successes) >= MIN_REQUESTS_FOR_SATURATION:
        labels.append(f"{SATURATED}: the server kept up with {share * 100:.0f} % of the offered rate (completed {served:.2f} req/s of {offered:.2f})")
    server, client = outcome.completion_tokens_server, outcome.completion_tokens_client
    if client and abs(server - client) > TOKEN_COUNT_TOLERANCE * max(server, 1):
        reasons.append(f"server and client token counts disagree: {server} vs {client} output tokens")
    if plan.ignore_eos:
        short = sum(1 for o in successes if 0 < o.output_tokens < o.asked_tokens)
        if short:
            reasons.append(f"{short} completions shorter than asked while ignore_eos was set")
    reasons += stream_problems(outcome.suspicious)
    if problem := cache_problem(summary):
        reasons.append(problem)
    return Verdict(valid=not reasons, reasons=tuple(reasons), labels=tuple(labels))

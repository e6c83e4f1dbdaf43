"""The validity verdict of a workload result (measurement.md), as a pure function of its records."""

from __future__ import annotations

from collections.abc import Sequence

from arena_core.types import RequestRecord, Verdict

TOKEN_COUNT_TOLERANCE = 0.02


def stream_problems(ok: Sequence[RequestRecord]) -> list[str]:
    """Answers that completed but cannot be trusted: broken SSE events, usage that cannot be
    true, no usage to check the token count against (Arena always asks for it)."""
    problems = []
    malformed = [r for r in ok if r.malformed_events]
    if malformed:
        problems.append(f"{len(malformed)} streams carried malformed SSE events ({sum(r.malformed_events for r in malformed)} events skipped)")
    rejected = [r for r in ok if r.usage_rejected]
    if rejected:
        problems.append(f"{len(rejected)} responses reported usage that cannot be true, not used (first: {rejected[0].usage_rejected[:160]})")
    unchecked = [r for r in ok if r.chunk_ns and r.completion_tokens_server is None and not r.usage_rejected]
    if unchecked:
        problems.append(f"{len(unchecked)} responses carried no usage: their token counts cannot be checked")
    return problems


def verdict_for(records: Sequence[RequestRecord], *, exact_output: bool, extra_reasons: Sequence[str] = ()) -> Verdict:
    """Invalid when a request failed, token counts disagree, or completions came up short."""
    reasons = list(extra_reasons)
    failed = [r for r in records if not r.ok]
    if failed:
        reasons.append(f"{len(failed)} of {len(records)} requests failed (first: {failed[0].error[:120]})")
    ok = [r for r in records if r.ok]
    empty = [r for r in ok if not r.chunk_ns]
    if empty:
        reasons.append(f"{len(empty)} requests returned no output at all")
    counted = [r for r in ok if r.completion_tokens_server is not None and r.completion_tokens_client is not None]
    server = sum(r.completion_tokens_server or 0 for r in counted)
    client = sum(r.completion_tokens_client or 0 for r in counted)
    if counted and abs(server - client) > TOKEN_COUNT_TOLERANCE * max(server, 1):
        reasons.append(f"server and client token counts disagree: {server} vs {client} output tokens")
    if exact_output:
        short = [r for r in ok if r.max_tokens and (r.completion_tokens_server or 0) < r.max_tokens]
        if short:
            reasons.append(f"{len(short)} completions shorter than the {short[0].max_tokens} tokens asked for")
    reasons += stream_problems(ok)
    return Verdict(valid=not reasons, reasons=tuple(reasons))

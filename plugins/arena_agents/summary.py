"""An agents workload's figures from its turns' records.

Per turn (``turn_N_*``, N from 1): the time to the first output chunk, by the rule the SLO
judges with (:func:`arena_core.first_output_s`: a tool call's first fragment counts, and most
answers are calls), the context the server counted, the tokens it
prefilled (the context less what it took from its cache), its cache hit rate, the turn's latency.
Over the workload: the first-chunk time (p50), the decode speed per agent and in all, each
session's time (its turns and tool delays), the cache hit rate against the intended one, and
what the answers did with their tools:

- ``tool_call_accuracy``: the share of answers that made the call asked, with its arguments;
- ``tool_call_parse_failure_rate``: a call without a name, or arguments that are not a JSON object;
- ``tool_calls_as_text_rate``: the call written in the answer's text, as a server does whose
  tool parser is off; ``tool_calls_missing_rate``: no call at all.

The intended cache hit: a turn after the first may find the previous turn's whole prompt (its
text, at least; with the template's tokens and the answer's, at most); a first turn may find
the shared prefix (another session's request put it there), or nothing (none had yet).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attrs import frozen

import arena_core as arena

NAME = "agents"
OUTCOME_WORDS = {
    "correct": "the call asked",
    "wrong": "a wrong call",
    "malformed": "a call that did not parse",
    "as-text": "a call written as text",
    "none": "no call",
}


@frozen(kw_only=True)
class AgentTurn:
    """One turn's record and the call it asked for."""

    record: arena.RequestRecord
    tool: str
    arguments: dict[str, Any]
    #: tokens of text in its request (system, opening, outputs so far): what a cache can hold of them
    text_tokens: int
    #: tokens of the system message's text: the prefix every session shares
    shared_tokens: int

    def outcome(self) -> str:
        """ "correct", "wrong", "malformed", "as-text" or "none"."""
        read = arena.read_tool_calls(self.record.tool_calls, self.record.content)
        if read.outcome != "called":
            return read.outcome
        return "correct" if read.calls == ((self.tool, self.arguments),) else "wrong"

    def judged(self) -> str:
        """What the answer did, for a progress line: "the call asked, first chunk 0.004 s"."""
        first = arena.first_output_s(self.record)
        return OUTCOME_WORDS[self.outcome()] + (f", first chunk {first:.3f} s" if first is not None else "")


def _per_turn(turns: Sequence[AgentTurn]) -> dict[str, float | None]:
    metrics: dict[str, float | None] = {}
    for number in sorted({t.record.turn_index for t in turns}):
        ok = [t.record for t in turns if t.record.turn_index == number and t.record.ok]
        firsts = [f for r in ok if (f := arena.first_output_s(r)) is not None]
        told = [r for r in ok if r.prompt_tokens_server and r.cached_prompt_tokens_server is not None]
        prompt = sum(r.prompt_tokens_server or 0 for r in told)
        key = f"turn_{number + 1}_"
        metrics[key + "requests"] = float(len(ok))
        metrics[key + "ttft_p50_s"] = arena.median(firsts) if firsts else None
        metrics[key + "context_tokens"] = sum(r.prompt_tokens_server or 0 for r in ok) / len(ok) if ok else None
        metrics[key + "prefilled_tokens"] = (
            sum((r.prompt_tokens_server or 0) - (r.cached_prompt_tokens_server or 0) for r in told) / len(told) if told else None
        )
        metrics[key + "cache_hit_rate"] = sum(r.cached_prompt_tokens_server or 0 for r in told) / prompt if prompt else None
        metrics[key + "latency_p50_s"] = arena.median([(r.end_ns - r.sent_ns) / 1e9 for r in ok if r.end_ns]) if ok else None
    return metrics


def _intended(turns: Sequence[AgentTurn]) -> dict[str, float]:
    """The cache rates: what the server took, and what each request could find (see the module)."""
    previous = {(t.record.request_index, t.record.turn_index): t for t in turns}
    cached = intended = most = prompt = requests = 0
    for turn in turns:
        r = turn.record
        if not (r.ok and r.prompt_tokens_server and r.cached_prompt_tokens_server is not None):
            continue
        before = previous.get((r.request_index, r.turn_index - 1))
        template = max(0, r.prompt_tokens_server - turn.text_tokens)
        if before is not None and before.record.ok:
            least, top = before.text_tokens, (before.record.prompt_tokens_server or 0) + (before.record.completion_tokens_server or 0)
        else:  # a first turn: the shared prefix, where another session's request put it there
            least, top = 0, turn.shared_tokens + template
        cached, intended, most = cached + r.cached_prompt_tokens_server, intended + least, most + min(top, r.prompt_tokens_server)
        prompt, requests = prompt + r.prompt_tokens_server, requests + 1
    return arena.cache_rates(cached=cached, intended=intended, intended_most=most, template=0, prompt=prompt, requests=requests)


def _tools(turns: Sequence[AgentTurn]) -> dict[str, float | None]:
    answered = [t.outcome() for t in turns if t.record.ok]
    share = {kind: (answered.count(kind) / len(answered) if answered else None) for kind in ("correct", "malformed", "as-text", "none")}
    return {
        "tool_call_accuracy": share["correct"],
        "tool_call_parse_failure_rate": share["malformed"],
        "tool_calls_as_text_rate": share["as-text"],
        "tool_calls_missing_rate": share["none"],
        "tool_calls_answered": float(len(answered)),
    }


def _sessions(turns: Sequence[AgentTurn]) -> dict[str, float | None]:
    spans: dict[int, tuple[int, int]] = {}
    for turn in turns:
        r = turn.record
        start, end = spans.get(r.request_index, (r.sent_ns, r.end_ns or r.sent_ns))
        spans[r.request_index] = (min(start, r.sent_ns), max(end, r.end_ns or r.sent_ns))
    seconds = [(end - start) / 1e9 for start, end in spans.values()]
    return {
        "sessions": float(len(seconds)),
        "session_seconds_p50": arena.median(seconds) if seconds else None,
        "session_seconds_max": max(seconds, default=None),
    }


def _failed(records: Sequence[arena.RequestRecord]) -> str:
    """Why requests failed, in one line: a server that refused every request (it rejects ``tools``,
    or the history's tool messages) quoted, else the count and the first error."""
    failed = [r for r in records if not r.ok]
    if len(failed) == len(records) and all(r.http_status and 400 <= r.http_status < 500 for r in failed):
        return f"the server refused every request offering tools (each agent's first; its session stopped there): {failed[0].error[:300]}"
    return f"{len(failed)} of {len(records)} requests failed (first: {failed[0].error[:120]})"


def agents_result(turns: Sequence[AgentTurn], shape: arena.AgentShape, workload: str) -> arena.WorkloadResult:
    """The workload's result: its figures (see the module), and invalid where requests failed,
    the cache missed what it intends, or no server count of the cache came back."""
    records = [t.record for t in turns]
    ok = [r for r in records if r.ok]
    firsts = [f for r in ok if (f := arena.first_output_s(r)) is not None]
    speeds = [s for r in ok if (s := arena.stream_decode_tps(r)) is not None]
    output = sum(r.completion_tokens_server or 0 for r in ok)
    wall = (max(r.end_ns or r.sent_ns for r in records) - min(r.sent_ns for r in records)) / 1e9 if records else 0.0
    metrics: dict[str, float | None] = {
        "concurrency": float(shape.agents),
        "ttft_p50_s": arena.median(firsts) if firsts else None,
        "decode_tps_per_user": sum(speeds) / len(speeds) if speeds else None,
        "output_tps_over_wall": output / wall if wall > 0 else None,  # tool delays included: not a decode total
        "output_tokens": float(output),
        **_sessions(turns),
        **_tools(turns),
        **_intended(turns),
        **_per_turn(turns),
    }
    reasons = [_failed(records)] if len(ok) < len(records) else []
    if problem := arena.cache_problem(metrics):
        reasons.append(problem)
    if not records:
        reasons.append("no request was sent")
    return arena.WorkloadResult(
        workload=workload,
        runner=NAME,
        instrument="native",
        requests=len(records),
        failed=len(records) - len(ok),
        tokens_per_second=metrics["decode_tps_per_user"],
        ttft_p50_s=metrics["ttft_p50_s"],
        metrics=metrics,
        verdict=arena.Verdict(valid=not reasons, reasons=tuple(reasons)),
    )

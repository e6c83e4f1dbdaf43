"""A native instrument's result again, from its workload folder: the stored request records and
what the run kept beside them in ``session.json`` (the plan; the closed loop's session facts; the
open loop's prompt lengths, duration and dispatch span), summarised by the very functions that
made the result when it was measured. ``arena verify BUNDLE`` checks a result against this.

A folder measured by the external tool, or by an Arena that did not keep these, cannot be
recomputed: :class:`arena_core.UsageError` says which it is.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import attrs

import arena_core as arena

SESSION = "session.json"
RECORDS = "records.jsonl"
#: session.json holds a plan and, open loop, a prompt length per request: kilobytes to a few
#: megabytes (100,000 requests of 6-digit lengths).
MAX_SESSION_BYTES = 8 * 2**20
#: The most requests, or seconds, a session may state (a run is hours and thousands of requests).
MOST_COUNT = 10**8


def _session(folder: Path, needs: tuple[str, ...]) -> dict[str, Any]:
    try:
        session = arena.read_json_file(folder / SESSION, max_bytes=MAX_SESSION_BYTES)
    except (OSError, ValueError) as exc:
        raise arena.UsageError(f"{folder.name}/{SESSION}: cannot be read ({exc})") from None
    if not isinstance(session, dict) or session.get("instrument") != "native":
        raise arena.UsageError(f"{folder.name}: measured by the reference tool itself, whose result is its own JSON; not recomputed from records")
    if missing := [key for key in needs if key not in session]:
        raise arena.UsageError(f"{folder.name}/{SESSION} lacks {', '.join(missing)} (kept by Arena since bundles): not recomputed from records")
    return session


def _structure(value: Any, kind: type, where: str) -> Any:
    try:
        return arena.CONVERTER.structure(value, kind)
    except Exception as exc:  # cattrs' validation errors come in many classes; all mean "not this shape"
        raise arena.UsageError(f"{where}: not a {kind.__name__} ({type(exc).__name__})") from None


def _records(folder: Path) -> list[arena.RequestRecord]:
    try:
        return arena.read_records(folder / RECORDS)
    except Exception as exc:  # outside data: unreadable, not JSON, or a record of another shape (cattrs' own errors)
        raise arena.UsageError(f"{folder.name}/{RECORDS}: cannot be read ({str(exc)[:200]})") from None


def closed_loop(folder: Path, *, runner: str) -> arena.WorkloadResult:
    """A closed-loop result from its records, its plan and its session facts."""
    session = _session(folder, ("plan", "latency_s", "delta_user", "delta_context", "coherence"))
    plan = _structure(session["plan"], arena.ClosedLoopPlan, f"{folder.name}/{SESSION}: plan")
    facts_keys = {f.name for f in attrs.fields(arena.SessionFacts)}
    facts = _structure({k: v for k, v in session.items() if k in facts_keys}, arena.SessionFacts, f"{folder.name}/{SESSION}")
    records = _records(folder)
    report = arena.llama_benchy_report(records, plan, facts, plan.model)
    return arena.closed_loop_result(records, plan, facts, report, runner=runner, instrument="native")


def open_loop(folder: Path, *, runner: str) -> arena.WorkloadResult:
    """An open-loop result from its records (in the order they finished), its plan and its timing."""
    session = _session(folder, ("plan", "prompt_lens", "duration_s", "dispatch_span_s", "dispatched", "num_prompts", "requested"))
    plan = _structure(session["plan"], arena.OpenLoopPlan, f"{folder.name}/{SESSION}: plan")
    prompt_lens, numbers = session["prompt_lens"], [session[k] for k in ("duration_s", "dispatch_span_s", "dispatched", "num_prompts", "requested")]
    if (
        not isinstance(prompt_lens, list)
        or not all(type(n) is int and n >= 0 for n in prompt_lens)
        or not all(isinstance(n, (int, float)) and not isinstance(n, bool) and math.isfinite(n) and 0 <= n <= MOST_COUNT for n in numbers)
    ):
        raise arena.UsageError(f"{folder.name}/{SESSION}: its prompt lengths and timing are not counts and seconds")
    if not session["duration_s"] > 0 or session["dispatched"] > len(prompt_lens):
        raise arena.UsageError(
            f"{folder.name}/{SESSION}: a run of {session['duration_s']} s that let go {session['dispatched']} of {len(prompt_lens)} requests"
        )
    try:
        outcome = arena.outcome_from_records(
            _records(folder), prompt_lens, duration_s=session["duration_s"], dispatch_span_s=session["dispatch_span_s"], dispatched=int(session["dispatched"])
        )
    except ValueError as exc:
        raise arena.UsageError(f"{folder.name}/{RECORDS}: {exc}") from None
    metrics, _ = arena.open_loop_report(outcome, plan, tokenizer=str(session.get("tokenizer", "")), num_prompts=int(session["num_prompts"]))
    return arena.open_loop_result(outcome, plan, metrics, runner=runner, instrument="native", requested=int(session["requested"]))

"""Goodput and SLO attainment (``shared/spec/capacity.md`` section 1), pure functions of the
stored request records, so a stored run gains them by recomputation.

An SLO is a set of per-request limits: TTFT ≤ ``ttft_s``, optionally per-user decode speed
≥ ``tps`` (tokens/s of one stream after its first token) and end-to-end ≤ ``e2e_s``. A request
*attains* it when it completed and meets every limit; a failed request never does and still
counts. Attainment is attaining requests over all measured requests; goodput is attaining
requests, and their output tokens, per second of the measured span. Error-adjusted percentiles
count each failed request as an infinite TTFT, so a run that drops requests cannot look fast;
queue-inclusive TTFT (open loop) counts from when a request was due, not when it was let go.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from statistics import median

from attrs import evolve, frozen

from arena_core.errors import UsageError
from arena_core.loadgen.stats import percentile
from arena_core.loadgen.stream import ANSWER
from arena_core.types import RequestRecord


@frozen(kw_only=True)
class Slo:
    """Per-request limits and the share of requests that must meet them."""

    ttft_s: float = 2.0
    tps: float | None = 10.0
    e2e_s: float | None = None
    target: float = 0.95

    def describe(self) -> str:
        limits = [f"TTFT ≤ {self.ttft_s:g} s"] + ([f"≥ {self.tps:g} tok/s"] if self.tps else []) + ([f"E2E ≤ {self.e2e_s:g} s"] if self.e2e_s else [])
        return " and ".join(limits) + f" for {self.target:.0%} of requests"


#: The shipped SLO sets: a chat user, a patient user, an offline job.
NAMED_SLOS: Mapping[str, Slo] = {"interactive": Slo(), "relaxed": Slo(ttft_s=5.0, tps=5.0), "batch": Slo(ttft_s=60.0, tps=None, e2e_s=None, target=0.99)}
_UNITS = {"ttft": "s", "e2e": "s", "tps": "", "target": "%"}


def parse_slo(text: str, where: str = "--slo") -> Slo:
    """``interactive`` (a named set), or ``ttft=2s,tps=10,e2e=30s,target=95%`` over the defaults
    (``tps=none`` drops a limit); a bad part is a one-line error naming ``where``."""
    text = text.strip()
    if text in NAMED_SLOS:
        return NAMED_SLOS[text]
    slo, fields = Slo(), {"ttft": "ttft_s", "tps": "tps", "e2e": "e2e_s", "target": "target"}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, value = part.partition("=")
        key, value = key.strip().lower(), value.strip().lower()
        if key not in fields:
            raise UsageError(f"{where}: unknown limit {key!r} in {part!r} (known: {', '.join(fields)}; or one of {', '.join(NAMED_SLOS)})")
        if value == "none" and key in ("tps", "e2e"):
            slo = evolve(slo, **{fields[key]: None})
            continue
        match = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*(ms|s|%)?", value)
        number = float(match.group(1)) if match else math.nan
        if match and match.group(2) == "ms":
            number /= 1000
        if match and (match.group(2) == "%" or (key == "target" and number > 1)):
            number /= 100
        if not match or not math.isfinite(number) or number <= 0 or (key == "target" and number > 1):
            raise UsageError(f"{where}: {part!r} is not a limit (e.g. ttft=2s, tps=10, e2e=30s, target=95%)")
        slo = evolve(slo, **{fields[key]: number})
    return slo


def first_token_s(record: RequestRecord, *, answer: bool = False) -> float | None:
    """Seconds from sending to the first output token (``answer``: the first answer token, TTFA)."""
    for at, kind in zip(record.chunk_ns, record.chunk_kinds):
        if not answer or kind == ANSWER:
            return (at - record.sent_ns) / 1e9
    return None


def decode_tps(record: RequestRecord) -> float | None:
    """One stream's tokens per second after its first token."""
    tokens = record.completion_tokens_server or record.completion_tokens_client
    if not record.chunk_ns or record.end_ns is None or not tokens or tokens < 2:
        return None
    span = (record.end_ns - record.chunk_ns[0]) / 1e9
    return (tokens - 1) / span if span > 0 else None


def attains(record: RequestRecord, slo: Slo) -> bool:
    if not record.ok:
        return False
    ttft = first_token_s(record)
    if ttft is None or ttft > slo.ttft_s:
        return False
    if slo.tps is not None and (speed := decode_tps(record)) is not None and speed < slo.tps:
        return False
    return not (slo.e2e_s is not None and record.end_ns is not None and (record.end_ns - record.sent_ns) / 1e9 > slo.e2e_s)


def error_adjusted_percentile(values: Sequence[float], failures: int, q: float) -> float | None:
    """The q-th percentile (numpy's linear rule) with each failure an infinite value; None when
    it lands on one (the run dropped that many requests)."""
    ordered = [*sorted(values), *([math.inf] * failures)]
    if not ordered:
        return None
    position = (len(ordered) - 1) * q / 100
    lower = math.floor(position)
    upper, fraction = min(lower + 1, len(ordered) - 1), position - lower
    if math.isinf(ordered[lower]) or (fraction > 0 and math.isinf(ordered[upper])):
        return None
    return ordered[lower] + ((ordered[upper] - ordered[lower]) * fraction if fraction > 0 else 0.0)


#: The seed site's rate-sweep limits on TTFT p95 (seconds): each a capacity of its own, measured
#: (a sweep's card) or predicted (``arena predict --capacity``).
SEED_TTFT_P95_LIMITS_S = (2.0, 5.0, 10.0)
#: A server kept up with an offered request rate when it served at least this share of it: the
#: one rule of a capacity probe and of an open-loop result's "saturated" label (:func:`served_share`
#: of its records), of an imported result without records (served over offered rate) and of a
#: rate sweep's step (achieved over configured rate).
KEPT_UP_SHARE = 0.95


def kept_up(share: float | None) -> bool:
    """Whether a server that served ``share`` of an offered rate kept up with it (None: the
    records cannot tell, which is not held against it)."""
    return share is None or share >= KEPT_UP_SHARE


def served_share(records: Sequence[RequestRecord]) -> float | None:
    """How much of an open-loop schedule the server kept up with (:func:`share_kept_up` of the
    answered requests' due and end times); None for closed-loop records (nothing was due)."""
    return share_kept_up([(r.scheduled_ns, r.end_ns) for r in records if r.ok and r.scheduled_ns is not None and r.end_ns is not None])


def share_kept_up(due_and_end: Sequence[tuple[int, int]]) -> float | None:
    """The share of an offered rate a server kept up with, from its answered requests' due and
    end times (ns): 1 when the requests due last waited no longer than those due first; below 1
    as a backlog grows. Above its service rate μ a server given λ requests/s answers the request
    due at t after about t·(λ/μ - 1) more seconds, so the growth of the median latency (due →
    end) from the first quarter of requests to the last, over the time between them, is λ/μ - 1:
    the share served, μ/λ, is 1/(1 + that). Unlike completions over the arrival window, it does
    not move with the arrivals' own randomness. None for fewer than 8 answered requests."""
    answered = sorted(due_and_end)
    if len(answered) < 8:
        return None
    quarter = len(answered) // 4
    first, last = answered[:quarter], answered[-quarter:]
    apart = median([due for due, _ in last]) - median([due for due, _ in first])
    if apart <= 0:
        return None
    growth = median([end - due for due, end in last]) - median([end - due for due, end in first])
    return 1.0 / (1.0 + max(0.0, growth) / apart)


def goodput(records: Sequence[RequestRecord], slo: Slo) -> dict[str, float | None]:
    """The SLO figures of one workload's measured requests (warm-ups left out)."""
    measured = [r for r in records if not r.warmup]
    if not measured:
        return {}
    attained = [r for r in measured if attains(r, slo)]
    starts = [r.scheduled_ns if r.scheduled_ns is not None else r.sent_ns for r in measured]
    ends = [r.end_ns for r in measured if r.end_ns is not None]
    span = (max(ends) - min(starts)) / 1e9 if ends else 0.0
    ttfts = [t for r in measured if r.ok and (t := first_token_s(r)) is not None]
    failures = len(measured) - len(ttfts)
    tokens = sum((r.completion_tokens_server or r.completion_tokens_client or 0) for r in attained)
    found: dict[str, float | None] = {
        "slo_attainment": len(attained) / len(measured),
        "goodput_rps": len(attained) / span if span > 0 else None,
        "goodput_tps": tokens / span if span > 0 else None,
        "ttft_p95_error_adjusted_s": error_adjusted_percentile(ttfts, failures, 95),
        "ttft_p99_error_adjusted_s": error_adjusted_percentile(ttfts, failures, 99),
    }
    queued = [(at - r.scheduled_ns) / 1e9 for r in measured if r.ok and r.scheduled_ns is not None and (at := next(iter(r.chunk_ns), None)) is not None]
    if queued:  # open loop: from when the request was due, the client's own wait included
        found["ttft_queue_inclusive_p50_s"] = percentile(queued, 50)
        found["ttft_queue_inclusive_p95_s"] = percentile(queued, 95)
    if (served := served_share(measured)) is not None:
        found["served_share"] = served
    answers = [t for r in measured if r.ok and (t := first_token_s(r, answer=True)) is not None]
    if answers and any(r.chunk_kinds[:1] not in ("", ANSWER) for r in measured):  # thinking came first somewhere
        found["ttfa_p50_s"] = percentile(answers, 50)
    return found

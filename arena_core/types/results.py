"""What a measurement produces: request records, verdicts, workload and run results."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from attrs import evolve, field, frozen
from attrs.validators import optional

from arena_core import bounds


@frozen(kw_only=True)
class ToolCall:
    """One tool call as the server streamed it (:mod:`arena_core.loadgen.tool_calls`):
    ``arguments`` is its JSON text, unparsed."""

    name: str
    arguments: str
    call_id: str = ""


@frozen(kw_only=True)
class RequestRecord:
    """Everything observed about one request; every metric is a pure function of these.

    Times are ``time.perf_counter_ns()`` values taken where the bytes arrived (only differences
    mean anything). ``chunk_ns[i]`` is when output chunk *i* arrived, ``chunk_tokens[i]`` how many
    tokens it carried when the server sent ``token_ids`` (else ``None``), ``chunk_kinds[i]``
    what it carried (see :mod:`arena_core.loadgen.stream`), so each reference tool's rule for
    "first token" can be applied to the same record, and ``chunk_chars[i]`` how many characters
    of ``content`` or ``reasoning`` it carried, so each chunk's text can be counted on its own. Open-loop requests also carry when they were
    due (``scheduled_ns``) and when the client let them go (``dispatched_ns``); ``sent_ns`` comes
    after any wait for a concurrency slot. ``phase`` is ``standard``, or ``context`` /
    ``inference`` for llama-benchy's prefix-caching phases.
    """

    workload: str
    run_index: int
    request_index: int
    turn_index: int = 0
    phase: str = "standard"
    warmup: bool = False
    expected_prompt_tokens: int | None = None
    max_tokens: int | None = None
    scheduled_ns: int | None = None
    dispatched_ns: int | None = None
    sent_ns: int
    first_byte_ns: int | None = None
    first_response_ns: int | None = None
    chunk_ns: tuple[int, ...] = ()
    chunk_tokens: tuple[int | None, ...] = ()
    chunk_kinds: str = ""
    chunk_chars: tuple[int, ...] = ()
    end_ns: int | None = None
    prompt_tokens_server: int | None = None
    completion_tokens_server: int | None = None
    completion_tokens_client: int | None = None
    #: prompt tokens the server says it took from its prefix cache (``None``: it did not say)
    cached_prompt_tokens_server: int | None = None
    #: Why the server's usage was not believed (those figures are then ``None``), see
    #: :mod:`arena_core.loadgen.plausible`; empty when it was.
    usage_rejected: str = ""
    http_status: int | None = None
    error: str = ""
    malformed_events: int = 0
    content: str = ""
    reasoning: str = ""
    #: the tool calls the answer streamed, in their order (within the collector's bounds)
    tool_calls: tuple[ToolCall, ...] = ()

    @property
    def ok(self) -> bool:
        """The server answered 200 and the stream ended normally (content may still be empty)."""
        return not self.error and self.http_status == 200


@frozen(kw_only=True)
class Verdict:
    """Whether a result may be published: the reasons it may not, and labels it must carry
    (a scaled run is valid but labelled, and kept off unscaled leaderboards)."""

    valid: bool
    reasons: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()


def _finite_or_none(metrics: Mapping[str, Any]) -> Mapping[str, Any]:
    return {key: None if isinstance(value, float) and not math.isfinite(value) else value for key, value in metrics.items()}


@frozen(kw_only=True)
class WorkloadResult:
    """The measured figures of one workload; ``metrics`` holds every named metric in its units."""

    workload: str
    runner: str
    #: How it was measured: ``native`` (Arena's own instrument), ``external`` (the reference
    #: tool), or ``imported``.
    instrument: str
    requests: int = field(validator=bounds.REQUESTS_RESULT)
    failed: int = field(validator=bounds.REQUESTS_RESULT)
    tokens_per_second: float | None = field(validator=optional(bounds.RATE_RESULT))
    ttft_p50_s: float | None = field(validator=optional(bounds.SECONDS_RESULT))
    #: Not-a-number and infinity mean "could not be computed": kept as ``None``.
    metrics: Mapping[str, float | None] = field(factory=dict, converter=_finite_or_none)
    verdict: Verdict
    #: The workload's scale factor: runners leave it at 1, the run session stamps it (:meth:`scaled`).
    scale: float = field(default=1.0, validator=bounds.SCALE)
    #: The workload's changes from its standard shape (:attr:`WorkloadSpec.custom`), stamped by the run session.
    custom: str = ""

    def customised(self, custom: str) -> WorkloadResult:
        """This result marked as measured on a changed shape: labelled, and kept off standard leaderboards."""
        if not custom:
            return self
        return evolve(self, custom=custom, verdict=evolve(self.verdict, labels=(*self.verdict.labels, f"custom: {custom}")))

    def scaled(self, factor: float) -> WorkloadResult:
        """This result marked as measured on a workload shrunk by ``factor``: still valid, but
        labelled, and kept off unscaled leaderboards."""
        if factor == 1:
            return self
        label = f"scaled x{factor:g}"
        return evolve(self, scale=factor, verdict=evolve(self.verdict, labels=(*self.verdict.labels, label)))


@frozen(kw_only=True)
class RunInfo:
    """What a run measures; given to ``arena_run_started`` and ``arena_run_finished``."""

    run_id: str
    model: str
    hardware: str
    backend: str
    workloads: tuple[str, ...]
    instrument: str
    scale: float


@frozen(kw_only=True)
class RunResult:
    """The workload results of a run; ``completed`` is false when it stopped early."""

    run_id: str
    completed: bool
    results: tuple[WorkloadResult, ...] = ()

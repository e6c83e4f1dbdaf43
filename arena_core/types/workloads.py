"""Workloads: a closed- or open-loop traffic shape and the runner that drives it."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from attrs import evolve, field, frozen
from attrs.validators import deep_iterable, in_, instance_of, optional

from arena_core import bounds
from arena_core.types.names import LatencyMode, LoopKind, valid_name

#: A scaled workload keeps at least this many tokens per length and one request.
MIN_SCALED_TOKENS = 16
#: The longest an open-loop schedule may take to send its prompts: a week, the longest a request
#: may wait (``bounds.TIMEOUT_S``). A slower rate within its bounds is refused with the time.
MAX_SCHEDULE_S = 7 * 86_400
#: The most tokens a chat template puts around one turn (a user message and its answer: role
#: markers, turn ends, a BOS); room the KV cache needs beyond the text itself.
TEMPLATE_TOKENS_PER_TURN = 32
#: ShareGPT's typical (prompt, answer) tokens: the first two turns of ShareGPT V3 as vLLM samples
#: them. What a ShareGPT request is taken to ask where its own lengths are not known yet: a run's
#: expected work, a predictor's workload.
SHAREGPT_TYPICAL_TOKENS = (230, 200)


def _tokens(value: int, factor: float) -> int:
    return max(MIN_SCALED_TOKENS, round(value * factor))


def _count(value: int, factor: float) -> int:
    return max(1, round(value * factor))


@frozen(kw_only=True)
class ClosedLoopShape:
    """A llama-benchy style test: runs of ``concurrency`` simultaneous requests.

    ``depth`` is tokens of prior context in the same request; ``turns`` > 1 makes a conversation
    in which every turn appends ``prompt_tokens`` of user text and the ``generated_tokens`` answer.
    """

    loop: ClassVar[LoopKind] = "closed"

    prompt_tokens: int = field(validator=bounds.TOKENS)
    generated_tokens: int = field(validator=bounds.TOKENS)
    depth: int = field(default=0, validator=bounds.TOKENS_OR_NONE)
    turns: int = field(default=1, validator=bounds.TURNS)
    concurrency: int = field(default=10, validator=bounds.CONCURRENCY)
    runs: int = field(default=3, validator=bounds.RUNS)
    latency_mode: LatencyMode = field(default="generation", validator=in_(("api", "generation", "none")))
    #: A stated duration (a capacity probe): no measured run starts once this many seconds have
    #: passed since the first one started and ``min_runs`` are done; ``runs`` stays the most.
    duration_s: float | None = field(default=None, validator=optional(bounds.TIMEOUT_S))
    min_runs: int = field(default=1, validator=bounds.RUNS)
    #: Stop when precise (``--precision``): no measured run starts once ``min_runs`` are done and
    #: the headline figures' 95 % intervals are within this relative margin (0.05: ±5 %).
    precision: float | None = field(default=None, validator=optional(bounds.MARGIN))

    def __attrs_post_init__(self) -> None:
        if self.min_runs > self.runs:
            raise ValueError(f"min_runs {self.min_runs} is more than runs {self.runs}")

    def scaled(self, factor: float) -> ClosedLoopShape:
        """Token lengths and runs times ``factor`` (workloads.md, "Scaling for small machines");
        concurrency, turns and the shape stay."""
        if factor == 1:
            return self
        return evolve(
            self,
            prompt_tokens=_tokens(self.prompt_tokens, factor),
            generated_tokens=_tokens(self.generated_tokens, factor),
            depth=_tokens(self.depth, factor) if self.depth else 0,
            runs=(runs := _count(self.runs, factor)),
            min_runs=min(self.min_runs, runs),
        )

    def context_needed(self) -> int:
        """The longest sequence (history, prompt and answer) one request can reach, with the
        chat template's tokens around each turn (a multi-turn run of the embedded server,
        scaled x0.0325, ran out of KV cache on its fifth turn without them)."""
        return self.depth + self.turns * (self.prompt_tokens + self.generated_tokens + TEMPLATE_TOKENS_PER_TURN)

    def concurrency_needed(self) -> int:
        return self.concurrency

    def decode_shape(self) -> tuple[int, int]:
        """(sequences decoding together, shortest context while they decode)."""
        return self.concurrency, self.depth + self.prompt_tokens


@frozen(kw_only=True)
class OpenLoopShape:
    """A ``vllm bench serve`` style test: requests arrive on a seeded gamma schedule.

    ``input_tokens``/``output_tokens`` apply to the ``random`` dataset; ShareGPT lengths come
    from the conversations. ``max_concurrency`` caps requests in flight (``None``: no cap).
    """

    loop: ClassVar[LoopKind] = "open"

    dataset: Literal["random", "sharegpt"] = field(validator=in_(("random", "sharegpt")))
    request_rate: float = field(validator=bounds.REQUEST_RATE)
    num_prompts: int = field(validator=bounds.PROMPTS)
    burstiness: float = field(default=1.0, validator=bounds.BURSTINESS)
    input_tokens: int | None = field(default=None, validator=optional(bounds.TOKENS))
    output_tokens: int | None = field(default=None, validator=optional(bounds.TOKENS))
    range_ratio: float = field(default=0.0, validator=bounds.RATIO_BELOW_ONE)
    max_concurrency: int | None = field(default=None, validator=optional(bounds.CONCURRENCY))
    #: Stop when precise (``--precision``): no request is let go once the headline figures' 95 %
    #: intervals are within this relative margin; ``num_prompts`` is then the most.
    precision: float | None = field(default=None, validator=optional(bounds.MARGIN))

    def __attrs_post_init__(self) -> None:
        if self.dataset == "random" and (self.input_tokens is None or self.output_tokens is None):
            raise ValueError("the random dataset needs input_tokens and output_tokens")
        if (sending := self.num_prompts / self.request_rate) > MAX_SCHEDULE_S:
            # within its bounds, a rate can still be one no run could finish (and no clock could wait for)
            raise ValueError(
                f"{self.num_prompts} prompts at {self.request_rate:g} req/s would take {_duration(sending)} to send; "
                f"a schedule may take at most {_duration(MAX_SCHEDULE_S)} (raise request_rate or lower num_prompts)"
            )

    def scaled(self, factor: float) -> OpenLoopShape:
        """Token lengths and the number of prompts times ``factor``; rate and burstiness stay."""
        if factor == 1:
            return self
        return evolve(
            self,
            input_tokens=_tokens(self.input_tokens, factor) if self.input_tokens else None,
            output_tokens=_tokens(self.output_tokens, factor) if self.output_tokens else None,
            num_prompts=_count(self.num_prompts, factor),
        )

    def context_needed(self) -> int:
        if self.dataset == "random":
            assert self.input_tokens is not None and self.output_tokens is not None
            return int((self.input_tokens + self.output_tokens) * (1 + self.range_ratio)) + 1
        return 2048  # vLLM's ShareGPT rule: prompt plus reference completion at most 2048 tokens

    def concurrency_needed(self) -> int:
        return self.max_concurrency or 1

    def decode_shape(self) -> tuple[int, int]:
        """Open-loop requests are judged one at a time: batch 1 at the input length."""
        return 1, self.input_tokens or 0


def _span(instance: object, attribute: Any, value: tuple[float, float], bound: bounds.Bound) -> None:
    if len(value) != 2:
        raise ValueError(f"{attribute.name}: expected (least, most), got {value!r}")
    for end in value:
        if problem := bound.problem(end):
            raise ValueError(f"{attribute.name}: {problem}")
    if value[0] > value[1]:
        raise ValueError(f"{attribute.name}: least {value[0]} is more than most {value[1]}")


@frozen(kw_only=True)
class AgentShape:
    """Coding agents: ``agents`` sessions at once, each a conversation of tool calls. Every session
    shares a prefix (system prompt and tool definitions), has a context of its own (the files it
    read), then turns: the model answers with a call, the tool takes its delay, its output joins
    the history. Lengths in tokens and delays in seconds are drawn uniformly between their two
    ends; a session ends before the turn that would take it past ``context_cap_tokens``.
    Closed loop: each agent waits for its answer and its tool before its next request."""

    loop: ClassVar[LoopKind] = "closed"

    agents: int = field(validator=bounds.CONCURRENCY)
    turns: int = field(validator=bounds.TURNS)
    shared_prefix_tokens: int = field(validator=bounds.TOKENS)
    session_context_tokens: int = field(validator=bounds.TOKENS_OR_NONE)
    tool_output_tokens: tuple[int, int] = field(converter=tuple, validator=lambda i, a, v: _span(i, a, v, bounds.TOKENS))
    tool_delay_s: tuple[float, float] = field(converter=tuple, validator=lambda i, a, v: _span(i, a, v, bounds.DURATION_S))
    answer_tokens: int = field(validator=bounds.TOKENS)
    context_cap_tokens: int = field(validator=bounds.TOKENS)

    def first_turn_tokens(self) -> int:
        """The context of a session's first request with its answer: what must fit."""
        return self.shared_prefix_tokens + self.session_context_tokens + self.answer_tokens

    def scaled(self, factor: float) -> AgentShape:
        """Token lengths and the cap times ``factor``; agents, turns and delays stay."""
        if factor == 1:
            return self
        least, most = (_tokens(n, factor) for n in self.tool_output_tokens)
        return evolve(
            self,
            shared_prefix_tokens=_tokens(self.shared_prefix_tokens, factor),
            session_context_tokens=_tokens(self.session_context_tokens, factor) if self.session_context_tokens else 0,
            tool_output_tokens=(least, most),
            answer_tokens=_tokens(self.answer_tokens, factor),
            context_cap_tokens=_tokens(self.context_cap_tokens, factor),
        )

    def context_needed(self) -> int:
        """The cap, with the chat template's tokens around each turn (a tool call and its output)."""
        return self.context_cap_tokens + self.turns * 2 * TEMPLATE_TOKENS_PER_TURN

    def concurrency_needed(self) -> int:
        return self.agents

    def decode_shape(self) -> tuple[int, int]:
        return self.agents, self.shared_prefix_tokens + self.session_context_tokens

    def as_closed_loop(self) -> ClosedLoopShape:
        """The conversation it most resembles, for what only knows those (a budget's time, a
        predictor): its first context as depth, a mean tool output a turn, one run."""
        output = sum(self.tool_output_tokens) // 2
        turns = max(1, min(self.turns, (self.context_cap_tokens - self.first_turn_tokens()) // max(1, output + self.answer_tokens) + 1))
        return ClosedLoopShape(
            prompt_tokens=max(1, output), generated_tokens=self.answer_tokens, depth=self.shared_prefix_tokens + self.session_context_tokens,
            turns=turns, concurrency=self.agents, runs=1,
        )  # fmt: skip


WorkloadShape = ClosedLoopShape | OpenLoopShape | AgentShape


def _duration(seconds: float) -> str:
    """A duration as a person says it: "3.2 days", "6,342 years"."""
    for unit, size in (("years", 365.25 * 86_400), ("days", 86_400), ("hours", 3_600)):
        if seconds >= size:
            count = seconds / size
            return f"{count:,.3g} {unit}" if count < 1000 else f"{count:,.0f} {unit}" if count < 1e9 else f"{count:.2e} {unit}"
    return f"{seconds:,.0f} s"


#: The roles a workload plugin gives its workloads, so that the core reads a suite it does not
#: name: the first workload registered with a role is the one the core uses for it.
ROLES = {
    "headline": "the card's headline (its decode total) and the per-user against total chart; capacity's users search and arena predict --capacity",
    "rate-capacity": "capacity's request-rate search",
    "agent-capacity": "capacity's agents search (arena capacity --agents)",
    "short-context": "the prefill-wall finding: TTFT grows from this workload's context",
    "long-context": "the prefill-wall finding: to this workload's context",
    "compared": "findings compare models on the same hardware under these, open loop first",
}


@frozen(kw_only=True)
class WorkloadSpec:
    """One named workload: its traffic ``shape`` (closed- or open-loop, or agents) and the runner that drives it."""

    name: str = field(validator=valid_name)
    title: str
    description: str
    runner: str = field(validator=valid_name)
    shape: WorkloadShape = field(validator=instance_of((ClosedLoopShape, OpenLoopShape, AgentShape)))
    seed: int = field(default=42, validator=bounds.SEED)
    #: Registered but left out of a run that names no workloads (the seed site's second suite).
    optional: bool = False
    #: How this workload differs from the one registered under its name ("concurrency=1, ..."),
    #: when a config file or ``--set`` changed it; empty for the standard workload.
    custom: str = ""
    #: What it stands for where the core needs a workload without naming one (:data:`ROLES`).
    roles: tuple[str, ...] = field(default=(), validator=deep_iterable(in_(tuple(ROLES))))
    #: Its place in a card's "decode throughput, total" row (1 first; 0: not in the row) and the
    #: row's label for it ("1k ctx"), as the seed site's cards show that row.
    total_column: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    total_label: str = ""

    @property
    def loop(self) -> LoopKind:
        return self.shape.loop

    def as_conversation(self) -> WorkloadSpec:
        """This workload; an agents workload as the conversation it resembles
        (:meth:`AgentShape.as_closed_loop`), for what knows only closed and open loops."""
        return evolve(self, shape=self.shape.as_closed_loop()) if isinstance(self.shape, AgentShape) else self

    def scaled(self, factor: float) -> WorkloadSpec:
        """This workload shrunk (or grown) by ``factor``; the factor is recorded with each result."""
        return self if factor == 1 else evolve(self, shape=self.shape.scaled(factor))

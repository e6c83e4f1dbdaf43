"""Asking the served model: one request per item, at temperature 0, a few at a time -- through
the chat API (the path users take), or the text-completion API (HumanEval's own protocol: the
model continues the function).

Every answer is outside data: read through the core's bounded JSON call (a deadline and a size
cap), its text taken only where it has the shape of a chat answer, and cut to
:data:`MAX_ANSWER_CHARS`. A request that fails is an item without an answer, counted, never a
crash of the phase.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import attrs
from attrs import frozen

from arena_core import (
    ArenaError,
    ChatClient,
    Endpoint,
    QualityRequest,
    ServerCodec,
    ToolCallCollector,
    ToolCallsRead,
    read_tool_calls,
    refusal,
    run_measurement,
)

T = TypeVar("T")

#: More than any HumanEval solution or canary answer needs; a longer one is cut here.
MAX_ANSWER_CHARS = 20_000
#: An answer's first tokens, kept with its record (the server's own ``/tokenize`` of its text):
#: ``arena compare`` counts the items whose first 64 tokens two runs share (output parity at
#: temperature 0). 64 tokens are far fewer characters than this.
HEAD_TOKENS = 64
HEAD_CHARS = 4096
#: The stop sequences the OpenAI API takes in one request (vLLM 0.32 refuses a fifth with HTTP
#: 400); a suite's others are applied to the answer here, so every server's text ends alike.
MAX_STOP_SEQUENCES = 4
CHAT, COMPLETIONS = "/v1/chat/completions", "/v1/completions"
#: Chat-template tokens of the common families: in an answer's text they mean the server's
#: template is wrong for its model (or its output is not parsed), not that the model erred.
TEMPLATE_MARKERS = ("<|im_start|>", "<|im_end|>", "<start_of_turn>", "<end_of_turn>", "<|eot_id|>", "<|start_header_id|>", "[INST]", "<|endoftext|>")


def leaked_template(text: str) -> str:
    """The first chat-template token in ``text`` ("" when none)."""
    return next((marker for marker in TEMPLATE_MARKERS if marker in text), "")


@frozen(kw_only=True)
class Answer:
    text: str
    #: why there is no answer ("" when there is one): the server's error, an HTTP status, a shape
    error: str = ""
    finish_reason: str = ""
    #: its first :data:`HEAD_TOKENS` token ids, where the server tokenizes (else empty)
    head_tokens: tuple[int, ...] = ()
    #: what it did with the tools it was offered (None: none were offered)
    tool_calls: ToolCallsRead | None = None


def answer_of(status: int, parsed: Any, error: str, *, tools: bool = False) -> Answer:
    """The text of a chat or text completion, or why there is none; with ``tools`` offered, the
    calls it made too (a message of calls alone has no text)."""
    if error:
        return Answer(text="", error=error[:200])
    if status != 200:
        return Answer(text="", error=refusal(status, parsed))  # the server's reason, bounded
    choices = parsed.get("choices") if isinstance(parsed, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else choice.get("text")
    called = None
    if tools and isinstance(message, dict):
        collector = ToolCallCollector()
        if message.get("tool_calls") is not None:
            collector.add(message["tool_calls"])
        content = content if isinstance(content, str) else ""
        called = read_tool_calls(collector.calls(), content[:MAX_ANSWER_CHARS])
    if not isinstance(content, str):
        return Answer(text="", error="no text in the answer")
    reason = choice.get("finish_reason")
    return Answer(text=content[:MAX_ANSWER_CHARS], finish_reason=reason[:40] if isinstance(reason, str) else "", tool_calls=called)


def cut_at_stop(text: str, stop: Sequence[str]) -> str:
    """``text`` up to the first of ``stop`` (the server stops before a stop sequence too)."""
    found = [at for sequence in stop if sequence and (at := text.find(sequence)) >= 0]
    return text[: min(found)] if found else text


async def _tokenizes(client: ChatClient) -> bool:
    try:
        return await ServerCodec.probe(client)
    except ArenaError:  # no /tokenize: answers are kept without their tokens
        return False


async def _head(codec: ServerCodec, text: str) -> tuple[int, ...]:
    """The first :data:`HEAD_TOKENS` tokens of ``text`` as the server tokenizes it (none where it
    will not: the answer stands without them)."""
    try:
        return tuple(int(token) for token in (await codec.encode(text[:HEAD_CHARS]))[:HEAD_TOKENS])
    except ArenaError:
        return ()


def completions_served(endpoint: Endpoint, timeout_s: float) -> bool:
    """Whether the server answers ``/v1/completions`` (a chat-only API says 404 or 405)."""

    async def ask() -> int:
        client = ChatClient(endpoint, request_timeout=timeout_s)
        try:
            body = {"model": endpoint.model, "prompt": "def add(a, b):\n", "max_tokens": 1, "temperature": 0}
            status, _, exchange = await client.call("POST", COMPLETIONS, body)
            return 0 if exchange.error else status
        finally:
            await client.close()

    return run_measurement(ask()) == 200


@frozen(kw_only=True)
class Pace:
    """How a suite asks: at most ``concurrency`` at a time, every answer by ``until`` (a
    ``time.monotonic()``; None: no limit), telling ``on_item(answered, total)`` as answers come."""

    concurrency: int
    until: float | None = None
    on_item: Callable[[int, int], None] = lambda done, total: None

    @classmethod
    def of(cls, request: QualityRequest, *, reserve_s: float = 0.0) -> Pace:
        """The pace a run asked for: its time limit, less ``reserve_s`` kept for grading."""
        until = time.monotonic() + request.time_limit_s - reserve_s if request.time_limit_s is not None else None
        return cls(concurrency=request.concurrency, until=until, on_item=request.on_item)


def ask_all(
    endpoint: Endpoint,
    prompts: Sequence[str],
    *,
    max_tokens: int,
    pace: Pace,
    timeout_s: float,
    completion: bool = False,
    stop: Sequence[str] = (),
    tools: Sequence[Sequence[dict[str, Any]]] = (),
) -> list[Answer | None]:
    """Every prompt's answer, in order: a chat message each (offered ``tools[i]`` where given),
    or with ``completion`` a text continued up to ``stop``. Under a time limit an item is asked
    only while the longest answer so far would still come by ``pace.until``; an item not asked
    is None."""

    async def all_of() -> list[Answer | None]:
        client = ChatClient(endpoint, request_timeout=timeout_s)
        gate = asyncio.Semaphore(max(1, pace.concurrency))
        codec = ServerCodec(client) if await _tokenizes(client) else None
        longest, answered = 0.0, 0

        async def one(index: int, prompt: str) -> Answer | None:
            nonlocal longest, answered
            asked = {"prompt": prompt, "stop": list(stop[:MAX_STOP_SEQUENCES])} if completion else {"messages": [{"role": "user", "content": prompt}]}
            offered = {"tools": list(tools[index]), "tool_choice": "auto"} if tools else {}
            body = {"model": endpoint.model, **asked, **offered, "max_tokens": max_tokens, "temperature": 0, "stream": False}
            async with gate:
                sent = time.monotonic()
                if pace.until is not None and sent + longest > pace.until:
                    return None  # it would end past the time the run left this suite
                status, parsed, exchange = await client.call("POST", COMPLETIONS if completion else CHAT, body)
                answer = answer_of(status, parsed, exchange.error or "", tools=bool(tools))
                if stop and answer.text:
                    answer = attrs.evolve(answer, text=cut_at_stop(answer.text, stop))
                if codec is not None and answer.text:
                    answer = attrs.evolve(answer, head_tokens=await _head(codec, answer.text))
                longest, answered = max(longest, time.monotonic() - sent), answered + 1
                pace.on_item(answered, len(prompts))
            return answer

        try:
            return list(await asyncio.gather(*(one(index, prompt) for index, prompt in enumerate(prompts))))
        finally:
            await client.close()

    return run_measurement(all_of())


def asked_within(request: QualityRequest, suite: str, items: Sequence[T], answers: Sequence[Answer | None]) -> tuple[list[T], list[Answer]]:
    """The items that were asked, and their answers; where the time limit left some unasked,
    this is said."""
    pairs = [(item, answer) for item, answer in zip(items, answers, strict=True) if answer is not None]
    if not pairs and items:
        raise TimeoutError(f"{suite}: no item could be asked in the {request.time_limit_s:.0f} s the run's budget left")
    if len(pairs) < len(items):
        request.progress(f"quality: {suite}: {len(pairs)} of the {len(items)} items asked in the {request.time_limit_s:.0f} s the run's budget left")
    return [item for item, _ in pairs], [answer for _, answer in pairs]

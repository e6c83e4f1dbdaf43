"""Asking the served model: one chat request per item, at temperature 0, a few at a time.

Every answer is outside data: read through the core's bounded JSON call (a deadline and a size
cap), its text taken only where it has the shape of a chat answer, and cut to
:data:`MAX_ANSWER_CHARS`. A request that fails is an item without an answer, counted, never a
crash of the phase.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from attrs import frozen

from arena_core import ChatClient, Endpoint, run_measurement

#: More than any HumanEval solution or canary answer needs; a longer one is cut here.
MAX_ANSWER_CHARS = 20_000


@frozen(kw_only=True)
class Answer:
    text: str
    #: why there is no answer ("" when there is one): the server's error, an HTTP status, a shape
    error: str = ""
    finish_reason: str = ""


def answer_of(status: int, parsed: Any, error: str) -> Answer:
    """The text of a chat completion, or why there is none."""
    if error:
        return Answer(text="", error=error[:200])
    if status != 200:
        return Answer(text="", error=f"HTTP {status}")
    choices = parsed.get("choices") if isinstance(parsed, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        return Answer(text="", error="no message content in the answer")
    reason = choice.get("finish_reason")
    return Answer(text=content[:MAX_ANSWER_CHARS], finish_reason=reason[:40] if isinstance(reason, str) else "")


def ask_all(
    endpoint: Endpoint,
    prompts: Sequence[str],
    *,
    max_tokens: int,
    concurrency: int,
    timeout_s: float,
    on_answer: Callable[[int, Answer], None] = lambda index, answer: None,
) -> list[Answer]:
    """Every prompt's answer, in order; ``on_answer`` hears each as it comes (progress)."""

    async def all_of() -> list[Answer]:
        client = ChatClient(endpoint, request_timeout=timeout_s)
        gate = asyncio.Semaphore(max(1, concurrency))

        async def one(index: int, prompt: str) -> Answer:
            body = {"model": endpoint.model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens, "temperature": 0, "stream": False}
            async with gate:
                status, parsed, exchange = await client.call("POST", "/v1/chat/completions", body)
            answer = answer_of(status, parsed, exchange.error or "")
            on_answer(index, answer)
            return answer

        try:
            return list(await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts))))
        finally:
            await client.close()

    return run_measurement(all_of())

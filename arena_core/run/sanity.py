"""The sanity check before a suite (the seed site's second suite runs one first): one short
question, answered without streaming, must come back as text. A server that answers with nothing,
with binary noise or with replacement characters is broken in a way no benchmark figure would
show, so the run stops before its first measured request and says what came back."""

from __future__ import annotations

import unicodedata

from arena_core.errors import ServerLost, UsageError
from arena_core.loadgen.refusal import refusal
from arena_core.types import Endpoint

QUESTION = "Reply with one word: hello"
ANSWER_TOKENS = 16
#: More than this share of control or replacement characters is not text.
MAX_NOISE = 0.1
#: How long the one short answer may take (a server still loading its model has not started).
DEADLINE_S = 60.0


def garbage(text: str) -> str:
    """Why ``text`` is not an answer ("" when it is one)."""
    if not text.strip():
        return "an empty answer"
    noise = sum(1 for char in text if char == "\ufffd" or (unicodedata.category(char) == "Cc" and char not in "\n\r\t"))
    if noise > MAX_NOISE * len(text):
        return f"{noise} of {len(text)} characters are control or replacement characters"
    return ""


def check_the_server_answers(endpoint: Endpoint, timeout_s: float) -> None:
    """Ask :data:`QUESTION`: :class:`ServerLost` (exit 5) when no answer comes, :class:`UsageError`
    (exit 2) naming what came back when it is not text."""
    from arena_core.loadgen import ChatClient, run_measurement

    async def ask() -> tuple[int, object, str]:
        client = ChatClient(endpoint, request_timeout=timeout_s)
        try:
            body = {"model": endpoint.model, "messages": [{"role": "user", "content": QUESTION}], "max_tokens": ANSWER_TOKENS, "stream": False}
            status, answer, exchange = await client.call("POST", "/v1/chat/completions", body)
            return status, answer, exchange.error or ""
        finally:
            await client.close()

    status, answer, error = run_measurement(ask())
    where = f"sanity check: {endpoint.base_url}"
    if error:
        raise ServerLost(f"{where} did not answer a one-line question ({error}); no workload was started")
    if status != 200:
        raise UsageError(f"{where} refused a one-line question ({refusal(status, answer)}); no workload was started")
    message = ((answer.get("choices") or [{}])[0] or {}).get("message") if isinstance(answer, dict) else None
    text = ""
    if isinstance(message, dict):  # a reasoning model may think first: its thinking is text too
        text = next((v for key in ("content", "reasoning_content", "reasoning") if isinstance(v := message.get(key), str) and v), "")
    if problem := garbage(text):
        raise UsageError(f"{where} answered garbage to a one-line question ({problem}; it began {text[:60]!r}); no workload was started")

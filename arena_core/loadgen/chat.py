"""The streaming chat client: prepared request bytes in, request records out."""

from __future__ import annotations

import json
from typing import Any

from arena_core.errors import ArenaError
from arena_core.files import parse_json
from arena_core.loadgen.http import BufferSink, Exchange, HttpClient, HttpError
from arena_core.loadgen.plausible import checked_usage
from arena_core.loadgen.refusal import refusal
from arena_core.loadgen.stream import ChatStreamSink
from arena_core.redaction import redact
from arena_core.types import Endpoint, RequestRecord, ToolCall

CHAT_PATH = "/v1/chat/completions"
#: A small JSON call answers in kilobytes (a long prompt's /tokenize in hundreds): past this a
#: server floods, and its answer is no answer.
MAX_CALL_BYTES = 16 * 2**20
#: A set-up read (the model list, /tokenize, /tokenizer_info, /props) answers in seconds; past
#: this a server trickles. Generation calls (a sanity request) keep the request timeout.
SETUP_DEADLINE_S = 60.0


class ServerRefused(ArenaError):
    """The server answered a set-up call with an error (wrong API key, unknown model, ...) or
    with figures that cannot be true (a vocabulary of 10^12 tokens)."""

    exit_code = 2


def encode_json(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


class ChatClient:
    """Talks to one OpenAI-compatible endpoint through a keep-alive pool.

    ``prepare`` turns a body into request bytes ahead of time; ``stream`` sends them and returns
    the exchange and what the stream carried, with arrival timestamps.
    """

    def __init__(self, endpoint: Endpoint, *, request_timeout: float = 3600.0) -> None:
        headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
        self.endpoint = endpoint
        self.http = HttpClient(endpoint.base_url, headers=headers)
        self.request_timeout = request_timeout

    def prepare(self, body: dict[str, Any], path: str = CHAT_PATH) -> bytes:
        return self.http.build_request("POST", path, encode_json(body))

    async def stream(self, request: bytes) -> tuple[Exchange, ChatStreamSink]:
        sink = ChatStreamSink()
        sink.request_bytes = len(request)
        exchange = await self.http.exchange(request, sink, timeout=self.request_timeout)
        return exchange, sink

    async def call(self, method: str, path: str, body: dict[str, Any] | None = None, *, deadline_s: float | None = None) -> tuple[int, Any, Exchange]:
        """A small JSON call (probe, tokenize, models); ``(status, parsed body or None, exchange)``.
        It ends within ``deadline_s`` (default: the request timeout) and :data:`MAX_CALL_BYTES`."""
        sink = BufferSink(max_bytes=MAX_CALL_BYTES)
        request = self.http.build_request(method, path, None if body is None else encode_json(body))
        exchange = await self.http.exchange(request, sink, timeout=min(deadline_s, self.request_timeout) if deadline_s else self.request_timeout)
        try:
            parsed = parse_json(sink.body, max_bytes=MAX_CALL_BYTES) if sink.body else None
        except ValueError:  # not JSON, too large or too deep: no answer (each caller says what it lacked)
            parsed = None
        return exchange.status, parsed, exchange

    async def call_text(self, path: str, *, deadline_s: float, max_bytes: int = MAX_CALL_BYTES) -> tuple[int, str]:
        """A GET whose answer is text (a Prometheus page): ``(status, text)``, status 0 when none
        came; within ``deadline_s`` and ``max_bytes`` like :meth:`call`."""
        sink = BufferSink(max_bytes=max_bytes)
        exchange = await self.http.exchange(self.http.build_request("GET", path, None), sink, timeout=min(deadline_s, self.request_timeout))
        return (0 if exchange.error else exchange.status), sink.body.decode("utf-8", "replace")

    async def call_ok(self, method: str, path: str, body: dict[str, Any] | None = None, *, deadline_s: float | None = None) -> Any:
        """Like :meth:`call`, but a failure is a one-line :class:`ServerRefused`."""
        status, parsed, exchange = await self.call(method, path, body, deadline_s=deadline_s)
        if exchange.error:  # the server is gone or broken, which is not the user's input
            raise HttpError(f"{method} {self.endpoint.base_url}{path}: {exchange.error}")
        if status == 401:
            raise ServerRefused(f"{self.endpoint.base_url} rejected the API key (HTTP 401 on {path})")
        if status != 200:
            raise ServerRefused(f"{method} {self.endpoint.base_url}{path}: {refusal(status, parsed)}")
        return parsed

    async def close(self) -> None:
        await self.http.close()


def _json_or_none(body: bytes) -> Any:
    try:
        return parse_json(body, max_bytes=MAX_CALL_BYTES) if body else None
    except ValueError:
        return None


def record_from(exchange: Exchange, sink: ChatStreamSink, **labels: Any) -> RequestRecord:
    """The request record of one streamed exchange; ``labels`` are workload, run_index, ..."""
    error = exchange.error
    if not error and exchange.status != 200:
        error = refusal(exchange.status, _json_or_none(sink.error_body), sink.error_body)
    elif not error and sink.wrong_content_type:
        error = f"HTTP 200 with Content-Type {sink.content_type or 'none'!r}, not an event stream: {sink.error_body.decode('utf-8', 'replace')[:200]}"
    content, reasoning, kinds = "".join(sink.content), "".join(sink.reasoning), "".join(sink.chunk_kinds)
    # the server's usage is held against what the stream carried before any figure derives from it
    prompt_tokens, completion_tokens, cached_tokens, rejected = checked_usage(
        sink.prompt_tokens,
        sink.completion_tokens,
        kinds=kinds,
        text_bytes=len(content.encode()) + len(reasoning.encode()),
        request_bytes=sink.request_bytes,
        max_tokens=labels.get("max_tokens"),
        cached=sink.cached_tokens,
    )
    # what the server sent back is redacted here, before anything derives text from it
    return RequestRecord(
        sent_ns=exchange.sent_ns,
        first_byte_ns=sink.first_byte_ns if sink.first_byte_ns is not None else exchange.head_ns,
        first_response_ns=sink.first_response_ns,
        chunk_ns=tuple(sink.chunk_ns),
        chunk_tokens=tuple(sink.chunk_tokens),
        chunk_kinds=kinds,
        chunk_chars=tuple(sink.chunk_chars),
        end_ns=exchange.end_ns,
        prompt_tokens_server=prompt_tokens,
        completion_tokens_server=completion_tokens,
        cached_prompt_tokens_server=cached_tokens,
        usage_rejected=redact(rejected),
        http_status=exchange.status or None,
        error=redact(error),
        malformed_events=sink.malformed_events,
        content=redact(content),
        reasoning=redact(reasoning),
        tool_calls=tuple(ToolCall(name=redact(c.name), arguments=redact(c.arguments), call_id=redact(c.call_id)) for c in sink.tool_calls.calls())
        if sink.tool_calls
        else (),
        **labels,
    )

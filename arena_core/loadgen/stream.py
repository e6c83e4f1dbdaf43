"""Parsing an OpenAI chat-completions SSE stream into the fields of a request record.

The parser runs inside ``data_received`` with the read's arrival time, so it is kept lean: split
on newlines, ``json.loads`` each ``data:`` line, classify its delta. Every output chunk is kept
with its kind, so both reference tools' rules can be applied later to the same record:

=====  ===========================================  ============  ==================
kind   delta carries                                llama-benchy  vllm bench serve
=====  ===========================================  ============  ==================
``c``  non-empty ``content``                        token chunk   token chunk
``r``  non-empty ``reasoning``                      token chunk   token chunk
``R``  non-empty ``reasoning_content`` only          token chunk   --
``t``  ``tool_calls`` / ``function_call``            --            token chunk
``e``  ``content == ""`` without ``role``            --            token chunk
=====  ===========================================  ============  ==================
"""

from __future__ import annotations

from collections.abc import Mapping
from json import JSONDecoder
from typing import Any

from arena_core.loadgen.tool_calls import ToolCallCollector

_decode_at = JSONDecoder().raw_decode  # (text, start) -> (object, end): no copy, no strip

ANSWER = "c"
REASONING = "r"
REASONING_CONTENT = "R"
TOOL_CALL = "t"
EMPTY_CONTENT = "e"

#: The kinds each reference tool counts as streamed output.
LLAMA_BENCHY_KINDS = frozenset((ANSWER, REASONING, REASONING_CONTENT))
VLLM_KINDS = frozenset((ANSWER, REASONING, TOOL_CALL, EMPTY_CONTENT))
#: The most of an error answer's body kept (for its message): a server that sends one without
#: end must not fill the client's memory.
ERROR_BODY_BYTES = 64 * 2**10


class ChatStreamSink:
    """Collects one streamed chat response; ``on_body`` is called per network read."""

    __slots__ = (
        "status",
        "first_byte_ns",
        "first_response_ns",
        "chunk_ns",
        "chunk_tokens",
        "chunk_kinds",
        "chunk_chars",
        "content",
        "reasoning",
        "prompt_tokens",
        "completion_tokens",
        "cached_tokens",
        "malformed_events",
        "error_body",
        "content_type",
        "wrong_content_type",
        "request_bytes",
        "tool_calls",
        "_partial",
    )

    def __init__(self) -> None:
        self.status = 0
        self.first_byte_ns: int | None = None
        self.first_response_ns: int | None = None
        self.chunk_ns: list[int] = []
        self.chunk_tokens: list[int | None] = []
        self.chunk_kinds: list[str] = []
        self.chunk_chars: list[int] = []
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        #: prompt tokens the server took from its cache: ``usage.prompt_tokens_details.cached_tokens``
        #: (OpenAI's field; vLLM, recent llama.cpp), else llama.cpp's ``timings.cache_n``
        self.cached_tokens: int | None = None
        self.malformed_events = 0
        self.error_body = b""
        self.content_type = ""
        #: a 200 that is not an event stream (a proxy's HTML page, a JSON body): kept as the
        #: error body, not parsed. Decided once in ``on_head``, not on every read.
        self.wrong_content_type = False
        #: the size of the request this answers, set by the client: what bounds ``prompt_tokens``
        self.request_bytes = 0
        #: the answer's tool-call fragments, joined (None until the first arrives)
        self.tool_calls: ToolCallCollector | None = None
        self._partial = b""

    def on_head(self, t_ns: int, status: int, headers: Mapping[str, str]) -> None:
        self.status = status
        self.content_type = headers.get("content-type", "")
        self.wrong_content_type = status == 200 and "text/event-stream" not in self.content_type.lower()

    def on_body(self, t_ns: int, data: bytes) -> None:
        if self.first_byte_ns is None:
            self.first_byte_ns = t_ns
        if self.status != 200 or self.wrong_content_type:
            # an error's body is quoted, never parsed as a stream: what fits a message is kept
            self.error_body += data[: max(0, ERROR_BODY_BYTES - len(self.error_body))]
            return
        if self._partial:
            data = self._partial + data
        # Complete lines end at a newline byte, which never splits a UTF-8 sequence: decode once.
        complete, _, self._partial = data.rpartition(b"\n")
        if not complete:
            return
        for line in complete.decode("utf-8", "replace").split("\n"):
            if not line:
                continue  # the blank line that ends each event
            if line[:5] != "data:":
                line = line.strip()  # ": comments", "event:" lines, indented or \r-ended data
                if line[:5] != "data:":
                    continue
            try:
                event = _decode_at(line, 6 if line[5:6] == " " else 5)[0]
            except (ValueError, RecursionError):  # not JSON, or nested past what the parser follows
                if "[DONE]" not in line:
                    self.malformed_events += 1
                continue
            if type(event) is dict:
                self._event(t_ns, event)
            else:
                self.malformed_events += 1

    def _event(self, t_ns: int, event: dict[str, Any]) -> None:
        usage = event.get("usage")
        if usage and type(usage) is dict:
            prompt = usage.get("prompt_tokens")
            if type(prompt) is int:
                self.prompt_tokens = prompt
            completion = usage.get("completion_tokens")
            if type(completion) is int and completion >= 0:
                self.completion_tokens = completion
            details = usage.get("prompt_tokens_details")
            cached = details.get("cached_tokens") if type(details) is dict else None
            if type(cached) is int:
                self.cached_tokens = cached
        timings = event.get("timings")
        if timings and type(timings) is dict and self.cached_tokens is None:
            cached = timings.get("cache_n")
            if type(cached) is int:
                self.cached_tokens = cached
        choices = event.get("choices")
        if not choices or type(choices) is not list:
            return
        choice = choices[0]
        delta = (choice.get("delta") or {}) if type(choice) is dict else None
        if type(delta) is not dict:
            self.malformed_events += 1  # a choice or delta of the wrong shape: counted, never a crash
            return
        if self.first_response_ns is None:
            self.first_response_ns = t_ns
        content = delta.get("content")
        if content:
            if type(content) is not str:
                self.malformed_events += 1  # text of the wrong type is never taken as text
                return
            kind, chars = ANSWER, len(content)
            self.content.append(content)
        elif thought := delta.get("reasoning") or delta.get("reasoning_content"):
            if type(thought) is not str:
                self.malformed_events += 1
                return
            kind, chars = REASONING if delta.get("reasoning") else REASONING_CONTENT, len(thought)
            self.reasoning.append(thought)
        elif (fragments := delta.get("tool_calls")) or (legacy := delta.get("function_call")):
            kind, chars = TOOL_CALL, 0
            if self.tool_calls is None:
                self.tool_calls = ToolCallCollector()
            if not (self.tool_calls.add(fragments) if fragments else self.tool_calls.add(legacy, legacy=True)):
                self.malformed_events += 1  # a fragment of the wrong shape: counted, and the rest kept
        elif content == "" and "role" not in delta:
            kind, chars = EMPTY_CONTENT, 0
        else:
            return  # the role-only opening chunk, or an empty keep-alive delta
        token_ids = choice.get("token_ids")
        self.chunk_ns.append(t_ns)
        self.chunk_tokens.append(len(token_ids) if type(token_ids) is list else None)
        self.chunk_kinds.append(kind)
        self.chunk_chars.append(chars)

"""The client's own output-token count, the cross-check of the server's usage.

Seen on the embedded Gemma with ignore_eos: a model that writes "|" token by token produces text
its tokenizer reads back as fewer, longer tokens ("||" is one token), so re-tokenising the whole
answer under-counts (133 generated, 100 re-tokenised) and a valid run was judged invalid.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import attrs

from arena_core.loadgen.chat import record_from
from arena_core.loadgen.http import Exchange
from arena_core.loadgen.output_count import chunk_texts, client_output_count
from arena_core.loadgen.stream import ChatStreamSink
from arena_core.loadgen.verdict import verdict_for


class MergingCodec:
    """Reads "||" as one token, as Gemma's tokenizer does; every other character is one."""

    exact = True
    description = "test"

    def __init__(self) -> None:
        self.calls = 0

    async def encode(self, text: str) -> list[int]:
        self.calls += 1
        ids, i = [], 0
        while i < len(text):
            step = 2 if text.startswith("||", i) else 1
            ids.append(step)
            i += step
        return ids

    async def decode(self, ids: Sequence[int]) -> str:
        raise NotImplementedError


def streamed(pieces: Sequence[tuple[str, str]], *, completion_tokens: int | None):
    """The record of a stream of one-token chunks, each ``(field, text)`` of the delta."""
    sink = ChatStreamSink()
    sink.on_head(0, 200, {"content-type": "text/event-stream"})
    events = [{"choices": [{"delta": {"role": "assistant"}}]}]
    events += [{"choices": [{"delta": {field: text}}]} for field, text in pieces]
    if completion_tokens is not None:
        events.append({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": completion_tokens}})
    for t, event in enumerate(events, start=1):
        sink.on_body(t, f"data: {json.dumps(event)}\n\n".encode())
    sink.on_body(len(events) + 1, b"data: [DONE]\n\n")
    exchange = Exchange(sent_ns=0, head_ns=0, end_ns=len(events) + 2, status=200)
    return record_from(exchange, sink, workload="w", run_index=1, request_index=0, max_tokens=1000)


PIPES = [("reasoning_content", "think"), ("content", "a"), *[("content", "|")] * 4, ("content", "\n")]


def test_each_chunks_text_is_cut_back_out_of_the_record():
    record = streamed(PIPES, completion_tokens=7)
    assert record.chunk_kinds == "Rcccccc" and record.chunk_chars == (5, 1, 1, 1, 1, 1, 1)
    assert chunk_texts(record) == ["think", "a", "|", "|", "|", "|", "\n"]


def test_tokens_the_tokenizer_would_merge_are_counted_as_streamed():
    record = streamed(PIPES, completion_tokens=11)  # one token per letter of "think", one per chunk after
    codec = MergingCodec()
    whole = asyncio.run(codec.encode(record.content + record.reasoning))
    assert len(whole) == 9  # "a||||\nthink": "a", "||", "||", "\n" and five letters
    counted: dict[str, int] = {}
    assert asyncio.run(client_output_count(record, codec, counted)) == 5 + 6
    # the distinct chunk texts were tokenized once each, and are remembered for the next request
    assert counted == {"think": 5, "a": 1, "|": 1, "\n": 1} and codec.calls == 1 + 1 + 4  # the test's own call, the whole text, four chunk texts
    assert asyncio.run(client_output_count(record, codec, counted)) == 11 and codec.calls == 1 + 1 + 4 + 1


def test_a_server_whose_usage_is_wrong_is_still_caught():
    # the server claims more than it streamed (a plausible 80 tokens in 100 bytes): counting
    # chunk by chunk does not follow it
    record = streamed([("content", "||")] * 50, completion_tokens=80)
    count = asyncio.run(client_output_count(record, MergingCodec(), {}))
    assert record.completion_tokens_server == 80 and count == 50
    verdict = verdict_for([attrs.evolve(record, completion_tokens_client=count)], exact_output=False)
    assert not verdict.valid and "disagree: 80 vs 50" in verdict.reasons[0]


def test_without_usage_the_count_is_llama_benchys_whole_text_tokenization():
    record = streamed(PIPES, completion_tokens=None)
    assert asyncio.run(client_output_count(record, MergingCodec(), {})) == 9  # no usage: the concatenated text, as its rule 3


def test_chunks_that_do_not_add_up_fall_back_to_the_whole_text():
    # a redacted secret changes the stored text's length: the chunk lengths no longer cut it
    record = streamed(PIPES, completion_tokens=7)
    redacted = attrs.evolve(record, content="a[redacted]")
    assert chunk_texts(redacted) is None
    assert asyncio.run(client_output_count(redacted, MergingCodec(), {})) == len("a[redacted]think")


class SpacePrefixCodec:
    """Puts a space before any text it encodes, as Llama 2's sentencepiece does: a word is one
    token, and a text that starts with a space gains one of its own."""

    exact = True
    description = "test"

    async def encode(self, text: str) -> list[int]:
        return [0] * (len(text.split()) + (1 if text.startswith(" ") else 0))

    async def decode(self, ids: Sequence[int]) -> str:
        raise NotImplementedError


def test_a_tokenizer_that_adds_a_space_does_not_inflate_the_count_past_the_servers():
    words = [("content", "the"), ("content", " cat"), ("content", " sat")]
    # whole: 3; chunk by chunk: 1 + 2 + 2 = 5; the server's 3 (or 4, with its end token) lies between
    for server in (3, 4):
        record = streamed(words, completion_tokens=server)
        assert asyncio.run(client_output_count(record, SpacePrefixCodec(), {})) == server
    # a server claiming more than either end: the nearer end stands, and the check holds it against the server
    record = streamed(words * 10, completion_tokens=60)
    assert asyncio.run(client_output_count(record, SpacePrefixCodec(), {})) == 10 + 20 + 20

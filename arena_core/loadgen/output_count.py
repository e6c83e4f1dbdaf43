"""The client's own count of a request's output tokens: the cross-check of the server's usage.

Re-tokenising the whole streamed text is llama-benchy's count when a server sends no usage, and
it usually equals the server's. It is not the count of what the model generated when the model
emitted tokens the tokenizer would merge: a small model writing "|" four times generates four
tokens whose text re-tokenises as two "||" (seen on the embedded Gemma: 133 tokens generated,
100 re-tokenised). Counting each streamed chunk's text on its own undoes such merges, because a
server streams one token per chunk unless it holds back part of a character or decodes several
tokens at once; but a tokenizer that puts a space before any text it encodes (Llama 2's and
Mistral's sentencepiece) counts one too many for each chunk that starts with a space.

So the client's count is a range: the whole text re-tokenised at one end (merges: low) and the
chunks counted alone at the other (added spaces: high). The count stored is the point of that
range nearest the server's: the server's own where the client's evidence allows it, else the
nearer end, which the 2 % check then holds against it. The chunks are counted (a tokenization
per distinct chunk text) only for a request whose whole-text count differs from the server's.
"""

from __future__ import annotations

from collections.abc import MutableMapping

from arena_core.loadgen.codec import Codec
from arena_core.loadgen.stream import ANSWER, REASONING, REASONING_CONTENT
from arena_core.types import RequestRecord


def chunk_texts(record: RequestRecord) -> list[str] | None:
    """Each text chunk's own text, cut back out of ``content`` and ``reasoning``; ``None`` when
    the record does not say its chunks' lengths, or they do not add up (a redacted secret)."""
    if len(record.chunk_chars) != len(record.chunk_kinds):
        return None
    texts: list[str] = []
    cursor = {ANSWER: 0, REASONING: 0}
    for kind, chars in zip(record.chunk_kinds, record.chunk_chars):
        source, text = (ANSWER, record.content) if kind == ANSWER else (REASONING, record.reasoning)
        if kind not in (ANSWER, REASONING, REASONING_CONTENT):
            continue
        start = cursor[source]
        texts.append(text[start : start + chars])
        cursor[source] = start + chars
    if cursor[ANSWER] != len(record.content) or cursor[REASONING] != len(record.reasoning):
        return None
    return texts


async def client_output_count(record: RequestRecord, codec: Codec, counted: MutableMapping[str, int]) -> int:
    """The client's count of ``record``'s output tokens: its whole text re-tokenised where that
    is the server's count (or the server gave none); else the point nearest the server's of the
    range between that and the sum over its chunks (``counted`` remembers each distinct chunk
    text's count across the requests of a workload)."""
    whole = len(await codec.encode(record.content + record.reasoning))
    server = record.completion_tokens_server
    if server is None or server == whole:
        return whole
    texts = chunk_texts(record)
    if texts is None:
        return whole
    chunked = 0
    for text in texts:
        if text not in counted:
            counted[text] = len(await codec.encode(text))
        chunked += counted[text]
    low, high = min(whole, chunked), max(whole, chunked)
    return min(max(server, low), high)

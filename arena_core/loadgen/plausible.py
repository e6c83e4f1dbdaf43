"""Figures a server reports, held against what the client can count itself.

A server's ``usage`` decides tokens/s, so it is never taken on trust. ``completion_tokens`` lies
between the number of chunks that carried text (each carries at least one token) and what the
streamed text could hold (at most one token per byte, plus the few tokens that stream no text:
an end-of-sequence token, empty deltas, a tool call's arguments), and never above the
``max_tokens`` asked for. ``prompt_tokens`` cannot exceed the bytes sent plus what a chat template
adds, and the prompt tokens a server says it took from its cache cannot exceed ``prompt_tokens``. A figure outside its bounds is dropped from the record -- the client's own count stands in
-- and the record says why, which makes the result invalid (:func:`~arena_core.loadgen.verdict.stream_problems`).
Figures that size something (a vocabulary) are bounded before anything is built from them.
"""

from __future__ import annotations

from arena_core.loadgen.stream import ANSWER, REASONING, REASONING_CONTENT

#: The most tokens a chat template adds around the messages sent (a long default system prompt
#: is a few hundred): more is not a template but a wrong count.
TEMPLATE_TOKENS = 4096
#: Tokens an answer may hold that stream no text of their own: end-of-sequence, stop strings.
SILENT_TOKENS = 16
#: Tokens one chunk without captured text may stand for (an empty delta, a tool call's part).
TOKENS_PER_TEXTLESS_CHUNK = 64
#: The largest vocabulary a server may report: real ones have up to about 262,000 entries.
MAX_VOCABULARY = 1 << 22

_TEXT_KINDS = (ANSWER, REASONING, REASONING_CONTENT)


def completion_bounds(kinds: str, text_bytes: int, max_tokens: int | None) -> tuple[int, int]:
    """The fewest and the most completion tokens a stream can have carried: ``kinds`` holds one
    letter per output chunk (:mod:`~arena_core.loadgen.stream`), ``text_bytes`` the UTF-8 size of
    its answer and reasoning text."""
    with_text = sum(kinds.count(kind) for kind in _TEXT_KINDS)
    most = text_bytes + (len(kinds) - with_text) * TOKENS_PER_TEXTLESS_CHUNK + SILENT_TOKENS
    return with_text, min(most, max_tokens) if max_tokens else most


def prompt_fits(count: int, sent_bytes: int) -> bool:
    """Whether ``count`` prompt tokens can come of ``sent_bytes`` bytes sent and a chat template."""
    return 0 <= count <= sent_bytes + TEMPLATE_TOKENS


def checked_usage(
    prompt: int | None, completion: int | None, *, kinds: str, text_bytes: int, request_bytes: int, max_tokens: int | None, cached: int | None = None
) -> tuple[int | None, int | None, int | None, str]:
    """The server's ``prompt``, ``completion`` and ``cached`` prompt token counts, each ``None``
    when absent or when it cannot be true, and why any was dropped (empty when all stand).
    Cached tokens are part of the prompt: never more than it, nor than the request could hold."""
    problems = []
    if prompt is not None and not prompt_fits(prompt, request_bytes):
        problems.append(f"{prompt} prompt tokens for a request of {request_bytes} bytes")
        prompt = None
    if completion is not None:
        least, most = completion_bounds(kinds, text_bytes, max_tokens)
        if not least <= completion <= most:
            problems.append(f"{completion} completion tokens where the stream carried between {least} and {most}")
            completion = None
    if cached is not None and not (prompt_fits(cached, request_bytes) and (prompt is None or cached <= prompt)):
        problems.append(f"{cached} cached prompt tokens of {prompt if prompt is not None else 'an unknown number of'} prompt tokens")
        cached = None
    return prompt, completion, cached, "; ".join(problems)


def template_tokens_problem(added: int, what: str) -> str:
    """Why ``added`` tokens around a probe message cannot be a chat template's (empty when they can)."""
    if -TEMPLATE_TOKENS <= added <= TEMPLATE_TOKENS:
        return ""
    return f"the server's usage says its chat template adds {added} tokens around {what}, which cannot be true"


def vocabulary_problem(size: int) -> str:
    """Why ``size`` cannot be a vocabulary's size (empty when it can)."""
    if 0 < size <= MAX_VOCABULARY:
        return ""
    return f"a vocabulary of {size} tokens cannot be true (real ones have up to about 262,000; Arena accepts up to {MAX_VOCABULARY})"

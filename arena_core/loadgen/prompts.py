"""llama-benchy's prompt construction (runners.md A.5), seeded and built before measuring.

A request's text is a contiguous slice of the tokenized corpus: ``depth`` tokens of context (sent
as a system message) followed by ``prompt`` tokens (the user message). Slices start at seeded
random offsets, never the same offset twice in a session, so no two requests share a prefix by
accident. Each workload draws its offsets from its own stream (the seed and the workload's name):
with one seed for all, two workloads started their slices at the same offsets, and on a server
that keeps its prefix cache between workloads the second found the first's prompts in it (vLLM:
every rag-8k request found a 128-token block of long-context-25k's). A corpus shorter than a
slice is repeated, as llama-benchy does.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence

from arena_core.loadgen.codec import Codec

CONTEXT_PROBE = "."  # vLLM's front end rejects an empty user message


class PromptBuilder:
    def __init__(self, corpus_ids: Sequence[int], codec: Codec, seed: int, stream: str = "") -> None:
        if not corpus_ids:
            raise ValueError("the corpus has no tokens")
        self._ids = list(corpus_ids)
        self._codec = codec
        self._rng = random.Random(f"{seed}:{stream}" if stream else seed)
        self._used_starts: set[tuple[int, int]] = set()

    async def build(self, prompt_tokens: int, context_tokens: int = 0, no_cache: bool = False) -> tuple[str, str]:
        """``(context_text, prompt_text)``; with ``no_cache`` the prompt ends in a unique suffix."""
        suffix = f" {uuid.UUID(int=self._rng.getrandbits(128), version=4)}" if no_cache else ""
        suffix_tokens = len(await self._codec.encode(suffix)) if suffix else 0
        text_tokens = max(0, prompt_tokens - suffix_tokens)
        needed = text_tokens + context_tokens
        ids = self._ids
        if len(ids) <= needed:
            ids = ids * (needed // len(ids) + 2)
        start = self._fresh_start(len(ids) - needed, needed)
        chosen = ids[start : start + needed]
        context = await self._codec.decode(chosen[:context_tokens]) if context_tokens > 0 else ""
        prompt = await self._codec.decode(chosen[context_tokens:]) + suffix
        return context, prompt

    def _fresh_start(self, limit: int, length: int) -> int:
        start = self._rng.randrange(0, max(1, limit))
        for _ in range(100):
            if (start, length) not in self._used_starts:
                break
            start = self._rng.randrange(0, max(1, limit))
        self._used_starts.add((start, length))
        return start


def chat_messages(context: str, prompt: str) -> list[dict[str, str]]:
    """A system message with the context (only when there is one), then the user prompt."""
    messages = [{"role": "system", "content": context}] if context else []
    messages.append({"role": "user", "content": prompt if prompt.strip() else CONTEXT_PROBE})
    return messages

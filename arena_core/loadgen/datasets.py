"""``vllm bench serve``'s two datasets, sampled exactly as vLLM 0.33 samples them (runners.md B.6, B.7).

``random``: lengths drawn uniformly around the asked ones (range ratio), each prompt a run of
consecutive vocabulary ids from a random offset, decoded and re-encoded until it has exactly the
drawn length (at most 10 tries), all from ``numpy.random.default_rng(seed)`` in vLLM's draw order.

``sharegpt``: conversations with at least two turns, shuffled with ``random.seed(seed)``; the
first turn is the prompt and the second's length the expected output; pruned by vLLM's rules;
oversampled with seeded random choices when too few survive.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from attrs import frozen

from arena_core.errors import UsageError
from arena_core.loadgen.codec import DatasetCodec

MAX_RETRIES = 10
MIN_LEN, MAX_PROMPT_LEN, MAX_TOTAL_LEN = 4, 1024, 2048


@frozen(kw_only=True)
class SampledRequest:
    prompt: str
    prompt_len: int
    expected_output_len: int
    request_id: str


async def _decode_to_length(codec: DatasetCodec, ids: list[int], target: int, rng: np.random.Generator, vocab_size: int) -> tuple[str, list[int]]:
    """Decode, re-encode, then pad with random ids or cut, until ``target`` tokens (10 tries)."""
    tries = MAX_RETRIES
    while True:
        prompt = await codec.decode(ids)
        ids = await codec.encode(prompt)
        if tries <= 0 or len(ids) == target:
            return prompt, ids
        if len(ids) < target:
            ids.extend(rng.integers(0, vocab_size, size=target - len(ids)).tolist())
        else:
            ids = ids[:target]
        tries -= 1


def random_lengths(rng: np.random.Generator, *, count: int, input_len: int, output_len: int, range_ratio: float) -> tuple[np.ndarray, np.ndarray]:
    """The random dataset's prompt and output lengths, drawn uniformly within ``range_ratio`` of
    the asked ones, in vLLM's order (all inputs, then all outputs). The step simulator draws them
    with this same function, so a prediction serves the lengths a run sends."""
    input_lens = rng.integers(math.floor(input_len * (1 - range_ratio)), math.ceil(input_len * (1 + range_ratio)) + 1, size=count)
    output_low, output_high = max(math.floor(output_len * (1 - range_ratio)), 1), max(math.ceil(output_len * (1 + range_ratio)), 1)
    return input_lens, rng.integers(output_low, output_high + 1, size=count)


async def sample_random(
    codec: DatasetCodec, *, count: int, input_len: int, output_len: int, range_ratio: float, seed: int, prefix_len: int = 0
) -> list[SampledRequest]:
    if not 0.0 <= range_ratio < 1.0:
        raise UsageError(f"range ratio must be at least 0 and below 1, got {range_ratio}")
    vocab_size, special_ids, special_added = await codec.vocabulary()
    rng = np.random.default_rng(seed)
    real_input = max(0, input_len - special_added)
    if prefix_len + math.floor(real_input * (1 - range_ratio)) < 1:
        raise UsageError(f"input length {input_len} is too small for range ratio {range_ratio}")
    input_lens, output_lens = random_lengths(rng, count=count, input_len=real_input, output_len=output_len, range_ratio=range_ratio)
    offsets = rng.integers(0, vocab_size, size=count)
    allowed = np.array(sorted(set(range(vocab_size)) - set(special_ids)))
    prefix: list[int] = []
    if prefix_len > 0:
        drawn = allowed[rng.integers(0, len(allowed), size=prefix_len)].tolist()
        _, prefix = await _decode_to_length(codec, drawn, prefix_len, rng, vocab_size)
    samples = []
    for i in range(count):
        length = int(input_lens[i])
        inner = allowed[(int(offsets[i]) + i + np.arange(length)) % len(allowed)].tolist()
        prompt, ids = await _decode_to_length(codec, prefix + inner, prefix_len + length, rng, vocab_size)
        samples.append(SampledRequest(prompt=prompt, prompt_len=len(ids), expected_output_len=int(output_lens[i]), request_id=str(i)))
    return samples


def two_turn_conversations(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries vLLM keeps: a ``conversations`` list of at least two turns."""
    return [entry for entry in records if isinstance(entry.get("conversations"), list) and len(entry["conversations"]) >= 2]


async def sample_sharegpt(
    codec: DatasetCodec, conversations: Sequence[dict[str, Any]], *, count: int, seed: int, output_len: int | None = None
) -> list[SampledRequest]:
    """vLLM's ShareGPT sampling over ``conversations`` (already filtered to two or more turns)."""
    if not conversations:
        raise UsageError("the ShareGPT data holds no conversation with two turns")
    shuffled = list(conversations)
    random.seed(seed)
    random.shuffle(shuffled)
    samples: list[SampledRequest] = []
    for entry in shuffled:
        if len(samples) >= count:
            break
        prompt, completion = entry["conversations"][0]["value"], entry["conversations"][1]["value"]
        prompt_len = len(await codec.encode_with_special(prompt))
        expected = len(await codec.encode_with_special(completion)) if output_len is None else output_len
        too_short = prompt_len < MIN_LEN or (output_len is None and expected < MIN_LEN)
        if too_short or prompt_len > MAX_PROMPT_LEN or prompt_len + expected > MAX_TOTAL_LEN:
            continue
        samples.append(SampledRequest(prompt=prompt, prompt_len=prompt_len, expected_output_len=expected, request_id=str(len(samples))))
    if not samples:
        raise UsageError("no ShareGPT conversation passed vLLM's length rules (prompt 4-1024 tokens, total <= 2048)")
    if len(samples) < count:
        random.seed(seed)
        kept = len(samples)
        samples += [
            SampledRequest(prompt=c.prompt, prompt_len=c.prompt_len, expected_output_len=c.expected_output_len, request_id=str(kept + i))
            for i, c in enumerate(random.choice(samples[:kept]) for _ in range(count - kept))
        ]
    return samples

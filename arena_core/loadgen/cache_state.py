"""What the server's prefix cache did in a workload, beside what the workload intends.

A prefix-cache hit turns a long prefill into almost none, so a TTFT means little without it.
Every request records the prompt tokens the server says it took from its cache
(``RequestRecord.cached_prompt_tokens_server``); a workload's measured hit rate is their sum
over the prompt tokens of the requests that said it. The intended rate counts what a workload
means to be reused: a conversation's earlier turns (the previous turn's prompt and answer),
llama-benchy's context phase before its inference phase. The nine standard workloads otherwise
intend none.

An engine that caches whole blocks (vLLM: 16 tokens on a GPU, 128 on its CPU build, as its
``vllm:cache_config_info`` says) finds only the whole blocks of an intended prefix: the intended
range is counted in whole blocks of the server's size (:func:`cache_block_tokens`).

The chat template's opening (``<bos><start_of_turn>user`` and the like) is the same in every
request, so an engine that caches token by token (llama.cpp) finds it even in distinct prompts;
an engine that caches whole blocks does not. That reuse is neither intended
nor accidental: up to the template's own size per request (what the server's usage adds to a
message, measured by the session) it is set aside before the two rates are compared.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from arena_core.types import RequestRecord

#: The most the measured hit rate may stray from the intended one (5 points), beyond the
#: template's share, before the result is invalid.
CACHE_RATE_TOLERANCE = 0.05


#: A /metrics page is read within this long and up to this size, or not at all: a server that
#: trickles bytes, or sends without end, must not stall a session or the telemetry sampler.
METRICS_DEADLINE_S = 2.0
METRICS_MAX_BYTES = 8 * 2**20
#: The largest cache block believed (a page's label is outside data).
MOST_BLOCK_TOKENS = 4096
_BLOCK_SIZE = re.compile(r'^vllm:cache_config_info\{[^}\n]*\bblock_size="(\d{1,6})"', re.MULTILINE)


def cache_block_tokens(metrics_page: str) -> int:
    """How many tokens the server caches at once: the ``block_size`` of vLLM's
    ``vllm:cache_config_info``; 1 for a server that states none (llama.cpp caches token by token)."""
    found = _BLOCK_SIZE.search(metrics_page)
    size = int(found.group(1)) if found else 1
    return size if 1 <= size <= MOST_BLOCK_TOKENS else 1


def intended_cached_tokens(records: Sequence[RequestRecord], block: int = 1) -> list[tuple[int, int]]:
    """Per record, the fewest and the most prompt tokens its workload means the server to find in
    its cache. A conversation's turn intends the previous turn's prompt, and may also find the
    previous answer: an engine that keeps the tokens it generated (vLLM) finds them again where
    the answer re-tokenises the same, one that keeps the prompt only (llama.cpp, measured on the
    embedded server: 63 of a 68-token first turn, none of its answer) does not. Both counted in
    whole blocks of ``block`` tokens, as the server finds them."""
    by_key = {(r.run_index, r.request_index, r.turn_index, r.phase): r for r in records}
    intended = []
    for record in records:
        least = most = 0
        if record.turn_index > 0:
            previous = by_key.get((record.run_index, record.request_index, record.turn_index - 1, record.phase))
            if previous is not None and previous.ok:
                least = previous.prompt_tokens_server or 0
                most = least + (previous.completion_tokens_server or 0)
        elif record.phase == "inference":  # the context the context phase sent first
            context = by_key.get((record.run_index, record.request_index, 0, "context"))
            least = most = context.expected_prompt_tokens or 0 if context is not None and context.ok else 0
        prompt = record.prompt_tokens_server or 0
        intended.append((min(least, prompt) // block * block, min(most, prompt) // block * block))
    return intended


def cache_metrics(records: Sequence[RequestRecord], *, template_tokens: int = 0, block: int = 1) -> dict[str, float]:
    """The measured and intended hit rates of ``records`` (the measured, successful ones), and
    the template's share set aside; empty when no request said what it took from the cache.
    ``block``: the server's cache block (:func:`cache_block_tokens`)."""
    told = [
        (r, i) for r, i in zip(records, intended_cached_tokens(records, block)) if r.ok and r.cached_prompt_tokens_server is not None and r.prompt_tokens_server
    ]
    if not told:
        return {}
    # the template's opening, found beyond the most that was intended, is set aside request by request
    template = sum(min(template_tokens, max(0, (r.cached_prompt_tokens_server or 0) - most)) for r, (_, most) in told)
    rates = cache_rates(
        prompt=sum(r.prompt_tokens_server or 0 for r, _ in told),
        cached=sum(r.cached_prompt_tokens_server or 0 for r, _ in told),
        intended=sum(least for _, (least, _) in told),
        intended_most=sum(most for _, (_, most) in told),
        template=template,
        requests=len(told),
    )
    if block > 1:
        rates["prompt_cache_block_tokens"] = float(block)
    return rates


def cache_rates(*, cached: int, intended: int, template: int, prompt: int, requests: int, intended_most: int | None = None) -> dict[str, float]:
    """The cache metrics of a result from its sums (the open loop keeps sums, not records)."""
    if not requests or prompt <= 0:
        return {}
    return {
        "prompt_cache_hit_rate": cached / prompt,
        "prompt_cache_hit_rate_intended": intended / prompt,
        "prompt_cache_hit_rate_intended_most": (intended if intended_most is None else intended_most) / prompt,
        "prompt_cache_template_rate": template / prompt,
        "prompt_cache_requests": float(requests),
    }


def intended_range(metrics: Mapping[str, float | None]) -> str:
    """ "0.0%", or "52.0–64.6%" where a workload may find its answers in the cache too."""
    least = metrics.get("prompt_cache_hit_rate_intended") or 0.0
    most = metrics.get("prompt_cache_hit_rate_intended_most")
    most = least if most is None else most
    said = f"{least:.1%}" if most - least < 0.0005 else f"{least:.1%}–{most:.1%}"
    block = metrics.get("prompt_cache_block_tokens")
    return said + (f" in whole blocks of {block:.0f} tokens" if block and block > 1 else "")


def cache_problem(metrics: Mapping[str, float | None]) -> str:
    """Why the cache state makes a result invalid: the measured rate, less the template's share,
    more than 5 points outside the intended range (empty when it is not)."""
    measured, least = metrics.get("prompt_cache_hit_rate"), metrics.get("prompt_cache_hit_rate_intended")
    if measured is None or least is None:
        return ""
    most = metrics.get("prompt_cache_hit_rate_intended_most")
    most = least if most is None else most
    template = metrics.get("prompt_cache_template_rate") or 0.0
    if least - CACHE_RATE_TOLERANCE <= measured - template <= most + CACHE_RATE_TOLERANCE:
        return ""
    return (
        f"the server took {measured:.1%} of the prompt tokens from its cache where the workload intends {intended_range(metrics)}"
        + (f" (and the chat template's opening explains {template:.1%})" if template else "")
        + ": a TTFT measured so does not say what it claims"
    )

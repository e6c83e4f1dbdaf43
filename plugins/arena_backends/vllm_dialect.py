"""What vLLM says of itself in its start-up log, read as the ``vllm`` backend's own dialect.

Checked against a real vLLM 0.32 (CPU build) and the GPU builds' lines (the recorded logs in
``tests/fixtures/vllm_real/``, held by ``tests/test_vllm_recorded.py``). Every figure is the last
one the log states, bounded: a log is a file another program wrote.

* the version: "vLLM API server version 0.20.1" (printed as the server starts), or from 0.3x on
  the start-up banner's "version 0.32.0";
* the model's memory: on a GPU "Model loading took 1.53 GiB memory and 2.1 seconds" (the
  weights); on the CPU build "... 2.02 GiB memory was consumed by non-kv usages" (the worker's
  resident memory once warmed up: weights and runtime, everything but the KV cache) when vLLM
  sized its KV cache itself;
* the KV cache: "Available KV cache memory: 88.25 GiB" (GPU), "Auto set (7.50/23.47) GiB for KV
  cache" or "Explicitly set (2.00/23.47) GiB for KV cache" (CPU), and "GPU KV cache size:
  1,234,567 tokens" / "CPU KV cache size: ..." (its tokens).
"""

from __future__ import annotations

import re

from arena_core import MetricsDialect

#: What vLLM's ``/metrics`` calls what Arena reads (checked against the real page of 0.32's CPU
#: build, ``tests/fixtures/vllm_real/metrics.txt``, and the GPU builds' names).
VLLM_METRICS = MetricsDialect(
    prefix="vllm:",
    kv_cache_usage=("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),  # >= 0.10 (a fraction despite the name), < 0.10
    requests_running=("vllm:num_requests_running",),
    requests_waiting=("vllm:num_requests_waiting",),
    prefix_cache_hits="vllm:prefix_cache_hits_total",
    prefix_cache_lookups=("vllm:prefix_cache_queries_total",),
    prefix_cache_hit_rate="vllm:gpu_prefix_cache_hit_rate",  # < 0.10
    generated_tokens="vllm:generation_tokens_total",
    prompt_tokens="vllm:prompt_tokens_total",
    spec_decode_drafts="vllm:spec_decode_num_drafts_total",
    spec_decode_draft_tokens="vllm:spec_decode_num_draft_tokens_total",
    cache_config_info="vllm:cache_config_info",
)

#: A figure read from the log is believed up to this many GiB (a machine's memory) or tokens.
MOST_GIB = 1e5
MOST_TOKENS = 1e11

#: "vLLM API server version 0.20.1" (to 0.2x), or the start-up banner's "█  version 0.32.0" (0.3x)
_VERSION = re.compile(r"(?:vLLM API server version|█\s+version) ([0-9][\w.+-]{0,39})")
_GPU_MODEL_MEMORY = re.compile(r"Model loading took ([\d.]+) ?GiB")
_CPU_NON_KV_MEMORY = re.compile(r"([\d.]+) GiB\s+memory was consumed by non-kv usages")
_KV_CACHE_GIB = re.compile(r"(?:Available KV cache memory:\s*([\d.]+) ?GiB|(?:Auto|Explicitly) set \(([\d.]+)/[\d.]+\) GiB for KV cache)")
_KV_TOKENS = re.compile(r"\b(?:GPU|CPU|XPU|TPU)(?: \+ host)? KV cache size: ([\d,]{1,20}) tokens")

#: What a card says the model-memory figure is, by where it came from.
GPU_SAID = "vLLM's log (Model loading took ... GiB: the weights on the GPU)"
CPU_SAID = "vLLM's log (... GiB consumed by non-kv usages: the CPU worker's weights and runtime, once warmed up)"


def _last(pattern: re.Pattern[str], text: str, most: float) -> float | None:
    for found in reversed(pattern.findall(text)):
        groups = found if isinstance(found, tuple) else (found,)
        value = next((group for group in groups if group), "")
        try:
            number = float(value.replace(",", ""))
        except ValueError:
            continue
        if 0 <= number <= most:
            return number
    return None


def log_facts(text: str) -> dict[str, object]:
    """The facts vLLM's start-up log states (each absent where it states none)."""
    facts: dict[str, object] = {}
    if versions := _VERSION.findall(text):
        facts["version"] = versions[-1]
    gpu = _last(_GPU_MODEL_MEMORY, text, MOST_GIB)
    cpu = _last(_CPU_NON_KV_MEMORY, text, MOST_GIB)
    if gpu is not None:
        facts.update(model_memory_gib=gpu, model_memory_source=GPU_SAID)
    elif cpu is not None:
        facts.update(model_memory_gib=cpu, model_memory_source=CPU_SAID)
    if (kv := _last(_KV_CACHE_GIB, text, MOST_GIB)) is not None:
        facts["kv_cache_memory_gib"] = kv
    if (tokens := _last(_KV_TOKENS, text, MOST_TOKENS)) is not None:
        facts["kv_cache_tokens"] = tokens
    return facts

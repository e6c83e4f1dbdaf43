"""The vllm backend against a stand-in ``vllm`` (the real one needs a GPU): command line from the
model and hardware, health wait, memory figures from the log, a clean stop."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import attrs
import pytest

from arena_core import ArenaHooks, BackendRequest, make_plugin_manager
from arena_core.testing import run_cli

STAND_IN = Path(__file__).resolve().parent / "stand_ins" / "vllm_serve.py"


@pytest.fixture
def stand_in_vllm(tmp_path, monkeypatch):
    wrapper = tmp_path / "bin" / "vllm"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STAND_IN}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}:{__import__('os').environ['PATH']}")
    return wrapper


@pytest.mark.slow
def test_vllm_backend_starts_reads_its_log_and_stops(stand_in_vllm, tmp_path, monkeypatch):
    import os

    for name in [name for name in os.environ if name.startswith(("VLLM_", "OMP_"))]:
        monkeypatch.delenv(name)
    # settings the server inherits: said on the card, but never a secret's, nor a value that is no text
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "2")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("OMPX_NOT_OPENMP", "1")
    monkeypatch.setenv("VLLM_API_KEY", "sk-inherited-secret")
    monkeypatch.setenv("VLLM_LOGGING_PREFIX", "\x1b[2J")
    registry = ArenaHooks(make_plugin_manager(autoload=False, strict=True)).registry
    request = BackendRequest(
        model=registry.get("models", "qwen3.5-0.8b"),
        run_dir=tmp_path / "run",
        max_context_tokens=4096,
        max_concurrency=10,
        hardware=registry.get("hardware", "gb10"),
        server_args=("--enforce-eager", "--max-num-batched-tokens=4096"),
    )
    backend = registry.get("backends", "vllm").create(request)
    endpoint = backend.start()
    try:
        assert endpoint.model == "qwen3.5-0.8b" and endpoint.base_url.startswith("http://127.0.0.1:")
        facts = backend.facts
        assert facts["model_memory_gib"] == 1.53 and facts["kv_cache_memory_gib"] == 88.25 and facts["kv_cache_tokens"] == 1234567
        command = facts["command"]
        assert command[1:3] == ["serve", "Qwen/Qwen3.5-0.8B"]
        assert command[command.index("--host") + 1] == "127.0.0.1"  # loopback only
        # on a GB10, the seed's published settings (workloads.md): 0.85 of the memory, an FP8 KV
        # cache, no prefix caching, a 131,072-token context
        assert command[command.index("--gpu-memory-utilization") + 1] == "0.85"
        assert command[command.index("--kv-cache-dtype") + 1] == "fp8" and "--no-enable-prefix-caching" in command
        assert command[command.index("--max-model-len") + 1] == "131072"
        assert facts["kv_cache_dtype"] == "fp8" and facts["prefix_caching"] is False
        assert command[-2:] == ["--enforce-eager", "--max-num-batched-tokens=4096"]  # the user's --server-arg, after Arena's own
        assert facts["environment"] == {"OMP_NUM_THREADS": "1", "VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_SERVER_DEV_MODE": "1"}
        assert "sk-inherited-secret" not in json.dumps(facts, default=str)
    finally:
        backend.stop()
    assert backend.process._process.poll() is not None  # stopped, with its process group
    # elsewhere vLLM's own defaults, with room for the OS on unified memory, and the context the workloads need
    elsewhere = registry.get("backends", "vllm").create(attrs.evolve(request, hardware=registry.get("hardware", "m3-ultra")))
    assert (elsewhere.defaults.memory_utilization, elsewhere.defaults.kv_cache_dtype, elsewhere.max_model_len) == (0.80, "auto", 4096)


def test_a_server_arg_that_would_undo_arenas_own_settings_or_carry_a_secret_is_refused(tmp_path):
    """``--server-arg`` goes to a server Arena starts, after its own arguments; one that sets
    what Arena sets itself (and its runs and predictions read), that names a secret, or that is
    no text, is one line naming it -- before anything starts."""
    from arena_core import UsageError

    manager = make_plugin_manager(autoload=False, strict=True)
    registry = ArenaHooks(manager).registry
    request = BackendRequest(model=registry.get("models", "qwen3.5-0.8b"), run_dir=tmp_path, max_context_tokens=4096, max_concurrency=4)
    for backend, given, said in (
        ("vllm", "--max-num-seqs=8", "--server-arg --max-num-seqs: the vllm backend sets --max-num-seqs itself"),
        ("vllm", "--max_num_seqs", "--server-arg --max_num_seqs: the vllm backend sets --max_num_seqs itself"),
        ("llama-cpp", "--parallel", "--server-arg --parallel: the llama-cpp backend sets --parallel itself"),
        ("vllm", "--api-key=sk-1", "--server-arg --api-key: a secret on a command line"),
        ("llama-cpp", "--hf-token", "--server-arg --hf-token: a secret on a command line"),
        ("vllm", "--x\x1b[2J", "not an argument"),
    ):
        model = registry.get("models", "gemma-3-270m" if backend == "llama-cpp" else "qwen3.5-0.8b")
        with pytest.raises(UsageError, match=r"^" + __import__("re").escape(said) if said.startswith("--") else said):
            registry.get("backends", backend).create(attrs.evolve(request, model=model, server_args=(given,)))
    refused = run_cli(manager, ["run", "--base-url", "http://127.0.0.1:9", "--server-arg=--enforce-eager", "--workloads", "chat"])
    assert (
        refused.exit_code == 2
        and "--server-arg passes arguments to a server Arena starts; the server at http://127.0.0.1:9 was started with its own" in refused.stderr
    )


@pytest.mark.slow
def test_arena_run_with_the_vllm_backend(stand_in_vllm, tmp_path):
    pm = make_plugin_manager(autoload=False, strict=True)
    tokenizer = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"
    result = run_cli(
        pm,
        [
            "run",
            "qwen3.5-0.8b",
            "--backend",
            "vllm",
            "--hardware",
            "gb10",
            "--workloads",
            "chat",
            "--scale",
            "0.02",
            "--tokenizer",
            str(tokenizer),
            "--output",
            str(tmp_path),
        ],
    )
    # the stand-in decodes faster than a GB10 could serve this model: measured, stored, and
    # flagged by the physical ceiling -- exit 4 (finished, results invalid)
    assert result.exit_code == 4, result.stderr
    assert "exceeds the physical ceiling" in result.stdout and "1 of 1 results are invalid (chat)" in result.stderr
    assert "Qwen3.5-0.8B (BF16) on NVIDIA DGX Spark (GB10) (vllm, native), scaled x0.02" in result.stdout
    (run_dir,) = [p for p in tmp_path.iterdir() if (p / "manifest.json").is_file()]
    assert "Model loading took 1.53 GiB" in (run_dir / "server.log").read_text()


@pytest.mark.slow
def test_a_server_that_dies_while_starting_is_no_usage_error(tmp_path, monkeypatch):
    """A crashed server is not bad input: its own error and exit status (6), naming the log."""
    from arena_core import ToolFailed

    wrapper = tmp_path / "bin" / "vllm"
    wrapper.parent.mkdir()
    # as vLLM dies: a traceback, its error line, then a goodbye after it
    said = ["INFO starting", "Traceback (most recent call last):", '  File "api_server.py", line 3, in <module>', "RuntimeError: CUDA error: out of memory"]
    wrapper.write_text("#!/bin/sh\n" + "".join(f"echo '{line}' >&2\n" for line in [*said, "INFO shutting down", "INFO bye"]) + "exit 3\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}:{__import__('os').environ['PATH']}")
    result = run_cli(
        make_plugin_manager(autoload=False, strict=True), ["run", "qwen3.5-0.8b", "--backend", "vllm", "--hardware", "gb10", "--output", str(tmp_path / "out")]
    )
    assert result.exit_code == ToolFailed.exit_code == 6
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("arena: error: the server exited with status 3 while starting: RuntimeError: CUDA error: out of memory (its log: "), line
    assert "Traceback" not in line and "shutting down" not in line
    log = Path(line.rsplit("(its log: ", 1)[1].rstrip(")"))
    assert log.is_file() and log.parent.parent == tmp_path / "out" and "INFO bye" in log.read_text()  # kept, in the run's folder
    assert json.loads((log.parent / "manifest.json").read_text())["status"] == "failed"

"""Measuring a server that is already running, as if from another machine: the rig listens on
every interface and Arena reaches it by this machine's host name, which Arena takes for another
machine (a name is not resolved to decide where a server runs)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from arena_backends.server_dialects import LLAMA_CPP_DIALECT, VLLM_DIALECT
from arena_core import ServerAnswers, ServerDialect
from arena_core.run.attach import what_the_server_says
from arena_core.testing import arena, rig_run_argv
from arena_core.testing.fake_server import FakeServerProcess
from arena_core.types.runners import server_is_here

#: What the built-in backends' servers say of themselves beyond the OpenAI API.
DIALECTS = (VLLM_DIALECT, LLAMA_CPP_DIALECT)

TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"
RIG = ["--host", "0.0.0.0", "--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "1"]


@pytest.mark.parametrize(
    ("url", "here"),
    [(None, True), ("http://127.0.0.1:8000", True), ("http://127.0.0.2:8000", True), ("http://[::1]:8000", True), ("http://localhost:8000", True)]
    + [("http://spark.local:8000", False), ("http://10.0.0.5:8000", False), ("https://api.example.com", False)],
)
def test_where_a_server_runs(url, here):
    assert server_is_here(url) is here


def remote(url: str) -> str:
    return url.replace("0.0.0.0", socket.gethostname())


def run_remote(tmp_path: Path, *extra: str, env: dict | None = None, rig_args: list[str] = RIG) -> tuple[subprocess.CompletedProcess, dict, dict]:
    with FakeServerProcess(rig_args) as rig:
        argv = rig_run_argv(
            remote(rig.url), tmp_path / "store", tokenizer=TOKENIZER, workloads="chat,monday-peak", scale="0.02", extra=["qwen3.5-0.8b", *extra]
        )
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    (run_dir,) = [p for p in (tmp_path / "store").iterdir() if (p / "manifest.json").is_file()]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    results = {name: json.loads((run_dir / "workloads" / name / "result.json").read_text()) for name in manifest["workloads"]}
    return done, manifest, results


@pytest.mark.slow
def test_a_remote_server_is_judged_on_its_own_machine_not_the_clients(tmp_path):
    """Unnamed, the server's machine is not this one: no ceiling from the client's bandwidth, no
    memory figure read from the client, and the output says how to name it."""
    done, manifest, results = run_remote(tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert manifest["hardware"] == "unnamed" and manifest["model_memory"] is None
    assert manifest["telemetry"]["notes"] == ["the server runs on another machine: its memory and power are not read from here (its /metrics are)"]
    for result in results.values():
        assert "decode_ceiling_tps" not in result["metrics"] and result["metrics"]["peak_memory_gb"] is None
    said = " ".join(done.stdout.split())  # the summary is wrapped to 80 columns in a pipe
    assert "name the server's machine with --hardware" in said and "on the server's machine (not named)" in said
    assert "expected: 26 requests" in done.stderr  # said first: chat a warm-up run and one run of 10, monday-peak 6
    # before the first request: what the server (vLLM-like) says of its machine, and the profiles to name
    assert "the server says: vLLM on a GPU (a KV cache of 32,768 tokens in GPU memory, gpu_memory_utilization=0.9" in done.stderr
    assert "name its machine with --hardware (gb10, h100-sxm" in done.stderr


#: llama.cpp's /props as this project's llama-server build answers it (trimmed).
LLAMA_CPP_PROPS = {"default_generation_settings": {"n_ctx": 2048}, "total_slots": 4, "model_ftype": "Q4_K - Medium", "build_info": "b0-unknown"}
VLLM_GPU = 'vllm:cache_config_info{block_size="16",cache_dtype="auto",gpu_memory_utilization="0.85",num_gpu_blocks="9000",cpu_kvcache_space_bytes="None"} 1.0\n'


@pytest.mark.parametrize(
    ("props", "page", "said"),
    [
        (None, VLLM_GPU, "vLLM on a GPU (a KV cache of 144,000 tokens in GPU memory, gpu_memory_utilization=0.85, from vllm:cache_config_info)"),
        (None, VLLM_GPU.replace('"None"', '"4294967296"'), "vLLM on a CPU (vllm:cache_config_info: cpu_kvcache_space_bytes=4294967296)"),
        (LLAMA_CPP_PROPS, "llamacpp:prompt_tokens_total 0\n", "llama.cpp (build b0-unknown, 4 slots), which does not report its device"),
        ({"total_slots": "many", "build_info": "x" * 500}, None, f"llama.cpp (build {'x' * 60}…, 0 slots), which does not report its device"),
        (None, VLLM_GPU.replace('num_gpu_blocks="9000"', 'num_gpu_blocks="1e99"'), ""),  # a count that is no count says nothing
        ({"error": "not found"}, "", ""),
    ],
    ids=["vllm-gpu", "vllm-cpu", "llama-cpp", "llama-cpp-hostile", "vllm-nonsense", "nothing"],
)
def test_what_a_server_says_of_its_machine(props, page, said):
    answers = ServerAnswers(pages={"/props": props} if props else {}, metrics_page=page or "")
    assert what_the_server_says(answers, DIALECTS) == said


def test_a_new_engines_dialect_says_what_its_machine_is_cleaned_and_cut():
    """A third party's dialect is read beside the built-in ones, its line checked like a server's."""
    loud = ServerDialect(pages=("/server_info",), machine=lambda answers: "\x1b[2J" + str(answers.pages["/server_info"].get("device")) * 100)
    answers = ServerAnswers(pages={"/server_info": {"device": "H100 "}})
    said = what_the_server_says(answers, (VLLM_DIALECT, loud, LLAMA_CPP_DIALECT))
    assert said.startswith("[2JH100 H100") and "\x1b" not in said and len(said) == 200


@pytest.mark.slow
def test_a_named_remote_machine_is_the_one_judged(tmp_path):
    # tokens 20 ms apart: at 1 ms a loaded machine's client read a whole short answer at once
    # (chat's 10 answers gave no decode span, so no decode speed to set beside the ceiling)
    done, manifest, results = run_remote(tmp_path, "--hardware", "gb10", rig_args=[*RIG[:-1], "20"])
    assert manifest["hardware"] == "gb10" and manifest["hardware_profile"]["memory_bandwidth_gbs"] == 273
    assert manifest["telemetry"]["probes"] == []  # gb10's probes read this machine, not the server's
    assert all("decode_ceiling_tps" in r["metrics"] for r in results.values())
    assert "model memory: not measured (the server was already running" in " ".join(done.stdout.split())


@pytest.mark.slow
def test_the_watchdog_never_stops_a_remote_run_for_this_machines_memory(tmp_path):
    """A margin larger than any machine's memory stops a run whose server runs here at once
    (test_telemetry.py); a server on another machine is not affected by this one's memory."""
    env = {**os.environ, "ARENA_MEMORY_MARGIN_GB": "1000000"}
    done, manifest, _ = run_remote(tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "memory watchdog" not in done.stderr and manifest["status"] == "completed"


VLLM_LIKE = [*RIG[2:], "--no-vocabulary"]  # vLLM: /tokenize, but no vocabulary size in /v1/models


def stored_run(output: Path) -> Path | None:
    found = [p for p in output.iterdir() if (p / "manifest.json").is_file()] if output.is_dir() else []
    return found[0] if found else None


def without_tokenizer(argv: list[str]) -> list[str]:
    at = argv.index("--tokenizer")
    return argv[:at] + argv[at + 2 :]


@pytest.mark.slow
def test_what_a_suite_needs_is_asked_before_its_first_request(tmp_path):
    """A vLLM-like server reports no vocabulary and its model's tokenizer is nowhere on this
    machine, so the random-dataset workload needs one given: the run says so, naming the model,
    before it measures chat, and leaves no half run behind."""
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "empty-cache")}
    with FakeServerProcess(VLLM_LIKE) as rig:
        argv = without_tokenizer(rig_run_argv(rig.url, tmp_path / "store", tokenizer=TOKENIZER, workloads="chat,monday-peak", scale="0.02"))
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
        chats = [e for e in rig.stop() if e["path"] == "/v1/chat/completions" and e.get("stream")]
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert "monday-peak:" in last and "(fake-org/fake-model)" in last and "--tokenizer" in last and "Traceback" not in done.stderr
    assert chats == [] and stored_run(tmp_path / "store") is None


def hub_cache_with(tmp_path: Path, hub_id: str) -> Path:
    """A Hugging Face cache holding ``hub_id``'s tokenizer.json, laid out as huggingface_hub does."""
    revision = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / f"models--{hub_id.replace('/', '--')}"
    (repo / "snapshots" / revision).mkdir(parents=True)
    (repo / "snapshots" / revision / "tokenizer.json").write_bytes((TOKENIZER / "tokenizer.json").read_bytes())
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    return tmp_path / "hub"


@pytest.mark.parametrize("tokenizer_info", [False, True], ids=["named-in-v1-models", "named-in-tokenizer-info"])
@pytest.mark.slow
def test_the_tokenizer_of_the_model_a_server_names_is_found_on_this_machine(tmp_path, tokenizer_info):
    """vLLM names its model (``/v1/models`` root, the opt-in ``/tokenizer_info``'s name_or_path)
    but not its vocabulary size: a copy of that model's tokenizer in the local Hugging Face cache
    gives it, so the random dataset runs with no --tokenizer, and the result says where it came from."""
    cached = "org-a/tiny-model"
    # with /tokenizer_info, /v1/models lists an alias that is in no cache: the tokenizer's name is the one found
    args = [*VLLM_LIKE, "--model", "org-a/served-alias", "--tokenizer-info", cached] if tokenizer_info else [*VLLM_LIKE, "--model", cached]
    served_cache = hub_cache_with(tmp_path, cached)
    env = {**os.environ, "HF_HUB_CACHE": str(served_cache)}
    with FakeServerProcess(args) as rig:
        argv = without_tokenizer(rig_run_argv(remote(rig.url), tmp_path / "store", tokenizer=TOKENIZER, workloads="monday-peak", scale="0.02"))
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    session = json.loads((stored_run(tmp_path / "store") / "workloads" / "monday-peak" / "session.json").read_text())
    assert session["tokenizer"].endswith(
        f"; vocabulary from {served_cache}/models--org-a--tiny-model/snapshots/0123456789abcdef0123456789abcdef01234567/tokenizer.json"
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_a_resumed_run_takes_files_given_again_and_refuses_what_would_change_it(tmp_path):
    """The server dies in the second workload; the run is resumed against it (restarted on the same
    port) with another --tokenizer, which the rest of the run uses, and with the --set of its start;
    --exact-output and --set, which would change what is measured, are refused with the reason."""
    port, store = str(free_port()), tmp_path / "store"
    with FakeServerProcess([*RIG[2:], "--port", port, "--fault", "exit", "--fail-every", "22"]):
        first = subprocess.run(
            rig_run_argv(f"http://127.0.0.1:{port}", store, tokenizer=TOKENIZER, workloads="chat,monday-peak", scale="0.02", extra=["--set", "seed=7"]),
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert first.returncode == 5, first.stderr[-2000:]
    run_dir = stored_run(store)
    assert run_dir is not None
    copy = tmp_path / "tokenizer.json"
    copy.write_bytes((TOKENIZER / "tokenizer.json").read_bytes())
    resume = ["run", "--resume", run_dir.name, "--output", str(store), "--tokenizer", str(copy)]
    with FakeServerProcess([*RIG[2:], "--port", port]):
        refused = subprocess.run([sys.executable, "-m", "arena_core", *resume, "--exact-output"], capture_output=True, text=True, timeout=300)
        refused_set = subprocess.run([sys.executable, "-m", "arena_core", *resume, "--set", "seed=8"], capture_output=True, text=True, timeout=300)
        done = subprocess.run([sys.executable, "-m", "arena_core", *resume], capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "--exact-output would change what it measures" in refused.stderr
    assert done.returncode == 4, done.stderr[-2000:]  # chat keeps the failures of the server's death
    assert "[2/2] monday-peak" in done.stderr and ", valid (" in done.stderr.splitlines()[-2]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "completed" and manifest["tokenizer"] == str(copy)
    # the rest of the run is measured as it was started: the --set of the first attempt still holds
    assert refused_set.returncode == 2 and "--set would change what it measures" in refused_set.stderr
    assert json.loads((run_dir / "workloads" / "monday-peak" / "result.json").read_text())["custom"] == "seed=7"


@pytest.mark.slow
def test_a_changed_shape_is_labelled_custom_and_kept_off_the_standard_leaderboard(tmp_path):
    """``--set`` (and a config file's ``[workloads.chat]``) changes chat's shape: the result says how,
    the card's headline gives the concurrency measured, and the standard leaderboard leaves it out."""
    with FakeServerProcess(RIG[2:]) as rig:
        argv = rig_run_argv(rig.url, tmp_path / "store", tokenizer=TOKENIZER, workloads="chat", scale="0.02")
        done = subprocess.run([*argv, "--set", "concurrency=1", "--set", "prompt_tokens=300"], capture_output=True, text=True, timeout=300)
        wrong = subprocess.run([*argv, "--set", "request_rate=2"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert wrong.returncode == 2 and "--set: request_rate does not apply to closed-loop workload 'chat'" in wrong.stderr
    run_dir = stored_run(tmp_path / "store")
    result = json.loads((run_dir / "workloads" / "chat" / "result.json").read_text())
    assert result["custom"] == "prompt_tokens=300, concurrency=1" and "custom: prompt_tokens=300, concurrency=1" in result["verdict"]["labels"]
    assert result["metrics"]["concurrency"] == 1
    card = arena("card", run_dir.name, "--output", str(tmp_path / "store"), "--wide")
    assert "chat total at c=1 (custom shape)" in card.stdout and "custom workload shapes (chat: prompt_tokens=300, concurrency=1)" in card.stdout
    board = ["leaderboard", "--output", str(tmp_path / "store"), "--json"]
    assert run_dir.name not in arena(*board).stdout
    assert run_dir.name in arena(*board, "--include-scaled").stdout


@pytest.mark.parametrize("metrics", [True, False], ids=["with-metrics", "without-metrics"])
@pytest.mark.slow
def test_the_whole_suite_against_a_remote_vllm_like_server(metrics, tmp_path):
    """Nine workloads, as a user with a laptop and a vLLM box would run them: no vocabulary from
    the server (the tokenizer is given up front), the hardware not named, memory from the server's
    own metrics where it serves them and "—" where it does not."""
    args = [*RIG, "--no-vocabulary"] + ([] if metrics else ["--no-metrics"])
    with FakeServerProcess(args) as rig:
        argv = rig_run_argv(remote(rig.url), tmp_path / "store", tokenizer=TOKENIZER, workloads="", scale="0.02")
        at = argv.index("--workloads")
        del argv[at : at + 2]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = stored_run(tmp_path / "store")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["hardware"] == "unnamed" and len(manifest["workloads"]) == 9 and manifest["status"] == "completed"
    results = [json.loads((run_dir / "workloads" / name / "result.json").read_text()) for name in manifest["workloads"]]
    assert all(r["verdict"]["valid"] and r["metrics"]["peak_memory_gb"] is None for r in results)
    kv = [r["metrics"].get("kv_cache_usage_peak") for r in results]
    # sampled about once a second: the open-loop workloads, which last seconds, see requests in flight
    assert (all(v is not None and 0 <= v <= 1 for v in kv) and max(kv) > 0) if metrics else all(v is None for v in kv)
    assert ("KV cache " in done.stdout) is metrics

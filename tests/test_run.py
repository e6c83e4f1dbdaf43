"""``arena run`` end to end against the rig through the openai backend; scaling; resume; keys."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena_core import make_plugin_manager
from arena_core.loadgen import read_records
from arena_core.testing import rig_run_argv, run_cli
from arena_core.testing.fake_server import FakeServerProcess

TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"
SMALL = ["--scale", "0.02", "--workloads", "chat,monday-peak"]


def rig(*extra: str) -> FakeServerProcess:
    return FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "2", "--prefill-base-ms", "5", *extra])


def test_scaling_shrinks_lengths_and_counts_but_keeps_the_shape(registry):
    chat = registry.get("workloads", "chat").scaled(0.05).shape
    assert (chat.prompt_tokens, chat.generated_tokens, chat.runs, chat.concurrency) == (51, 51, 1, 10)
    talk = registry.get("workloads", "multi-turn").scaled(0.001).shape
    assert (talk.prompt_tokens, talk.generated_tokens, talk.turns) == (16, 16, 5)  # never below 16 tokens
    peak = registry.get("workloads", "monday-peak").scaled(0.05).shape
    assert (peak.input_tokens, peak.output_tokens, peak.num_prompts, peak.request_rate, peak.max_concurrency, peak.burstiness) == (200, 25, 15, 1.5, 25, 1.0)
    reasoning = registry.get("workloads", "reasoning").scaled(0.001).shape
    assert reasoning.num_prompts == 1  # never below one request


@pytest.mark.slow
def test_run_against_a_running_server_prints_a_card_and_stores_everything(tmp_path):
    pm = make_plugin_manager(autoload=False, strict=True)
    with rig() as server:
        result = run_cli(pm, ["run", "--base-url", server.url, "--tokenizer", str(TOKENIZER), "--output", str(tmp_path), *SMALL])
    assert result.exit_code == 0, result.stderr
    assert "benches measured 2/2" in result.stdout and "chat" in result.stdout and "monday-peak" in result.stdout
    # the summary in a pipe fits 80 columns (a quality line reached 147); only the results' path is whole
    assert [line for line in result.stdout.splitlines() if len(line) > 80 and not line.startswith("results: ")] == []
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "completed" and manifest["backend"] == "openai" and manifest["scale"] == 0.02
    assert manifest["config"]["endpoint"]["base_url"] == server.url and manifest["arena_version"]
    assert manifest["commands"]["chat"].startswith("llama-benchy --base-url") and manifest["started_at"] and manifest["finished_at"]
    for name, tool in (("chat", "llama-benchy.json"), ("monday-peak", "vllm-bench.json")):
        folder = run_dir / "workloads" / name
        stored = json.loads((folder / "result.json").read_text())
        assert stored["verdict"]["labels"] == ["scaled x0.02"] and stored["failed"] == 0
        assert (folder / tool).is_file() and read_records(folder / "records.jsonl")


def test_unknown_names_and_bad_flags_are_usage_errors(tmp_path):
    pm = make_plugin_manager(autoload=False, strict=True)
    for args, needle in (
        (["run", "--workloads", "chat,nope"], "unknown workload 'nope'"),
        (["run", "--scale", "0"], "--scale"),
        (["run", "--instrument", "fast"], "--instrument"),
        (["run", "no-such-model", "--output", str(tmp_path)], "unknown model 'no-such-model'"),
        (["run", "--base-url", "http://127.0.0.1:9", "--output", str(tmp_path)], "does not answer"),
    ):
        result = run_cli(pm, args)
        assert result.exit_code == 2, (args, result.stderr)
        assert needle in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_api_key_from_the_environment_never_reaches_disk_or_output(tmp_path, monkeypatch):
    secret = "sk-arena-test-4e1f9c"
    monkeypatch.setenv("ARENA_TEST_KEY", secret)
    pm = make_plugin_manager(autoload=False, strict=True)
    with rig("--api-key", secret) as server:  # the rig answers 401 without the right key
        result = run_cli(
            pm, ["run", "--base-url", server.url, "--api-key-env", "ARENA_TEST_KEY", "--tokenizer", str(TOKENIZER), "--output", str(tmp_path), *SMALL]
        )
    assert result.exit_code == 0, result.stderr
    assert "benches measured 2/2" in result.stdout
    assert secret not in result.stdout + result.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path


@pytest.mark.slow
def test_wrong_api_key_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_TEST_KEY", "wrong")
    with rig("--api-key", "right") as server:
        result = run_cli(
            make_plugin_manager(autoload=False), ["run", "--base-url", server.url, "--api-key-env", "ARENA_TEST_KEY", "--output", str(tmp_path), *SMALL]
        )
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1] == f"arena: error: {server.url} rejected the API key (HTTP 401)"


@pytest.mark.slow
def test_killed_run_resumes_without_losing_finished_workloads(tmp_path):
    with rig() as server:
        command = rig_run_argv(server.url, tmp_path, tokenizer=TOKENIZER, workloads="chat,rag-8k,monday-peak", scale="0.02")
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not list(tmp_path.glob("*/workloads/chat/result.json")):
            time.sleep(0.1)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
        kept = (run_dir / "workloads" / "chat" / "records.jsonl").read_text()
        resumed = subprocess.run(
            [sys.executable, "-m", "arena_core", "run", "--resume", run_dir.name, "--output", str(tmp_path)], capture_output=True, text=True, timeout=300
        )
    assert resumed.returncode == 0, resumed.stderr
    assert "chat: already measured, kept" in resumed.stderr
    assert (run_dir / "workloads" / "chat" / "records.jsonl").read_text() == kept  # not one record lost or repeated
    # the workload that was cut short ran again from scratch; what it had measured is kept aside
    assert (run_dir / "workloads" / "rag-8k" / "result.json").is_file()
    assert list((run_dir / "workloads").glob("*.interrupted-1")) or not any((run_dir / "workloads").glob("rag-8k.*"))
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "completed"
    assert "benches measured 3/3" in resumed.stdout


@pytest.mark.slow
def test_runs_are_indexed_and_shown(tmp_path):
    pm = make_plugin_manager(autoload=False, strict=True)
    with rig() as server:
        assert (
            run_cli(
                pm, ["run", "--base-url", server.url, "--tokenizer", str(TOKENIZER), "--output", str(tmp_path), "--scale", "0.02", "--workloads", "chat"]
            ).exit_code
            == 0
        )
    (run,) = json.loads(run_cli(pm, ["runs", "--output", str(tmp_path), "--json"]).stdout)
    assert (run["status"], run["backend"], run["workloads"], run["scale"]) == ("completed", "openai", "chat", 0.02)
    config = tmp_path / "arena.toml"
    config.write_text(f'[run]\noutput = "{tmp_path}"\n')
    shown = run_cli(pm, ["--config", str(config), "show", "run", run["run_id"]])
    assert shown.exit_code == 0 and "benches measured 1/1" in shown.stdout and "chat" in shown.stdout
    (tmp_path / "index.sqlite").unlink()  # the index is rebuilt from the run folders
    assert [r["run_id"] for r in json.loads(run_cli(pm, ["runs", "--output", str(tmp_path), "--json"]).stdout)] == [run["run_id"]]
    (tmp_path / "index.sqlite").write_bytes(b"not a database at all")
    broken = run_cli(pm, ["runs", "--output", str(tmp_path)])
    assert broken.exit_code == 2 and "index.sqlite: not a usable index" in broken.stderr
    missing = run_cli(pm, ["--config", str(config), "show", "run", "no-such-run"])
    assert missing.exit_code == 2 and "no run 'no-such-run'" in missing.stderr


def test_live_line_shows_requests_rate_and_time_left(monkeypatch):
    import io

    from arena_core.report import live

    clock = iter([0.0, 0.1, 1.0, 2.0, 2.05, 3.0])
    monkeypatch.setattr(live.time, "monotonic", lambda: next(clock))
    stream = io.StringIO()
    line = live.LiveLine(stream)
    line.update("chat", 0, 4, 0)  # t=0: drawn
    line.update("chat", 1, 4, 50)  # t=0.1: too soon, skipped
    line.update("chat", 2, 4, 100)  # t=1.0
    line.update("chat", 3, 4, 200)  # t=2.0
    line.update("chat", 3, 4, 210)  # t=2.05: too soon
    line.update("chat", 4, 4, 300)  # t=3.0: last one is always drawn
    drawn = stream.getvalue().split("\r\x1b[K")[1:]
    assert drawn == [
        "chat: 0/4 requests, 0 tok/s, starting",
        "chat: 2/4 requests, 100 tok/s, 1 s left",
        "chat: 3/4 requests, 100 tok/s, 1 s left",
        "chat: 4/4 requests, 100 tok/s, 0 s left",
    ]


@pytest.mark.slow
def test_runners_report_every_request_for_the_live_line(tmp_path, registry):
    from arena_core import Endpoint, RunContext, RunOptions

    seen: dict[str, list[tuple[int, int, int]]] = {"chat": [], "monday-peak": []}
    with rig() as server:
        for name in seen:
            workload = registry.get("workloads", name).scaled(0.02)
            context = RunContext(
                endpoint=Endpoint(base_url=server.url, model="m"),
                output_dir=tmp_path / name,
                options=RunOptions(tokenizer=TOKENIZER),
                on_request=lambda done, total, tokens, name=name: seen[name].append((done, total, tokens)),
            )
            registry.get("runners", workload.runner).create("native").run(workload, context)
    assert [done for done, _, _ in seen["chat"]] == list(range(1, 21)) and seen["chat"][-1][1] == 20  # warmup run + 1 run of 10
    assert [done for done, _, _ in seen["monday-peak"]] == list(range(1, 7)) and seen["monday-peak"][-1][1] == 6
    assert seen["chat"][-1][2] == 20 * 20  # 20 requests of 20 tokens


@pytest.mark.slow
def test_ctrl_c_keeps_finished_records_and_says_how_to_resume(tmp_path):
    with rig() as server:
        command = rig_run_argv(server.url, tmp_path, tokenizer=TOKENIZER, workloads="monday-peak", scale="0.05")
        # A shell runs background jobs with SIGINT ignored and children inherit that; give the
        # child the default disposition, as a terminal would.
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list(tmp_path.glob("*/workloads/monday-peak")):
            time.sleep(0.05)
        time.sleep(3)  # 15 requests at 1.5/s: a few have finished, most have not been sent
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "resume with: arena run --resume" in stderr and "Traceback" not in stderr
    (records,) = tmp_path.glob("*/workloads/monday-peak/records.jsonl")
    kept = read_records(records)
    assert 1 <= len(kept) < 15 and all(r.ok for r in kept)
    (run_dir,) = [p for p in tmp_path.iterdir() if (p / "manifest.json").is_file()]
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "interrupted"


def test_model_memory_prefers_the_servers_own_figure():
    from arena_core.run.telemetry import model_memory

    from_log = model_memory({"model_memory_gib": 1.53}, 10 * 10**9, 12 * 10**9)
    assert from_log.gb == pytest.approx(1.53 * 2**30 / 1e9) and "server's log" in from_log.source
    probed = model_memory({}, 10 * 10**9, 10_300_000_000)
    assert probed.gb == pytest.approx(0.3) and "before and after" in probed.source
    assert model_memory({}, None, None) is None


@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGHUP])
@pytest.mark.slow
def test_sigterm_and_sighup_stop_a_run_like_ctrl_c(tmp_path, signal_number):
    """What `timeout`, `docker stop` or a closed terminal send: the run stops as on Ctrl-C --
    finished records kept, the manifest "interrupted", the resume command printed, exit 130."""
    with rig() as server:
        command = rig_run_argv(server.url, tmp_path, tokenizer=TOKENIZER, workloads="monday-peak", scale="0.05")
        # started as a shell starts a background job, SIGINT ignored (``arena run &``, ``nohup``):
        # the signal must stop the run all the same
        ignoring = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)  # noqa: E731
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ignoring)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list(tmp_path.glob("*/workloads/monday-peak")):
            time.sleep(0.05)
        time.sleep(3)  # as in the Ctrl-C test: a few requests have finished
        process.send_signal(signal_number)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "resume with: arena run --resume" in stderr and "Traceback" not in stderr
    (run_dir,) = [p for p in tmp_path.iterdir() if (p / "manifest.json").is_file()]
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "interrupted"
    assert read_records(next(run_dir.glob("workloads/monday-peak/records.jsonl")))  # what finished is kept

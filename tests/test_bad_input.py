"""Bad input, as a user meets it: each case runs the real console script and must give one line
that names the problem and where (file, key path or flag), exit status 2, and no traceback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from arena_core.testing import arena as run_arena
from arena_core.testing.fake_server import FakeServerProcess

TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"


def arena(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """``arena ARGS``: in this process, or as a child for a command that measures (arena_core.testing.arena)."""
    return run_arena(*args, cwd=cwd, env=env)


def error_line(done: subprocess.CompletedProcess) -> str:
    """The one line that says what is wrong (click's own errors end with "Error: ...")."""
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.strip().splitlines() if line.startswith(("arena: error:", "Error:"))]
    assert len(lines) == 1, done.stderr
    return lines[0]


CONFIG_CASES = {
    "malformed TOML": ("[run\nscale = 1", "arena.toml: "),
    "unknown key": ("[run]\nscael = 0.5", "arena.toml: $.run.scael: unknown key"),
    "wrong type": ('[run]\nscale = "big"', "arena.toml: $.run.scale"),
    "zero concurrency": ("[workloads.chat]\nconcurrency = 0", "arena.toml: $.workloads.chat.concurrency"),
    "negative rate": ("[workloads.monday-peak]\nrequest_rate = -1.5", "arena.toml: $.workloads.monday-peak.request_rate"),
    "zero prompts": ("[workloads.sharegpt]\nnum_prompts = 0", "arena.toml: $.workloads.sharegpt.num_prompts"),
    "zero scale": ("[run]\nscale = 0", "arena.toml: $.run.scale"),
    "unknown workload in config": ('[run]\nworkloads = ["chat", "chit-chat"]', "unknown workload 'chit-chat'"),
}


@pytest.mark.parametrize("case", list(CONFIG_CASES))
@pytest.mark.slow
def test_bad_config_files(case, tmp_path):
    text, needle = CONFIG_CASES[case]
    (tmp_path / "arena.toml").write_text(text)
    done = arena("config", "check", "arena.toml", cwd=tmp_path)
    assert done.returncode == 2 and needle in error_line(done)
    # the same file stops a run before anything starts
    run = arena("run", "--workloads", "chat", cwd=tmp_path)
    assert run.returncode == 2 and needle in error_line(run)


FLAG_CASES = {
    "zero scale": (["run", "--scale", "0"], "--scale"),
    "negative scale": (["run", "--scale", "-1"], "--scale"),
    "unknown model": (["run", "gpt-17"], "unknown model 'gpt-17'"),
    "unknown workload": (["run", "--workloads", "chat,nope"], "unknown workload 'nope'"),
    "unknown hardware": (["run", "--hardware", "tpu-v9"], "unknown hardware 'tpu-v9'"),
    "unknown backend": (["run", "--backend", "tgi"], "unknown backend 'tgi'"),
    "missing dataset file": (["run", "--dataset", "no-such.json"], "--dataset"),
    "zero request timeout": (["run", "--request-timeout", "0"], "--request-timeout"),
    "unknown leaderboard profile": (["leaderboard", "--profile", "fastest"], "--profile: arena-site has no profile 'fastest'"),
    "unknown scorer": (["leaderboard", "--scorer", "elo"], "--scorer: unknown scorer 'elo'"),
    "unknown leaderboard hardware": (["leaderboard", "--hardware", "tpu-v9"], "--hardware: unknown hardware 'tpu-v9'"),
    "import without names": (["import", "results.json"], "--workload is required"),
}


@pytest.mark.parametrize("case", list(FLAG_CASES))
@pytest.mark.slow
def test_bad_flags(case, tmp_path):
    args, needle = FLAG_CASES[case]
    (tmp_path / "results.json").write_text(json.dumps({"benchmarks": []}))
    done = arena(*args, cwd=tmp_path)
    assert done.returncode == 2 and needle in error_line(done)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_a_base_url_that_does_not_answer(tmp_path):
    done = arena("run", "--base-url", f"http://127.0.0.1:{free_port()}", "--workloads", "chat", cwd=tmp_path)
    assert done.returncode == 2 and "127.0.0.1" in error_line(done)
    # nothing was measured, so nothing is left in the store: no "failed" run to list
    assert not list((tmp_path / "arena-results").glob("*/manifest.json"))
    assert json.loads(arena("runs", "--json", cwd=tmp_path).stdout) == []


@pytest.mark.slow
def test_a_401_from_the_server(tmp_path):
    with FakeServerProcess(["--api-key", "right-key"]) as rig:
        env = {**os.environ, "WRONG_KEY": "wrong-key"}
        done = arena("run", "--base-url", rig.url, "--api-key-env", "WRONG_KEY", "--workloads", "chat", "--scale", "0.02", cwd=tmp_path, env=env)
    assert done.returncode == 2 and "rejected the API key" in error_line(done)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("", "the file is empty"),
        ('[{"id": "a", "conversations": [{"from": "human", "va', "no complete conversation"),
        ('{"not": "a list"}', "not a ShareGPT file"),
    ],
    ids=["empty", "truncated", "not-sharegpt"],
)
@pytest.mark.slow
def test_bad_dataset_files(content, needle, tmp_path):
    dataset = tmp_path / "sharegpt.json"
    dataset.write_text(content)
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json")]) as rig:
        done = arena(
            "run", "--base-url", rig.url, "--tokenizer", str(TOKENIZER), "--workloads", "sharegpt", "--scale", "0.02", "--dataset", str(dataset), cwd=tmp_path
        )
    line = error_line(done)
    assert done.returncode == 2 and needle in line and "sharegpt.json" in line


@pytest.mark.slow
def test_a_corrupt_results_directory(tmp_path):
    assert arena("import", "--seeds", "--output", "store", cwd=tmp_path).returncode == 0
    runs = sorted(p for p in (tmp_path / "store").iterdir() if p.is_dir())
    (runs[0] / "manifest.json").write_text("{ this is not json")
    shown = arena("show", "run", runs[0].name, "--output", "store", cwd=tmp_path)
    assert shown.returncode == 2 and f"{runs[0].name}/manifest.json: unreadable manifest" in error_line(shown)
    card = arena("card", runs[0].name, "--output", "store", cwd=tmp_path)
    assert card.returncode == 2 and "unreadable manifest" in error_line(card)
    chat = runs[1] / "workloads" / "chat" / "result.json"
    chat.write_text('{"workload": 3}')  # JSON, but not a result
    wrong_shape = arena("card", runs[1].name, "--output", "store", cwd=tmp_path)
    assert wrong_shape.returncode == 2 and "chat/result.json: not a readable workload result" in error_line(wrong_shape)
    chat.unlink()
    board = arena("leaderboard", "--output", "store", cwd=tmp_path)
    assert board.returncode == 2 and "could not be read" in error_line(board) and "manifest.json" in error_line(board)
    assert "Qwen" in board.stdout  # the run that could be read is still ranked: nothing lost
    (tmp_path / "store" / "index.sqlite").write_bytes(b"not a database at all" * 100)
    broken = arena("runs", "--output", "store", cwd=tmp_path)
    assert broken.returncode == 2 and "index.sqlite" in error_line(broken)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["config", "check", "{fifo}"], "{fifo}: not a regular file"),
        (["--config", "{fifo}", "run", "--workloads", "chat"], "{fifo}: not a regular file"),
        (["import", "{fifo}", "--workload", "chat", "--model", "qwen3.5-0.8b", "--hardware", "gb10"], "{fifo}: not a regular file"),
        (["import", "/dev/zero", "--workload", "chat", "--model", "qwen3.5-0.8b", "--hardware", "gb10"], "/dev/zero: not a regular file"),
        (["run", "--dataset", "{fifo}"], "is not a regular file"),
        (["run", "--corpus", "{fifo}"], "is not a regular file"),
        (["run", "--base-url", "http://127.0.0.1:9", "--api-key-file", "{fifo}"], "--api-key-file: {fifo} is not a regular file"),
    ],
)
@pytest.mark.slow
def test_a_fifo_or_a_device_is_refused_not_read_for_ever(tmp_path, args, needle):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    done = arena(*(a.format(fifo=fifo) for a in args), cwd=tmp_path)  # arena() has a timeout: a hang fails the test
    assert done.returncode == 2 and needle.format(fifo=fifo) in error_line(done)


SMALLER_CASES = {
    "a comma and no name": (["run", "--workloads", ","], "names no workload"),
    "a workload twice": (["run", "--workloads", "chat,chat"], "'chat' is named twice"),
    "a card of no run": (["card", "nosuch"], "arena card: no run 'nosuch'"),
    "an empty resume id": (["run", "--resume", ""], "--resume"),
    "resume with other settings": (["run", "--resume", "{run}", "--scale", "0.5", "--workloads", "chat"], "--workloads, --scale would change what it measures"),
    "resume with another server": (["run", "--resume", "{run}", "--base-url", "http://127.0.0.1:9"], "--base-url would change what it measures"),
    "output under a file": (["run", "--base-url", "http://127.0.0.1:9", "--output", "afile/results"], "--output afile/results: cannot keep results there"),
}


@pytest.mark.parametrize("case", list(SMALLER_CASES))
@pytest.mark.slow
def test_smaller_mistakes_are_named_not_guessed(tmp_path, case):
    args, needle = SMALLER_CASES[case]
    (tmp_path / "afile").write_text("not a folder")
    run = ""
    if any("{run}" in arg for arg in args):  # a stored run to resume: a seed card (scale 1, no server)
        assert arena("import", "--seeds", cwd=tmp_path).returncode == 0
        run = next((tmp_path / "arena-results").glob("*/manifest.json")).parent.name
    done = arena(*(arg.format(run=run) for arg in args), cwd=tmp_path)
    assert done.returncode == 2 and needle in error_line(done)

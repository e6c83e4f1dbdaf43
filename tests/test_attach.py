"""Measuring a server that is already running, as if from another machine: the rig listens on
every interface and Arena reaches it by this machine's host name, which Arena takes for another
machine (a name is not resolved to decide where a server runs)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from arena_core.attach import server_is_here
from arena_core.testing import rig_run_argv
from arena_core.testing.fake_server import FakeServerProcess

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


def run_remote(tmp_path: Path, *extra: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict, dict]:
    with FakeServerProcess(RIG) as rig:
        argv = rig_run_argv(
            remote(rig.url), tmp_path / "store", tokenizer=TOKENIZER, workloads="chat,monday-peak", scale="0.02", extra=["qwen3.5-0.8b", *extra]
        )
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    (run_dir,) = [p for p in (tmp_path / "store").iterdir() if (p / "manifest.json").is_file()]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    results = {name: json.loads((run_dir / "workloads" / name / "result.json").read_text()) for name in manifest["workloads"]}
    return done, manifest, results


def test_a_remote_server_is_judged_on_its_own_machine_not_the_clients(tmp_path):
    """Unnamed, the server's machine is not this one: no ceiling from the client's bandwidth, no
    memory figure read from the client, and the output says how to name it."""
    done, manifest, results = run_remote(tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert manifest["hardware"] == "unnamed" and manifest["model_memory"] is None
    assert manifest["telemetry"]["notes"] == ["the server runs on another machine: its memory and power are not read from here (its /metrics are)"]
    for result in results.values():
        assert "decode_ceiling_tps" not in result["metrics"] and result["metrics"]["peak_memory_gb"] is None
    assert "name the server's machine with --hardware" in done.stdout and "on the server's machine (not named)" in done.stdout


def test_a_named_remote_machine_is_the_one_judged(tmp_path):
    done, manifest, results = run_remote(tmp_path, "--hardware", "gb10")
    assert manifest["hardware"] == "gb10" and manifest["hardware_profile"]["memory_bandwidth_gbs"] == 273
    assert all("decode_ceiling_tps" in r["metrics"] for r in results.values())
    assert "model memory: not measured (the server was already running" in done.stdout


def test_the_watchdog_never_stops_an_attached_server_for_this_machines_memory(tmp_path):
    """A margin larger than any machine's memory would stop a run Arena launched at once; a server
    Arena only attached to (here, on this very machine) is not its to guard."""
    env = {**os.environ, "ARENA_MEMORY_MARGIN_GB": "1000000"}
    with FakeServerProcess(RIG[2:]) as rig:
        argv = rig_run_argv(rig.url, tmp_path / "store", tokenizer=TOKENIZER, workloads="chat", scale="0.02")
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "memory watchdog" not in done.stderr

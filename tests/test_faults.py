"""Fault injection: a bad server never produces a wrong number and never loses a measured one.

Each case runs ``arena run`` as a user would, against the rig with one fault injected into every
third chat request (or the server killed), then checks: the run ends by itself with an exit
status that says so, every request has a record that says what happened, failures are counted in
the result, and the verdict is invalid. ``docs/faults.md`` lists the behaviour this test sees;
``python -m pytest tests/test_faults.py -s`` prints the table with this run's numbers.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from arena_core.loadgen.records_io import read_records
from arena_core.testing import rig_run_argv
from arena_core.testing.fake_server import FakeServerProcess

TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"
WORKLOADS = "chat,monday-peak"
SEEN: dict[str, str] = {}

# fault name -> (rig arguments, exit status expected, words the failed records must carry)
CASES = {
    "http-500": (["--fault", "http", "--fail-every", "3", "--fail-status", "500"], 4, "HTTP 500"),
    "http-429": (["--fault", "http", "--fail-every", "3", "--fail-status", "429"], 4, "HTTP 429"),
    "reset mid-stream": (["--fault", "reset", "--fail-every", "3"], 4, "connection"),
    "malformed SSE JSON": (["--fault", "malformed", "--fail-every", "3"], 4, None),
    "stream never ends": (["--fault", "stall", "--fail-every", "3"], 4, "timed out"),
    "first byte after a long stall": (["--fault", "slow-start", "--fail-every", "3", "--slow-start-ms", "5000"], 4, "timed out"),
    "missing usage": (["--fault", "no-usage", "--fail-every", "3"], 4, None),
    "wrong Content-Type": (["--fault", "content-type", "--fail-every", "3"], 4, "Content-Type"),
}


def arena_run(url: str, output: Path) -> subprocess.CompletedProcess:
    command = rig_run_argv(url, output, tokenizer=TOKENIZER, workloads=WORKLOADS, scale="0.02", extra=["--request-timeout", "2"])
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def results_of(output: Path) -> tuple[dict, dict[str, dict], dict[str, list]]:
    (run_dir,) = [p for p in output.iterdir() if (p / "manifest.json").is_file()]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    results, records = {}, {}
    for folder in sorted((run_dir / "workloads").iterdir()):
        if (folder / "result.json").is_file():
            results[folder.name] = json.loads((folder / "result.json").read_text())
        if (folder / "records.jsonl").is_file():
            records[folder.name] = read_records(folder / "records.jsonl")
    return manifest, results, records


@pytest.mark.parametrize("fault", list(CASES))
@pytest.mark.slow
def test_each_fault_is_recorded_counted_and_invalidates(fault, tmp_path):
    rig_args, expected_exit, words = CASES[fault]
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "2", *rig_args]) as rig:
        done = arena_run(rig.url, tmp_path)
    assert done.returncode == expected_exit, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and done.stderr.strip().splitlines()[-1].startswith("arena: ")
    manifest, results, records = results_of(tmp_path)
    assert manifest["status"] == "completed" and set(results) == set(WORKLOADS.split(","))
    seen = []
    for name, result in results.items():
        measured = [r for r in records[name] if not r.warmup]
        failed = [r for r in measured if not r.ok]
        assert result["requests"] == len(measured) and result["failed"] == len(failed)  # every request kept, failures counted
        assert not result["verdict"]["valid"] and result["verdict"]["reasons"]
        assert all(r.error for r in failed)  # each failed record says what happened
        if words:
            assert failed and all(words.lower() in r.error.lower() for r in failed), [r.error for r in failed][:3]
        seen.append(f"{name}: {len(measured)} requests, {len(failed)} failed, {len(measured)} records kept; {result['verdict']['reasons'][0][:90]}")
    SEEN[fault] = f"exit {done.returncode}; " + " | ".join(seen)


@pytest.mark.slow
def test_server_killed_mid_workload_and_not_coming_back(tmp_path):
    """The rig's process exits on the 22nd chat request (in chat's measured run): chat's records
    are kept and counted, the next workload cannot reach the server, and the run stops with a
    one-line error (exit 5) that says how to resume; the manifest says it failed."""
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "2", "--fault", "exit", "--fail-every", "22"]) as rig:
        done = arena_run(rig.url, tmp_path)
    assert done.returncode == 5, done.stderr[-3000:]
    assert "the server stopped answering" in done.stderr and "arena run --resume" in done.stderr
    assert "Traceback" not in done.stderr and done.stderr.strip().splitlines()[-1].startswith("arena: ")
    manifest, results, records = results_of(tmp_path)
    kept = sum(len(r) for r in records.values())
    assert manifest["status"] == "failed" and list(results) == ["chat"]
    assert kept == 20 and results["chat"]["failed"] >= 1 and not results["chat"]["verdict"]["valid"]
    SEEN["server killed, not coming back"] = (
        f"exit {done.returncode}; status {manifest['status']}; {kept} records kept; last line: {done.stderr.strip().splitlines()[-1][:120]}"
    )


def test_zz_print_the_table():
    for fault, line in SEEN.items():
        print(f"| {fault} | {line} |")


@pytest.mark.slow
def test_a_server_that_dies_between_workloads_is_lost_not_bad_input(tmp_path):
    """The rig dies on the first request of the second workload (a set-up probe, before any
    measured request): exit 5 with the resume command, as when it dies mid-workload."""
    tokenizer = ["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "1"]
    with FakeServerProcess(tokenizer) as rig:  # how many chat requests the first workload makes
        assert (
            subprocess.run(
                rig_run_argv(rig.url, tmp_path / "count", tokenizer=TOKENIZER, workloads="chat", scale="0.02"), capture_output=True, timeout=300
            ).returncode
            == 0
        )
        first = sum(1 for e in rig.stop() if e["path"] == "/v1/chat/completions")
    with FakeServerProcess([*tokenizer, "--fault", "exit", "--fail-every", str(first + 1)]) as rig:
        done = subprocess.run(
            rig_run_argv(rig.url, tmp_path / "store", tokenizer=TOKENIZER, workloads="chat,rag-8k", scale="0.02"), capture_output=True, text=True, timeout=300
        )
    assert done.returncode == 5, done.stderr[-2000:]
    line = done.stderr.strip().splitlines()[-1]
    assert "the server stopped answering" in line and "resume with: arena run --resume" in line and "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_server_that_accepts_and_never_answers_does_not_hang_the_run(tmp_path):
    """It answers /v1/models, /props and the sanity question (so the run starts) and then accepts
    connections and says nothing: the run ends on its own with exit 5 and the resume command,
    never hangs. Silent from the start, the sanity check ends the run before any workload."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []

    # what it says of itself it says every time it is asked (the model list, llama.cpp's /props);
    # the sanity question it answers once, then nothing
    told = {b"/v1/models": b'{"data": [{"id": "silent-model"}]}', b"/props": b"{}"}
    answers = {**told, b"one word": b'{"choices": [{"message": {"content": "Hello"}}]}'}

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            if b"one word" in answers:
                request = connection.recv(65536)
                while not any(key in request for key in answers) and (more := connection.recv(65536)):
                    request += more
                key = next(key for key in answers if key in request)
                body = answers[key] if key in told else answers.pop(key)
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
                )
                connection.close()
            else:
                held.append(connection)  # accepted, never answered

    threading.Thread(target=serve, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        done = subprocess.run(
            rig_run_argv(url, tmp_path, tokenizer=TOKENIZER, workloads="monday-peak", scale="0.02"), capture_output=True, text=True, timeout=120
        )
    finally:
        listener.close()
        for connection in held:
            connection.close()
    assert done.returncode == 5, done.stderr[-2000:]
    assert "did not answer" in done.stderr and "resume with: arena run --resume" in done.stderr.strip().splitlines()[-1]

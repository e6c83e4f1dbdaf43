"""The bench scripts' Arena clients still run against the current API (they broke silently once,
when the plans changed shape): each is run briefly as the scripts run it, as a child process.
No timing is asserted here; the scripts themselves print the ratios."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from arena_core.testing.fake_server import FakeServerProcess
from arena_core.testing.text import english_like_text

BENCH = Path(__file__).resolve().parent.parent / "bench"
TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"


def child(script: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, str(BENCH / script), "--child", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_closed_loop_bench_client_streams_what_it_asked(tmp_path):
    (tmp_path / "corpus.txt").write_text(english_like_text(3000, seed=5))
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "0"]) as rig:
        out = child("client_overhead.py", "arena", rig.url, "4", "50", str(tmp_path))
    assert out["tokens"] == 4 * 50 and len(out["ttft_ms"]) == 4


@pytest.mark.slow
def test_the_open_loop_bench_client_keeps_its_schedule_and_records(tmp_path):
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "1"]) as rig:
        out = child("open_loop_overhead.py", rig.url, "50", "20", "16", "8", "0", str(tmp_path / "run"))
    assert out["records"] == 20 and out["failed"] == 0 and out["tokens"] == 20 * 8
    assert 0 <= out["send_lateness_p50_ms"] <= out["send_lateness_p99_ms"]


@pytest.mark.slow
def test_the_capacity_bench_finds_the_rigs_slots_both_ways():
    done = subprocess.run(
        [sys.executable, str(BENCH / "capacity_search.py"), "--load", "users", "--slots", "2", "--limit", "4", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])["users"]
    assert out["search_capacity"] == out["grid_capacity"] == out["true_capacity"] == 2
    assert out["grid_probes"] == 4 and out["search_probes"] <= out["grid_probes"]


@pytest.mark.slow
def test_the_decode_step_bench_reads_each_answers_time_per_token():
    """bench/decode_step.py against a stand-in llama-server that times request i's tokens at
    10 + 5i ms: the rows it prints are the answers' own figures, per number sent at once, and
    every request carries the keys ``--body`` adds."""
    import http.server
    import threading

    in_flight = []

    class Stand(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            assert self.path == "/completion" and body["ignore_eos"] is True and body["n_predict"] == 128 and body["temperature"] == 0
            in_flight.append(1)
            index = int(body["prompt"].rsplit(" ", 1)[1])  # the script numbers its requests at the prompt's end
            answer = json.dumps({"timings": {"predicted_per_token_ms": 10.0 + 5.0 * index}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stand)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        done = subprocess.run(
            [
                sys.executable,
                str(BENCH / "decode_step.py"),
                "--base-url",
                f"http://127.0.0.1:{server.server_port}",
                "--sequences",
                "1,3",
                "--body",
                '{"temperature": 0}',
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert [(r["sequences"], r["run"]) for r in rows] == [(1, 1), (1, 2), (3, 1), (3, 2)] and len(in_flight) == 2 * (1 + 3)
    assert rows[0]["answers"] == [10.0] and rows[2]["answers"] == [10.0, 15.0, 20.0] and rows[2]["per_token_ms"] == 15.0  # the median of its answers

"""The bench scripts' Arena clients still run against the current API (they broke silently once,
when the plans changed shape): each is run briefly as the scripts run it, as a child process.
No timing is asserted here; the scripts themselves print the ratios."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from arena_core.testing.fake_server import FakeServerProcess
from arena_core.testing.text import english_like_text

BENCH = Path(__file__).resolve().parent.parent / "bench"
TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"


def child(script: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, str(BENCH / script), "--child", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_closed_loop_bench_client_streams_what_it_asked(tmp_path):
    (tmp_path / "corpus.txt").write_text(english_like_text(3000, seed=5))
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "0"]) as rig:
        out = child("client_overhead.py", "arena", rig.url, "4", "50", str(tmp_path))
    assert out["tokens"] == 4 * 50 and len(out["ttft_ms"]) == 4


def test_the_open_loop_bench_client_keeps_its_schedule_and_records(tmp_path):
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "1"]) as rig:
        out = child("open_loop_overhead.py", rig.url, "50", "20", "16", "8", "0", str(tmp_path / "run"))
    assert out["records"] == 20 and out["failed"] == 0 and out["tokens"] == 20 * 8
    assert 0 <= out["send_lateness_p50_ms"] <= out["send_lateness_p99_ms"]


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

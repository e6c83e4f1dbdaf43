"""Telemetry: memory as unified-memory machines must read it, the server's counters, sampling."""

from __future__ import annotations

import json
import time

import pytest

from arena_backends.llama_cpp import LLAMA_CPP_METRICS as LLAMA_CPP_DIALECT
from arena_backends.vllm_dialect import VLLM_METRICS
from arena_core.run.probes import meminfo_probe
from arena_core.run.telemetry import TelemetrySampler, parse_metrics, summarise
from arena_core.testing import rig_run_argv
from arena_core.testing.fake_server import FakeServerProcess

#: What the built-in backends' servers call their /metrics figures.
DIALECTS = (VLLM_METRICS, LLAMA_CPP_DIALECT)

# Recorded from a DGX Spark (GB10) while vLLM served a model: NVML says "Not Supported" there,
# so used memory is MemTotal - MemAvailable (hardware.md 2.1).
GB10_MEMINFO = """MemTotal:       127605464 kB
MemFree:         5519440 kB
MemAvailable:   88017764 kB
Buffers:           12345 kB
Cached:         80123456 kB
"""

LLAMA_CPP_METRICS = """# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 9680
llamacpp:tokens_predicted_total 1555
llamacpp:requests_processing 10
vllm:kv_cache_usage_perc{model_name="m"} 0.4
vllm:e2e_request_latency_seconds_bucket{le="0.3",model_name="m"} 4
vllm:num_requests_waiting{engine="0",model_name="m"} 2
vllm:num_requests_waiting{engine="1",model_name="m"} 3
other_metric 3
"""


def test_unified_memory_is_memtotal_minus_memavailable(tmp_path):
    path = tmp_path / "meminfo"
    path.write_text(GB10_MEMINFO)
    assert meminfo_probe(path)()["memory_used_bytes"] == (127605464 - 88017764) * 1024
    assert meminfo_probe(tmp_path / "absent")() == {}


def test_metrics_page_keeps_server_samples_summed_over_labels():
    assert parse_metrics(LLAMA_CPP_METRICS, DIALECTS) == {
        "llamacpp:prompt_tokens_total": 9680.0,
        "llamacpp:tokens_predicted_total": 1555.0,
        "llamacpp:requests_processing": 10.0,
        "vllm:kv_cache_usage_perc": 0.4,
        "vllm:num_requests_waiting": 5.0,  # two engine cores
    }


@pytest.mark.slow
def test_sampler_writes_samples_and_summarises(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(GB10_MEMINFO)
    with FakeServerProcess(["--decode-gap-ms", "1"]) as rig:
        sampler = TelemetrySampler(tmp_path / "telemetry.jsonl", metrics_url=f"{rig.url}/metrics", dialects=DIALECTS, interval_s=0.05, meminfo=meminfo).start()
        absent = TelemetrySampler(tmp_path / "absent.jsonl", metrics_url=f"{rig.url}/no-such-page", dialects=DIALECTS, interval_s=0.05, meminfo=meminfo).start()
        time.sleep(0.3)
        samples = sampler.stop()
        absent.stop()
    lines = [json.loads(line) for line in (tmp_path / "telemetry.jsonl").read_text().splitlines()]
    assert len(samples) == len(lines) >= 4
    summary = summarise(samples, unified=True, dialects=DIALECTS)
    assert summary["peak_memory_gb"] == (127605464 - 88017764) * 1024 / 1e9
    assert all(line["metrics"]["vllm:num_requests_running"] == 0 for line in lines)  # the rig's vLLM-named page
    assert summary["requests_running_peak"] == 0 and sampler.cpu_ns > 0
    # a server without /metrics: recorded as absent, not fatal
    assert all(json.loads(line)["metrics"] is None for line in (tmp_path / "absent.jsonl").read_text().splitlines())


def test_watchdog_fires_once_when_available_memory_runs_low(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       127605464 kB\nMemAvailable:    1000000 kB\n")  # 1 GB left
    fired: list[int] = []
    sampler = TelemetrySampler(tmp_path / "t.jsonl", metrics_url=None, dialects=(), interval_s=0.02, meminfo=meminfo, on_low_memory=fired.append).start()
    time.sleep(0.15)
    sampler.stop()
    assert fired == [1000000 * 1024] and sampler.tripped
    meminfo.write_text(GB10_MEMINFO)  # 88 GB available: quiet
    quiet: list[int] = []
    TelemetrySampler(tmp_path / "q.jsonl", metrics_url=None, dialects=(), interval_s=0.02, meminfo=meminfo, on_low_memory=quiet.append).start().stop()
    assert quiet == []


@pytest.mark.slow
def test_watchdog_stops_a_run_cleanly_and_says_why(tmp_path):
    """The run's own sampler trips (its margin set above this machine's memory): the load stops the
    way Ctrl-C stops it, records kept, the message names the watchdog."""
    import signal
    import subprocess
    from pathlib import Path

    tokenizer = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"
    env = {**__import__("os").environ, "ARENA_MEMORY_MARGIN_GB": "1000000"}  # more than any machine has
    with FakeServerProcess(["--tokenizer", str(tokenizer / "tokenizer.json"), "--decode-gap-ms", "20"]) as rig:
        done = subprocess.run(
            rig_run_argv(rig.url, tmp_path, tokenizer=tokenizer, workloads="monday-peak", scale="0.05"),
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # shells start background jobs with SIGINT ignored
        )
    assert done.returncode == 130, done.stderr
    assert "stopped by the memory watchdog: less than 1e+06 GB" in done.stderr
    (run_dir,) = [p for p in tmp_path.iterdir() if (p / "manifest.json").is_file()]
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "interrupted"


def test_a_metrics_page_that_trickles_is_given_up_on_in_time():
    """A server that sends its /metrics one byte every 0.3 s, for ever: the sampler's read ends
    by its deadline instead of holding the sampler (and the memory watchdog) for ever."""
    import http.server
    import threading

    from arena_core.run import telemetry

    stop = threading.Event()

    class Trickle(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            while not stop.is_set():
                self.wfile.write(b"#")
                self.wfile.flush()
                stop.wait(0.3)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        started = time.monotonic()
        assert telemetry.read_metrics(f"http://127.0.0.1:{server.server_port}/metrics", DIALECTS) is None
        assert time.monotonic() - started < telemetry.METRICS_DEADLINE_S + 5  # not for ever: by its deadline (and one read)
    finally:
        stop.set()
        server.shutdown()


def test_model_memory_falls_back_to_the_servers_own_memory_when_the_machine_freed_more():
    """On a busy machine another process may free more than the server takes while it loads:
    memory in use then falls, and the server's own resident memory is the figure (never 0)."""
    from arena_core.run.telemetry import model_memory

    grew = model_memory({}, 1_000_000_000, 1_300_000_000, server_rss=320_000_000)
    assert grew.gb == pytest.approx(0.3) and grew.source.startswith("memory in use before and after")
    fell = model_memory({}, 1_300_000_000, 1_000_000_000, server_rss=320_000_000)
    assert fell.gb == pytest.approx(0.32) and fell.source.startswith("the server's resident memory once loaded")
    assert model_memory({}, 1_300_000_000, 1_000_000_000).gb == 0  # nothing better to say
    # no GPU: the server's own processes are its memory, whatever else the machine runs
    alone = model_memory({}, 1_000_000_000, 6_800_000_000, server_rss=320_000_000, cpu_only=True)
    assert alone.gb == pytest.approx(0.32) and alone.source.startswith("the server's own processes")

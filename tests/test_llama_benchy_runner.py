"""The llama-benchy runner, live against the rig: native vs the real llama-benchy, expected
values from the injected timing, conversations, faults, and what the server received."""

from __future__ import annotations

import json
import math
import shutil
import statistics
import sys
from pathlib import Path

import pytest

from arena_core import ArenaHooks, ClosedLoopShape, Endpoint, RunContext, RunOptions, WorkloadSpec, make_plugin_manager
from arena_core.loadgen import read_records
from arena_core.testing import run_cli
from arena_core.testing.fake_server import FakeServerProcess

MODEL = "fake-org/fake-model"
DECODE_GAP_MS = 10
PREFILL_BASE_MS = 20
PREFILL_PER_TOKEN_MS = 0.05
#: The answer's length in the parity test: 128 tokens are 1.27 s of decode, so a client read late
#: by 20 ms on a busy machine moves a decode rate 1.6 %, inside the 3 % it is held to (with 32
#: tokens, 0.31 s, the real llama-benchy once read 6 % under the rig's rate beside the suite).
PARITY_TOKENS = 128


@pytest.fixture(scope="module")
def runner():
    return ArenaHooks(make_plugin_manager(autoload=False, strict=True)).registry.get("runners", "llama-benchy")


def workload(name: str, **shape) -> WorkloadSpec:
    defaults = dict(prompt_tokens=256, generated_tokens=32, concurrency=2, runs=2, latency_mode="none")
    return WorkloadSpec(name=name, title=name, description="test", runner="llama-benchy", shape=ClosedLoopShape(**{**defaults, **shape}))


def rig_args(tokenizer_path: Path, *extra: str) -> list[str]:
    return [
        "--tokenizer",
        str(tokenizer_path),
        "--decode-gap-ms",
        str(DECODE_GAP_MS),
        "--prefill-base-ms",
        str(PREFILL_BASE_MS),
        "--prefill-per-token-ms",
        str(PREFILL_PER_TOKEN_MS),
        *extra,
    ]


def run(runner, spec, rig, tmp_path: Path, instrument: str, tokenizer_path: Path, corpus_path: Path):
    context = RunContext(
        endpoint=Endpoint(base_url=rig.url, model=MODEL),
        output_dir=tmp_path / instrument / spec.name,
        options=RunOptions(tokenizer=tokenizer_path if instrument == "external" else None, corpus=corpus_path),
    )
    result = runner.create(instrument).run(spec, context)
    report = json.loads((context.output_dir / "llama-benchy.json").read_text())
    return result, report


def rig_decode_speeds(log: list[dict]) -> list[float]:
    """The per-user decode speed the rig really served each request (llama-benchy's definition:
    tokens after the first over the time from the first to the last), from its log."""
    return [(e["completion_tokens"] - 1) / ((e["last_content_ns"] - e["first_content_ns"]) / 1e9) for e in log]


def rig_decode_speed(log: list[dict]) -> float:
    return statistics.fmean(rig_decode_speeds(log))


def close(ours: float, theirs: float, relative: float, absolute: float = 0.0) -> bool:
    return abs(ours - theirs) <= max(relative * abs(theirs), absolute)


def test_show_runner(runner):
    result = run_cli(make_plugin_manager(autoload=False), ["show", "runner", "llama-benchy", "--json"])
    data = json.loads(result.stdout)
    assert data["instruments"] == ["native", "external"] and data["loop"] == "closed"


@pytest.mark.skipif(
    shutil.which("llama-benchy") is None and not (Path(sys.executable).parent / "llama-benchy").exists(), reason="llama-benchy is not installed"
)
@pytest.mark.parametrize("concurrency", [1, 4])
@pytest.mark.slow
def test_native_agrees_with_the_real_llama_benchy(runner, tokenizer_path, corpus_path, tmp_path, monkeypatch, concurrency):
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{__import__('os').environ['PATH']}")
    spec = workload(f"parity-c{concurrency}", concurrency=concurrency, generated_tokens=PARITY_TOKENS)
    results, reports, logs = {}, {}, {}
    for instrument in ("native", "external"):
        with FakeServerProcess(rig_args(tokenizer_path)) as rig:
            results[instrument], reports[instrument] = run(runner, spec, rig, tmp_path, instrument, tokenizer_path, corpus_path)
            logs[instrument] = [e for e in rig.stop() if e["path"] == "/v1/chat/completions" and e.get("stream")]
    ours, theirs = reports["native"]["benchmarks"][0], reports["external"]["benchmarks"][0]
    assert {k: v is None for k, v in ours.items()} == {k: v is None for k, v in theirs.items()}
    # Each instrument measured its own run of the rig, and on a busy machine the rig's real decode
    # speed differs from run to run (a late wake-up of its sleep schedule): so each instrument is
    # held to what the rig did in its run -- its own log, stamped before each write -- and
    # through that to the other.
    truth_tps = {instrument: rig_decode_speed(log[-concurrency * 2 :]) for instrument, log in logs.items()}
    assert close(ours["tg_req_throughput"]["mean"], truth_tps["native"], 0.03), (ours["tg_req_throughput"]["mean"], truth_tps)
    assert close(theirs["tg_req_throughput"]["mean"], truth_tps["external"], 0.03), (theirs["tg_req_throughput"]["mean"], truth_tps)
    agreement = ours["tg_req_throughput"]["mean"] / truth_tps["native"] - theirs["tg_req_throughput"]["mean"] / truth_tps["external"]
    assert abs(agreement) <= 0.03
    assert close(ours["tg_throughput"]["mean"] / truth_tps["native"], theirs["tg_throughput"]["mean"] / truth_tps["external"], 0.03)
    assert close(ours["peak_throughput"]["mean"] / truth_tps["native"], theirs["peak_throughput"]["mean"] / truth_tps["external"], 0.05)
    truth_ms = {
        instrument: sum((e["first_content_ns"] - e["received_ns"]) / 1e6 for e in log[-concurrency * 2 :]) / (concurrency * 2)
        for instrument, log in logs.items()
    }
    # Time to first token (the rig's first content write) and to first response (its role chunk):
    # each instrument's holds the rig's own interval of the same requests (its send comes before the
    # rig receives, its arrival after the rig writes), never less. How much more is how late two
    # processes ran on this machine, which no test can bound on a busy one (an absolute 3 ms
    # failed beside other work): bench/client_overhead.py measures that error side by side with
    # llama-benchy's, in one run.
    truth_role_ms = {instrument: statistics.fmean((e["role_ns"] - e["received_ns"]) / 1e6 for e in log[-concurrency * 2 :]) for instrument, log in logs.items()}
    for key, truth in (("e2e_ttft", truth_ms), ("ttfr", truth_role_ms)):
        ours_error, theirs_error = ours[key]["mean"] - truth["native"], theirs[key]["mean"] - truth["external"]
        assert ours_error >= 0 and theirs_error >= 0, (key, ours_error, theirs_error)
    # Prefill speed per request (prompt tokens over the time to first response), against the
    # rig's own: never faster than the rig prefilled (the client's time holds the rig's), and no
    # further below it than llama-benchy's is below its run's. How far below is how late two
    # processes ran: on a ~33 ms first response, CI's clean clone saw 16 % (about 5 ms), so no
    # absolute bound holds on a busy machine; the side-by-side one does.
    truth_pp = {
        instrument: statistics.fmean(e["prompt_tokens"] / ((e["role_ns"] - e["received_ns"]) / 1e9) for e in log[-concurrency * 2 :])
        for instrument, log in logs.items()
    }
    ours_pp, theirs_pp = (report["pp_throughput" if concurrency == 1 else "pp_req_throughput"]["mean"] for report in (ours, theirs))
    assert ours_pp <= truth_pp["native"] * 1.01, (ours_pp, truth_pp)
    assert theirs_pp / truth_pp["external"] <= ours_pp / truth_pp["native"] * 1.03, (theirs_pp, ours_pp, truth_pp)
    # Both instruments sent the same kind of requests, of the same size.
    for instrument, log in logs.items():
        measured = [e for e in log if e["max_tokens"] == PARITY_TOKENS]
        assert len(measured) == concurrency * 3, instrument  # warmup run + 2 runs
        assert all(set(e["body_keys"]) == {"model", "messages", "max_tokens", "stream", "return_token_ids", "stream_options"} for e in measured)
        assert all(e["roles"] == ["user"] for e in measured)
        assert all(abs(e["prompt_tokens"] - 256) <= 2 for e in measured), [e["prompt_tokens"] for e in measured]
    # The rig did inject what was asked -- 10 ms a token, prefill 20 ms + 0.05 ms a token: it
    # planned exactly that prefill, and no first token came early. How late one came is this
    # machine's load, not the rig's doing (with the suite's other workers beside it, the least
    # late of two was 11 % late once), and the card is checked against what the rig did ...
    measured_log = logs["native"][-concurrency * 2 :]
    planned_ms = [e["prefill_planned_s"] * 1000 for e in measured_log]
    assert planned_ms == [pytest.approx(PREFILL_BASE_MS + PREFILL_PER_TOKEN_MS * e["prompt_tokens"]) for e in measured_log]
    injected = [(e["first_content_ns"] - e["received_ns"]) / 1e6 for e in measured_log]
    assert all(took >= plan - 1.0 for took, plan in zip(injected, planned_ms)), (injected, planned_ms)
    assert close(max(rig_decode_speeds(measured_log)), 1000 / DECODE_GAP_MS, 0.10)
    # ... and the card's figures are what the rig did: its decode speed, and its TTFT p50 the
    # median of the instrument's own per-request TTFTs, never below the rig's median (each
    # request's send comes before the rig receives it, its first token's read after the rig
    # writes it). How far above is this machine's load: with two requests to a cluster of
    # equal prefills the median of eight falls between clusters, where one late read moved it
    # 15 % (42.4 ms against the rig's 36.8) in a clean-clone run.
    assert close(results["native"].tokens_per_second, truth_tps["native"], 0.03)
    assert results["native"].ttft_p50_s * 1000 == pytest.approx(statistics.median(ours["e2e_ttft"]["values"]))
    assert results["native"].ttft_p50_s * 1000 >= statistics.median(injected), (results["native"].ttft_p50_s, injected)
    assert results["native"].verdict.valid and results["external"].verdict.valid


@pytest.mark.slow
def test_conversation_carries_its_history(runner, tokenizer_path, corpus_path, tmp_path):
    spec = workload("talk", prompt_tokens=64, generated_tokens=16, turns=3, concurrency=2, runs=1)
    with FakeServerProcess(rig_args(tokenizer_path)) as rig:
        result, report = run(runner, spec, rig, tmp_path, "native", tokenizer_path, corpus_path)
        log = [e for e in rig.stop() if e["path"] == "/v1/chat/completions" and e.get("stream") and e["max_tokens"] == 16]
    measured = log[len(log) // 2 :]  # the second half is the measured run (the first is warmup)
    by_roles = {tuple(e["roles"]): e["prompt_tokens"] for e in measured}
    assert set(by_roles) == {("user",), ("user", "assistant", "user"), ("user", "assistant", "user", "assistant", "user")}
    assert by_roles[("user",)] < by_roles[("user", "assistant", "user")] < by_roles[("user", "assistant", "user", "assistant", "user")]
    assert [e["context_size"] for e in report["benchmarks"]] == [0, 80, 160]
    assert all(result.metrics[f"turn{k}_ttft_p50_s"] is not None for k in (1, 2, 3))
    assert result.requests == 6 and result.failed == 0


@pytest.mark.slow
def test_failures_are_counted_not_dropped(runner, tokenizer_path, corpus_path, tmp_path):
    spec = workload("faulty", concurrency=3, runs=2, generated_tokens=8)
    with FakeServerProcess(rig_args(tokenizer_path, "--fault", "http", "--fail-every", "4")) as rig:
        result, report = run(runner, spec, rig, tmp_path, "native", tokenizer_path, corpus_path)
    records = read_records(tmp_path / "native" / "faulty" / "records.jsonl")
    measured = [r for r in records if not r.warmup]
    assert len(records) == 9 and result.requests == 6
    assert result.failed == sum(not r.ok for r in measured) > 0
    assert not result.verdict.valid and "requests failed" in result.verdict.reasons[0]
    assert sum(len(e["e2e_ttft"]["values"]) for e in report["benchmarks"]) == 6 - result.failed


def test_connection_refused_before_measuring_is_one_clear_error(runner, corpus_path, tmp_path):
    from arena_core import ArenaError

    context = RunContext(endpoint=Endpoint(base_url="http://127.0.0.1:9", model=MODEL), output_dir=tmp_path, options=RunOptions(corpus=corpus_path))
    with pytest.raises(ArenaError, match="cannot connect to 127.0.0.1:9"):
        runner.create("native").run(workload("nowhere"), context)


@pytest.mark.slow
def test_client_and_server_token_counts_cross_check(runner, tokenizer_path, corpus_path, tmp_path):
    with FakeServerProcess(rig_args(tokenizer_path)) as rig:
        run(runner, workload("counts", concurrency=1, runs=1), rig, tmp_path, "native", tokenizer_path, corpus_path)
    records = read_records(tmp_path / "native" / "counts" / "records.jsonl")
    assert all(r.completion_tokens_client == r.completion_tokens_server == 32 for r in records)
    assert not math.isnan(records[0].sent_ns)

"""Goodput and SLO attainment (capacity.md section 1): pure functions of the stored records,
recomputed by `arena card` under any SLO."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from arena_core import RequestRecord
from arena_core.errors import UsageError
from arena_core.loadgen.goodput import NAMED_SLOS, Slo, error_adjusted_percentile, goodput, parse_slo
from arena_core.testing import arena

TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"
S = 1_000_000_000  # ns in a second


def record(index: int, *, ttft: float, tokens: int = 11, decode_s: float = 0.5, ok: bool = True, scheduled: float | None = None) -> RequestRecord:
    """A request sent at ``index`` seconds: first token after ``ttft``, the rest over ``decode_s``."""
    sent = index * S
    first = sent + int(ttft * S)
    return RequestRecord(
        workload="w",
        run_index=0,
        request_index=index,
        scheduled_ns=None if scheduled is None else int(scheduled * S),
        sent_ns=sent,
        chunk_ns=(first, first + int(decode_s * S)),
        chunk_kinds="cc",
        end_ns=first + int(decode_s * S),
        completion_tokens_server=tokens,
        http_status=200 if ok else 500,
        error="" if ok else "HTTP 500",
    )


def test_parse_slo_named_sets_limits_and_errors():
    assert parse_slo("interactive") == NAMED_SLOS["interactive"] == Slo(ttft_s=2.0, tps=10.0)
    assert parse_slo("ttft=500ms,tps=none,e2e=30s,target=99%") == Slo(ttft_s=0.5, tps=None, e2e_s=30.0, target=0.99)
    assert parse_slo("target=0.9") == Slo(target=0.9)
    assert Slo().describe() == "TTFT ≤ 2 s and ≥ 10 tok/s for 95% of requests"
    for bad, words in (
        ("ttft=fast", "'ttft=fast' is not a limit"),
        ("latency=2s", "unknown limit 'latency'"),
        ("ttft=-1s", "is not a limit"),
        ("target=150%", "is not a limit"),
    ):
        with pytest.raises(UsageError, match=words):
            parse_slo(bad)


def test_attainment_and_goodput_count_every_miss():
    """Four requests: one meets the SLO, one is late, one decodes too slowly, one failed."""
    records = [record(0, ttft=0.5), record(1, ttft=3.0), record(2, ttft=0.5, decode_s=5.0), record(3, ttft=0.5, ok=False)]
    found = goodput(records, Slo())
    assert found["slo_attainment"] == 0.25
    span = (records[2].end_ns - records[0].sent_ns) / S  # first send to last end
    assert found["goodput_rps"] == pytest.approx(1 / span) and found["goodput_tps"] == pytest.approx(11 / span)
    assert found["ttft_p95_error_adjusted_s"] is None  # the failed request is the slowest of all
    assert goodput(records, Slo(ttft_s=5, tps=None))["slo_attainment"] == 0.75  # looser limits, the failure still misses


def test_error_adjusted_percentiles_and_queue_inclusive_ttft():
    assert error_adjusted_percentile([1.0, 2.0, 3.0, 4.0], 0, 50) == 2.5  # numpy's rule
    assert error_adjusted_percentile([1.0, 2.0, 3.0], 1, 50) == 2.5 and error_adjusted_percentile([1.0, 2.0, 3.0], 1, 95) is None
    waited = [record(i, ttft=0.2, scheduled=i - 1.0) for i in range(1, 4)]  # each waited 1 s for a slot
    found = goodput(waited, Slo())
    assert found["ttft_queue_inclusive_p50_s"] == pytest.approx(1.2) and found["slo_attainment"] == 1.0


@pytest.mark.slow
def test_a_stored_run_gains_its_slo_figures_under_any_slo(tmp_path, rig_run):
    """`arena card` recomputes them from the stored records: under an SLO no request can meet
    (every first token takes the rig's 20 ms prefill) attainment is 0 %."""
    run_dir = rig_run("--decode-gap-ms", "1", "--prefill-base-ms", "20")

    def card(*extra: str, cwd: Path = tmp_path) -> subprocess.CompletedProcess:
        return arena("card", run_dir.name, "--output", str(tmp_path / "store"), *extra, cwd=cwd)

    plain = card().stdout
    assert "Within the SLO (TTFT ≤ 2 s and ≥ 10 tok/s for 95% of requests)" in plain and "100%" in plain
    strict = json.loads(card("--slo", "ttft=5ms", "--format", "json").stdout)["card"]["workloads"]
    assert {w["name"]: w["metrics"]["slo_attainment"] for w in strict} == {"chat": 0.0, "monday-peak": 0.0}
    assert all(w["metrics"]["ttft_queue_inclusive_p50_s"] is not None for w in strict if w["name"] == "monday-peak")
    configured = tmp_path / "configured"
    configured.mkdir()
    (configured / "arena.toml").write_text('[slo]\nobjective = "ttft=5ms"\n')
    assert "Within the SLO (TTFT ≤ 0.005 s and ≥ 10 tok/s for 95% of requests)" in card(cwd=configured).stdout  # the config's [slo]
    bad = card("--slo", "ttft=soon")
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1].startswith("arena: error: --slo: 'ttft=soon' is not a limit")


def sweep_card(steps: dict[float, tuple[float, float]]):
    """A card holding rate-sweep steps: configured rate -> (achieved rate, TTFT p95 in s)."""
    from arena_core import CardWorkload, ModelCard

    lines = tuple(
        CardWorkload(
            name=f"rate-sweep-{rate:g}",
            tokens_per_second=10.0,
            ttft_p50_s=p95 / 2,
            metrics={"requested_rate": rate, "request_throughput": achieved, "ttft_p95_tool_s": p95, "requests": 100.0, "failed": 0.0, "total_tps": 1.0},
        )
        for rate, (achieved, p95) in steps.items()
    )
    return ModelCard(
        run_id="r",
        model="m",
        model_title="M",
        hardware="gb10",
        hardware_title="GB10",
        backend="vllm",
        measured_with="e",
        measured_at="",
        source="s",
        expected=(),
        workloads=lines,
    )


def test_the_seeds_rate_sweep_capacities_and_the_steps_it_did_not_serve():
    """The published Gemma-4-26B example (capacity.md 2): capacity none at 2 s, 0.7 req/s at 5 s
    (achieved 0.437, p95 4578 ms), 1.0 req/s at 10 s (achieved 0.527, p95 7628 ms). The spec quotes
    those two steps; the four lower ones here are constructed to agree with "none at 2 s" (each
    p95 over 2 s, served). Arena's own capacity leaves out the two steps the box never served."""
    from arena_core.report.model_card import render_model_card
    from arena_core.report.sweep import arena_capacity, seed_capacity, sweep_steps

    card = sweep_card({0.1: (0.1, 2.4), 0.2: (0.2, 2.9), 0.3: (0.296, 3.5), 0.5: (0.49, 6.2), 0.7: (0.437, 4.578), 1.0: (0.527, 7.628)})
    steps = sweep_steps(card)
    assert [seed_capacity(steps, x) for x in (2, 5, 10)] == [None, 0.7, 1.0]  # the seed's published figures
    assert [s.rate for s in steps if not s.served] == [0.7, 1.0]  # flagged: achieved 0.437 and 0.527
    assert [arena_capacity(steps, x) for x in (2, 5, 10)] == [None, 0.3, 0.5]
    text = render_model_card(card, {}, [], wide=True)  # tables whole, as --wide prints them
    assert "0.437 (not served)" in text and "0.527 (not served)" in text
    assert re.search(r"TTFT p95 under 5 s\s+0\.7 req/s\s+0\.3 req/s", text) and re.search(r"TTFT p95 under 2 s\s+none\s+none", text)

"""Arena's capacity search (capacity.md section 3): the search itself against known answers, and
`arena capacity` against the rig with a known number of slots."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from arena_core.run.capacity import Probe, passes, search
from arena_core.testing import arena
from arena_core.testing.fake_server import FakeServerProcess

TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"
#: A rig with 4 slots for the users searches judged by "ttft=400ms": a user with a slot sees its
#: first token after a 10 ms prefill, a fifth waits for a whole answer (20 tokens at x0.02, 30 ms
#: apart: about 620 ms). A passing probe holds while its requests come up to 390 ms late, as they
#: do on a busy 2-core machine.
SLOTS_RIG = ["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--slots", "4", "--prefill-base-ms", "10", "--decode-gap-ms", "30"]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


def known(capacity: int):
    """A server that serves up to ``capacity`` users within the SLO, and no more."""
    tried = []

    def probe(users: int) -> Probe:
        tried.append(users)
        return Probe(load=users, passed=users <= capacity, attainment=1.0 if users <= capacity else 0.5, failed=0)

    return probe, tried


@pytest.mark.parametrize("true", [1, 4, 5, 37, 100, 255])
def test_the_search_lands_within_its_precision_of_the_true_capacity(true):
    probe, tried = known(true)
    found = search(probe, start=1, limit=256, precision=0.1)
    assert found.found is not None and found.failed_at is not None
    assert found.found <= true < found.failed_at and found.failed_at - found.found <= max(1, 0.1 * found.found)
    assert len(tried) == len(set(tried)) == len(found.probes)  # no load probed twice
    assert len(tried) <= 16  # doubling to 256 takes at most 9 probes, bisecting to 10 % at most 7 more


def test_the_search_says_none_and_says_when_nothing_failed():
    probe, _ = known(0)
    assert search(probe, start=1, limit=64).found is None
    probe, tried = known(1000)
    found = search(probe, start=1, limit=64)
    assert found.found == 64 and found.failed_at is None and tried == [1, 2, 4, 8, 16, 32, 64]


def test_a_probe_with_a_failed_request_fails_whatever_its_attainment():
    assert passes(1.0, 0, 0.95) and not passes(1.0, 1, 0.95)  # a failure is never hidden by the others
    assert not passes(0.9, 0, 0.95) and not passes(None, 0, 0.95)
    assert passes(1.0, 0, 0.95, served=0.97) and not passes(1.0, 0, 0.95, served=0.9)  # a rate the server fell behind


def test_a_rate_search_bisects_between_rates_at_three_figures():
    tried = []

    def probe(rate: float) -> Probe:
        tried.append(rate)
        return Probe(load=rate, passed=rate <= 2.7, attainment=1.0, failed=0)

    found = search(probe, start=0.5, limit=64, precision=0.1, whole=False)
    assert found.found is not None and found.failed_at is not None
    assert found.found <= 2.7 < found.failed_at and found.failed_at - found.found <= 0.1 * found.found
    assert tried[:4] == [0.5, 1.0, 2.0, 4.0] and all(f"{rate:.3g}" == f"{rate}".rstrip("0").rstrip(".") or rate == float(f"{rate:.3g}") for rate in tried)


def rig_capacity(rig_url: str, store: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "arena_core", "capacity", "--base-url", rig_url, "--tokenizer", str(TOKENIZER / "tokenizer.json"), "--output", str(store)]
    return subprocess.run([*argv, *args], capture_output=True, text=True, timeout=timeout)


def probes_seen(stderr: str) -> list[tuple[str, str]]:
    return re.findall(r"probe ([0-9.]+) (?:users?|req/s): .*: (pass|fail)", stderr)


@pytest.mark.slow
def test_arena_capacity_finds_the_rigs_throughput_bound(tmp_path):
    """The rig decodes 60 tokens/s in all, shared by the streams decoding at once: c users get
    60/c tokens/s each. Under an SLO of at least 17.3 tokens/s per user (between 60/3 = 20 and
    60/4 = 15, 13 % from either), queueing arithmetic gives a capacity of exactly 3 users. A
    probe's stated duration of 2 s bounds each probe, at 20 requests at least."""
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--shared-tps", "60", "--decode-gap-ms", "1"]) as rig:
        done = rig_capacity(rig.url, tmp_path / "store", "--scale", "0.02", "--slo", "ttft=5s,tps=17.3", "--limit", "16", "--probe-seconds", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Capacity: 3 users (TTFT ≤ 5 s and ≥ 17.3 tok/s for 95% of requests), fails at 4" in done.stdout
    assert probes_seen(done.stderr) == [("1", "pass"), ("2", "pass"), ("4", "fail"), ("3", "pass")]
    # the stated duration ended the 1-user probe after its 20 requests (not the 100 asked for)
    measured = re.findall(r"chat-users-1: 2 s have passed: (\d+) of at most 100 runs measured", done.stderr)
    assert measured and 20 <= int(measured[0]) < 100


@pytest.mark.slow
def test_arena_capacity_over_request_rate_finds_the_rate_the_rig_keeps_up_with(tmp_path):
    """Four slots, each answer 10 ms + 19 × 38.6 ms = 0.743 s: the rig serves at most 4/0.743 =
    5.38 requests/s. Arrivals nearly regular and every answer as long (burstiness 100 and range
    ratio 0, from the config file), so below that rate nothing queues and above it a backlog
    grows: 5 req/s is kept up with, 6 is not (the server keeps up with about 90 % of it). The SLO's
    TTFT limit is loose; the rate decides. A rig only ever answers later than its pace, never
    sooner, so the margin that matters is at 5 req/s: it still keeps up with 95 % of it when
    each answer ends 99 ms late (a busy machine's late wake-ups); four slots of a long answer
    allow twice the lateness of two slots of a short one at the same capacity."""
    config = tmp_path / "arena.toml"
    config.write_text("[workloads.office-baseline]\nburstiness = 100\nrange_ratio = 0.0\n")
    rig_args = ["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--slots", "4", "--prefill-base-ms", "10", "--decode-gap-ms", "38.6"]
    with FakeServerProcess(rig_args) as rig:
        args = ["--load", "rate", "--scale", "0.04", "--slo", "ttft=10s,tps=none", "--start", "2", "--limit", "32", "--precision", "0.3"]
        done = rig_capacity(rig.url, tmp_path / "store", *args, "--probe-requests", "20", "--probe-seconds", "0", "--config", str(config))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Capacity: 5 req/s (TTFT ≤ 10 s for 95% of requests), fails at 6" in done.stdout, done.stderr[-3000:]
    assert probes_seen(done.stderr) == [("2", "pass"), ("4", "pass"), ("8", "fail"), ("6", "fail"), ("5", "pass")]
    run_id = re.search(r"arena card (\S+)\)", done.stdout).group(1)
    card = arena("card", run_id, "--output", str(tmp_path / "store"), "--wide")
    assert "Capacity: 5 req/s" in card.stdout and re.search(r"req/s +within the SLO +kept up", card.stdout), card.stdout


@pytest.mark.slow
def test_an_interrupted_search_carries_on_where_it_stopped(tmp_path):
    """Ctrl-C after the second probe keeps two probes; --resume runs neither again and finds
    what an uninterrupted search finds. A flag that would change the search is refused."""
    rig_args = SLOTS_RIG
    store = tmp_path / "store"
    with FakeServerProcess(rig_args) as rig:
        argv = [sys.executable, "-m", "arena_core", "capacity", "--base-url", rig.url, "--tokenizer", str(TOKENIZER / "tokenizer.json")]
        argv += ["--scale", "0.02", "--slo", "ttft=400ms,tps=none", "--limit", "16", "--probe-requests", "20", "--output", str(store)]
        search = subprocess.Popen(argv, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        seen = []
        for line in search.stderr:
            seen.append(line)
            if re.search(r"probe 2 users: .*: pass", line):
                search.send_signal(signal.SIGINT)
                break
        out, rest = search.communicate(timeout=120)
        stderr = "".join(seen) + rest
        assert search.returncode == 130, stderr[-3000:]
        run_id = re.search(r"--resume (\S+)", stderr).group(1)
        assert f"resume with: arena capacity --resume {run_id}" in stderr
        refused = rig_capacity(rig.url, store, "--resume", run_id, "--limit", "8")
        assert refused.returncode == 2 and "--limit would change what it measures" in refused.stderr
        not_capacity = subprocess.run([sys.executable, "-m", "arena_core", "run", "--resume", run_id, "--output", str(store)], capture_output=True, text=True)
        assert not_capacity.returncode == 2 and f"arena capacity --resume {run_id}" in not_capacity.stderr
        resumed = subprocess.run([*argv[:6], "--output", str(store), "--resume", run_id], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "chat-users-1: already measured, kept" in resumed.stderr and "chat-users-2: already measured, kept" in resumed.stderr
    assert "Capacity: 4 users (TTFT ≤ 0.4 s for 95% of requests), fails at 5" in resumed.stdout
    assert [load for load, _ in probes_seen(resumed.stderr)] == ["1", "2", "4", "8", "6", "5"]
    assert f"results: {store / run_id}" in resumed.stdout or run_id in resumed.stdout


@pytest.mark.slow
def test_slots_are_for_a_server_arena_starts(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "arena_core", "capacity", "--base-url", "http://127.0.0.1:9", "--slots", "4", "--output", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--slots sizes a server Arena starts; the server at http://127.0.0.1:9 was started with its own" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_arena_capacity_finds_the_rigs_slots(tmp_path):
    """The rig serves 4 requests at once and queues the rest; one answer takes about 20 tokens ×
    20 ms + 10 ms. Under a TTFT limit of 200 ms (half one service time, twenty times the unqueued
    TTFT, so a busy machine moves no request across it), a fifth user waits a whole answer:
    queueing arithmetic gives a capacity of exactly 4 users."""
    rig_args = SLOTS_RIG
    with FakeServerProcess(rig_args) as rig:
        argv = [sys.executable, "-m", "arena_core", "capacity", "--base-url", rig.url, "--tokenizer", str(TOKENIZER), "--scale", "0.02"]
        argv += ["--slo", "ttft=400ms,tps=none", "--limit", "16", "--probe-requests", "20", "--output", str(tmp_path / "store")]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        # a plain run of the same model on the same server, at the same scale, after the search
        plain = [sys.executable, "-m", "arena_core", "run", "--base-url", rig.url, "--tokenizer", str(TOKENIZER), "--workloads", "chat"]
        measured = subprocess.run([*plain, "--scale", "0.02", "--output", str(tmp_path / "store")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert measured.returncode == 0, measured.stderr[-3000:]
    assert "Capacity: 4 users (TTFT ≤ 0.4 s for 95% of requests), fails at 5" in done.stdout
    # the knee: a fifth user waits a whole answer, so TTFT p95 climbs past 4 users (4 slots)
    knee = "Knee: 4 users (TTFT p95 flat up to 4 users, climbing from 5 users)"
    assert knee in done.stdout
    assert re.findall(r"probe (\d+) users?: .*: (pass|fail)", done.stderr) == [
        ("1", "pass"),
        ("2", "pass"),
        ("4", "pass"),
        ("8", "fail"),
        ("6", "fail"),
        ("5", "fail"),
    ]
    run_id = re.search(r"arena card (\S+)\)", done.stdout).group(1)
    card = arena("card", run_id, "--output", str(tmp_path / "store"))
    assert "Capacity: 4 users (TTFT ≤ 0.4 s for 95% of requests, fails at 5)" in card.stdout  # judged by the SLO the run recorded
    assert knee in " ".join(card.stdout.split())
    assert re.search(r"chat-users-5\s+\S+\s+\S+", card.stdout)
    # the leaderboard's capacity column: a search's own, and for the plain run the newest search
    # of its model on its machine
    board = arena("leaderboard", "--include-scaled", "--json", "--output", str(tmp_path / "store"))
    rows = {row["run_id"]: row["capacity"] for row in json.loads(board.stdout)}
    assert rows.pop(run_id) == "4 users (ttft=400ms,tps=none)"
    assert list(rows.values()) == ["4 users (ttft=400ms,tps=none)"]
    # compare puts the search's answer and its probes beside another run
    plain_id = next(iter(rows))
    compared = arena("compare", run_id, plain_id, "--output", str(tmp_path / "store"))
    assert re.search(r"capacity +4 users +— ", compared.stdout) and re.search(r"chat-users-5 tok/s +[0-9.]+ \[[0-9.]+–[0-9.]+\] +— ", compared.stdout), (
        compared.stdout
    )
    # [cost]: the plain run is costed at the search's capacity; the rig reads no energy, so the
    # hardware alone is counted, and the card says electricity was not
    config = tmp_path / "arena.toml"
    config.write_text("[cost]\nprice_per_kwh = 0.30\nhardware_price = 1000\nlifetime_years = 2\n")
    costed = arena("--config", str(config), "leaderboard", "--include-scaled", "--json", "--output", str(tmp_path / "store"))
    costs = {row["run_id"]: row for row in json.loads(costed.stdout)}
    wide = arena(
        "--config", str(config), "leaderboard", "--include-scaled", "--wide", "--output", str(tmp_path / "store"), env={**os.environ, "COLUMNS": "400"}
    )
    assert "cost/Mtok" in wide.stdout and "hardware of 1000 EUR over 2 years at 100% of the hours" in " ".join(wide.stdout.split()), wide.stdout
    searched = json.loads(arena("card", run_id, "--format", "json", "--output", str(tmp_path / "store")).stdout)
    searched = next(probe for probe in searched["card"]["workloads"] if probe["name"] == "chat-users-4")
    by_hand = 1000 / (2 * 8766) / (searched["metrics"]["decode_tps_total"] * 3600) * 1e6
    assert costs[plain_id]["cost_per_million_output_tokens"] == pytest.approx(by_hand) and costs[run_id]["cost_per_million_output_tokens"] == pytest.approx(
        by_hand
    )
    plain_card = arena("--config", str(config), "card", plain_id, "--output", str(tmp_path / "store"), "--wide")
    assert f"per million output tokens at capacity 4 users (search {run_id})" in plain_card.stdout
    assert "electricity not counted (no energy counter read at capacity)" in plain_card.stdout
    # the site draws the curve and the probes' per-user against total throughput
    site = tmp_path / "site"
    published = arena("--config", str(config), "publish", str(site), "--output", str(tmp_path / "store"))
    assert published.returncode == 0, published.stderr[-2000:]
    assert ">capacity</th>" in (site / "index.html").read_text() and "4 users (ttft=400ms,tps=none)" in (site / "index.html").read_text()
    # a page named from what it is; the plain run's page names the search too (its cost is the search's)
    (page,) = [found for found in (site / "cards").glob("*.html") if f"<code>{run_id}</code>" in found.read_text() or "chat-users-5" in found.read_text()]
    html = page.read_text()
    # the cost on the site: the board says it (once, where every row has the same), each card its sum
    board_page = (site / "index.html").read_text()
    assert f"{costs[plain_id]['cost_per_million_output_tokens']:.3g} EUR" in board_page
    assert "Cost per million output tokens at each run&#39;s capacity (its newest capacity search), from electricity at 0.3 EUR/kWh and hardware" in board_page
    assert all("per million output tokens at capacity 4 users" in found.read_text() for found in (site / "cards").glob("*.html"))
    assert "<title>Share of requests within the SLO, per probe</title>" in html and "<title>Per-user against total throughput, per probe</title>" in html
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:  # CI installs it (scripts/install-test-browser.sh); test_site.py fails there without it
        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / "site-capacity.png"
        shot.unlink(missing_ok=True)
        flags = ["--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'chromium'}", "--window-size=1100,2600"]
        taken = subprocess.run([chromium, *flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True, timeout=120)
        assert taken.returncode == 0 and shot.stat().st_size > 10_000, taken.stderr[-2000:]

"""Arena's capacity search (capacity.md section 3): the search itself against known answers, and
`arena capacity` against the rig with a known number of slots."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arena_core.capacity import Probe, search
from arena_core.testing.fake_server import FakeServerProcess

TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"
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


def test_arena_capacity_finds_the_rigs_slots(tmp_path):
    """The rig serves 4 requests at once and queues the rest; one answer takes about 20 tokens ×
    20 ms + 10 ms. Under a TTFT limit of 200 ms (half one service time, twenty times the unqueued
    TTFT, so a busy machine moves no request across it), a fifth user waits a whole answer:
    queueing arithmetic gives a capacity of exactly 4 users."""
    rig_args = ["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--slots", "4", "--prefill-base-ms", "10", "--decode-gap-ms", "20"]
    with FakeServerProcess(rig_args) as rig:
        argv = [sys.executable, "-m", "arena_core", "capacity", "--base-url", rig.url, "--tokenizer", str(TOKENIZER), "--scale", "0.02"]
        argv += ["--slo", "ttft=200ms,tps=none", "--limit", "16", "--probe-requests", "20", "--output", str(tmp_path / "store")]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Capacity: 4 users (TTFT ≤ 0.2 s for 95% of requests), fails at 5" in done.stdout
    assert re.findall(r"probe (\d+) users?: .*: (pass|fail)", done.stderr) == [
        ("1", "pass"),
        ("2", "pass"),
        ("4", "pass"),
        ("8", "fail"),
        ("6", "fail"),
        ("5", "fail"),
    ]
    run_id = re.search(r"arena card (\S+)\)", done.stdout).group(1)
    card = subprocess.run([sys.executable, "-m", "arena_core", "card", run_id, "--output", str(tmp_path / "store")], capture_output=True, text=True, timeout=60)
    assert "Capacity: 4 users (TTFT ≤ 0.2 s for 95% of requests, fails at 5)" in card.stdout  # judged by the SLO the run recorded
    assert re.search(r"chat-users-5\s+\S+\s+\S+", card.stdout)
    # the site draws the curve and the probes' per-user against total throughput
    site = tmp_path / "site"
    assert (
        subprocess.run(
            [sys.executable, "-m", "arena_core", "publish", str(site), "--output", str(tmp_path / "store")], capture_output=True, timeout=60
        ).returncode
        == 0
    )
    page = site / "cards" / f"{run_id}.html"
    html = page.read_text()
    assert "<title>Share of requests within the SLO, per probe</title>" in html and "<title>Per-user against total throughput, per probe</title>" in html
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:  # CI installs it (scripts/install-test-browser.sh); test_site.py fails there without it
        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / "site-capacity.png"
        shot.unlink(missing_ok=True)
        flags = ["--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'chromium'}", "--window-size=1100,2600"]
        taken = subprocess.run([chromium, *flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True, timeout=120)
        assert taken.returncode == 0 and shot.stat().st_size > 10_000, taken.stderr[-2000:]

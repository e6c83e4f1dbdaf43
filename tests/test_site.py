"""Cards, leaderboard, import and the published site, end to end: the seed cards imported beside
one real embedded run (llama.cpp serving the Gemma GGUF), then the site opened in headless
Chromium. The screenshot lands in ``test-artifacts/`` for a person to look at."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from arena_core import BUILTIN_PLUGINS, ArenaHooks, ModelSpec, QualityScore, hookimpl, make_plugin_manager
from arena_core.report.site import publish
from arena_core.results.cards import load_cards, scores_for
from arena_core.results.findings import findings
from arena_core.results.imports import import_cards
from arena_core.testing import plugin_manager_with

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]
HOSTILE = "<script>alert(1)</script>"


def arena(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "arena_core", *args], cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A results directory with the seed site's cohort (17 cards) and one real embedded run (scaled x0.02)."""
    workdir = tmp_path_factory.mktemp("site")
    measured = arena("run", "--scale", "0.02", "--workloads", "chat,monday-peak", "--output", "store", cwd=workdir)
    assert measured.returncode == 0, measured.stderr
    imported = arena("import", "--seeds", "--output", "store", cwd=workdir)
    assert imported.returncode == 0 and imported.stdout.count("imported as run") == 17, imported.stderr
    return workdir


class Rows(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows, self.scripts, self.external = 0, 0, []
        self._in_row, self.text = False, []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tr" and "leaderboard-row" in (attrs.get("class") or "").split():
            self.rows += 1
        if tag == "script":
            self.scripts += 1
        for key in ("src", "href"):
            if attrs.get(key, "").startswith(("http:", "https:", "//")):
                self.external.append(attrs[key])

    def handle_data(self, data):
        self.text.append(data)


def test_card_leaderboard_compare_from_the_cli(store):
    seeds = json.loads(arena("leaderboard", "--output", "store", "--json", cwd=store).stdout)
    ranked = [(r["model"], r["score"]) for r in seeds if r["rank"]]
    assert [model for model, _ in ranked] == [
        "qwen3.6-35b-a3b",
        "gemma-4-26b-a4b-it-mtp-v23",
        "gemma-4-26b-a4b-it-bf16-v23",
        "ministral-3-3b-instruct-bf16",
        "qwen-3.5-2b-bf16",
        "qwen3.5-0.8b",
    ]  # the seed site's aggregate ranking, with its published headlines
    assert ranked[0][1] == 73.1 and ranked[-1][1] == 46.9 and len(seeds) == 17
    unranked = {r["model"]: r["labels"] for r in seeds if not r["rank"]}
    assert unranked["qwen3.6-27b"] == ["not ranked: no model memory"] and unranked["ministral-3-8b-instruct-bf16"] == ["not ranked: no quality or model memory"]
    batch = json.loads(arena("leaderboard", "--output", "store", "--json", "--profile", "batch", cwd=store).stdout)
    assert [(r["model"], r["score"]) for r in batch if r["rank"]][:2] == [("qwen3.5-0.8b", 84.8), ("qwen-3.5-2b-bf16", 47.6)]  # the seed's batch column
    assert "gemma-3-270m" not in {r["model"] for r in seeds}  # scaled runs are left out unless asked for
    runs = json.loads(arena("leaderboard", "--output", "store", "--json", "--include-scaled", cwd=store).stdout)
    (embedded,) = [r for r in runs if r["model"] == "gemma-3-270m"]
    assert embedded["rank"] is None and "scaled x0.02" in embedded["labels"] and embedded["hardware"] == "cpu-host"
    assert "not ranked: no quality" in embedded["labels"]  # listed beside the cohort, not ranked
    runs = [r for r in runs if r["model"] in ("qwen3.6-35b-a3b", "qwen3.5-0.8b")] + [embedded]
    card = arena("card", runs[2]["run_id"], "--output", "store", "--format", "markdown", cwd=store).stdout
    assert card.startswith("# Gemma 3 270M") and re.search(r"\| chat +\| [0-9]", card) and re.search(r"benches measured +\| 2/9", card)
    assert "llama-benchy --base-url" in card  # the exact command of each workload
    as_json = json.loads(arena("card", runs[0]["run_id"], "--output", "store", "--format", "json", cwd=store).stdout)
    assert as_json["scores"]["aggregate"]["version"] == "arena-site/1" and as_json["scores"]["aggregate"]["value"] == 73.1
    assert as_json["scores"]["aggregate (arena-score/1)"]["version"] == "arena-score/1"
    compared = arena("compare", runs[0]["run_id"], runs[1]["run_id"], "--output", "store", cwd=store).stdout
    assert "monday-peak tok/s" in compared and "0.21x" in compared  # 59.1 / 281


def test_findings_are_true_of_the_seed_figures(store):
    hooks = ArenaHooks(make_plugin_manager(autoload=False))
    cards, _ = load_cards(store / "store", hooks.registry)
    by_model = {c.model: c for c in cards}
    big = findings(by_model["qwen3.6-35b-a3b"], cards)
    assert "Did not complete: reasoning (8/9 workloads measured)." in big
    assert any(
        f.startswith("Prefill wall: TTFT p50 grows 22.2x from 1k ctx (chat, 1.21 s) to 25k ctx (long-context-25k, 26.88 s)") for f in big
    )  # 26.88 / 1.21
    assert "Saturated under monday-peak: the server completed at most 0.39 of 1.50 req/s offered over the arrivals." in big
    # among 17 models, the three nearest notable ones, each sentence true of both cards' figures
    by_title = {c.model_title: c for c in cards}
    compared = [re.fullmatch(r"([0-9.]+)x the throughput of (.+) under (\S+) \(([0-9.]+) vs ([0-9.]+) tok/s, same hardware\)\.", f) for f in big]
    compared = [m for m in compared if m]
    assert len(compared) == 3
    for ratio, title, workload, mine, theirs in (m.groups() for m in compared):
        ours, other = by_model["qwen3.6-35b-a3b"].workload(workload), by_title[title].workload(workload)
        assert float(mine) == pytest.approx(ours.tokens_per_second, rel=0.01) and float(theirs) == pytest.approx(other.tokens_per_second, rel=0.01)
        assert float(ratio) == pytest.approx(ours.tokens_per_second / other.tokens_per_second, rel=0.05)
        assert not 1 / 1.2 < float(ratio) < 1.2
    gemma = findings(by_model["gemma-3-270m"], cards)
    assert not any("throughput of" in f for f in gemma)  # other hardware and scale: never compared
    assert any(f.startswith("Decode reaches ") for f in gemma)


def test_published_site_is_self_contained_with_every_model(store):
    done = arena("publish", "site", "--output", "store", cwd=store)
    assert done.returncode == 0 and "18 cards" in done.stdout, done.stderr
    for page in ("index.html", *(f"leaderboard-{name}.html" for name in ("chat", "agent", "batch", "reasoning"))):  # a page per preset
        html = (store / "site" / page).read_text()
        index = Rows()
        index.feed(html)
        assert index.rows == 18 and index.scripts == 0 and index.external == [], page
        assert html.count('class="leaderboard-row band-top"') >= 1 and 'class="leaderboard-row band-bottom"' in html  # colour bands
        assert "<h3>small</h3>" in html and "<h3>medium</h3>" in html  # size buckets
        assert "<title>Quality against throughput; point area: model memory</title>" in html
        assert "<title>Per-user against total throughput, chat at c=10</title>" in html
    batch = (store / "site" / "leaderboard-batch.html").read_text()
    assert batch.index("Qwen3.5-0.8B (BF16)") < batch.index("Qwen3.6-35B-A3B (FP8)")  # 84.8 before 33.2
    for page in (store / "site" / "cards").glob("*.html"):
        parsed = Rows()
        parsed.feed(page.read_text())
        assert parsed.scripts == 0 and parsed.external == [] and "<svg" in page.read_text()


def _chromium(*args: str, user_data: Path) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={user_data}", *args], capture_output=True, text=True, timeout=120)


def _needs_chromium() -> None:
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI: scripts/install-test-browser.sh should have installed it")
        pytest.skip("chromium is not installed (scripts/install-test-browser.sh installs it as root)")


def console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]


def test_site_in_headless_chromium(store, tmp_path):
    _needs_chromium()
    site = store / "site"
    if not (site / "index.html").exists():
        assert arena("publish", "site", "--output", "store", cwd=store).returncode == 0
    url = (site / "index.html").resolve().as_uri()
    dom = _chromium("--dump-dom", url, user_data=tmp_path / "a")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count('class="leaderboard-row') == 18
    for title in ("Qwen3.6-35B-A3B (FP8)", "Qwen3.5-0.8B (BF16)", "Gemma 3 270M (GGUF Q4_K_M)"):
        assert title in dom.stdout
    assert console_errors(dom.stderr) == []
    ARTIFACTS.mkdir(exist_ok=True)
    pages = {"index.html": "site-leaderboard.png", **{f"leaderboard-{p}.html": f"site-leaderboard-{p}.png" for p in ("chat", "agent", "batch", "reasoning")}}
    for page, name in pages.items():  # every preset page, whole: the table, size buckets and both charts
        shown = _chromium("--dump-dom", (site / page).resolve().as_uri(), user_data=tmp_path / f"dom-{page}")
        assert shown.stdout.count('class="leaderboard-row') == 18 and console_errors(shown.stderr) == []
        shot = ARTIFACTS / name
        shot.unlink(missing_ok=True)
        taken = _chromium("--window-size=1100,3400", f"--screenshot={shot}", (site / page).resolve().as_uri(), user_data=tmp_path / name)
        assert taken.returncode == 0 and shot.stat().st_size > 10_000, taken.stderr[-2000:]
    card_page = next((site / "cards").glob("*.html")).resolve().as_uri()
    card_dom = _chromium("--dump-dom", card_page, user_data=tmp_path / "c")
    assert "Time to first token (p50), per workload" in card_dom.stdout and console_errors(card_dom.stderr) == []


class HostileModel:
    """A plugin whose model title is markup: it must render as text, and no script may run."""

    @hookimpl
    def arena_register_models(self, register):
        register(
            ModelSpec(
                name="hostile",
                title=HOSTILE,
                description=HOSTILE,
                hf_id="x/y",
                precision="bf16",
                quality=(QualityScore(benchmark="MMLU-Pro", value=50.0, source=HOSTILE),),
            )
        )


def test_plugin_supplied_markup_is_escaped_and_never_runs(tmp_path):
    hooks = ArenaHooks(plugin_manager_with(HostileModel(), builtins=BUILTIN_PLUGINS))
    cards_file = tmp_path / "cards.json"
    cards_file.write_text(
        json.dumps(
            {
                "format": "arena-cards/1",
                "cards": [
                    {
                        "model": "hostile",
                        "hardware": "gb10",
                        "backend": "vllm",
                        "source": HOSTILE,
                        "measured_at": "2026-11-29",
                        "workloads": {"chat": {"tokens_per_second": 10.0, "ttft_p50_s": 0.5}},
                    }
                ],
            }
        )
    )
    import_cards(cards_file, tmp_path / "store", hooks.registry)
    cards, _ = load_cards(tmp_path / "store", hooks.registry)
    index = publish(tmp_path / "site", cards, {c.run_id: scores_for(c, hooks) for c in cards}, {c.run_id: findings(c, cards) for c in cards})
    pages = [index, *(tmp_path / "site" / "cards").glob("*.html")]
    for page in pages:
        html = page.read_text()
        assert "<script" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    if CHROMIUM is None:
        return  # the browser half runs where Chromium is (always in CI, see the test above)
    for number, page in enumerate(pages):
        dom = _chromium("--dump-dom", page.resolve().as_uri(), user_data=tmp_path / f"u{number}")
        assert not re.search(r"<script\b", dom.stdout)  # no script element was created
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom.stdout  # the title is shown as text
        assert console_errors(dom.stderr) == []


def test_chart_ticks_enclose_the_data_and_labels_never_overlap():
    from arena_core.report.charts import nice_ticks, spread_labels

    assert nice_ticks(0, 86.0) == [0, 20, 40, 60, 80, 100]
    assert nice_ticks(0, 669.04) == [0, 200, 400, 600, 800]
    wanted = [100.0, 101.0, 102.0, 300.0, 99.5]
    placed = spread_labels(wanted, 14.0)
    ordered = sorted(placed)
    assert all(b - a >= 14.0 - 1e-9 for a, b in zip(ordered, ordered[1:]))
    assert [wanted.index(w) for w in sorted(wanted)] == [placed.index(p) for p in ordered]  # the order of heights is kept

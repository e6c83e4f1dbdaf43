"""What a person reads in a terminal: at 80 columns no line of card, leaderboard, compare or
predict is longer, numbers are right-aligned, a run is named by a short unique part of its id,
compare says which run each figure favours, and a board ranks the runs that measured its preset's
workload first (issue 31, on the seed cohort)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from arena_core import ArenaHooks, make_plugin_manager
from arena_core.report.quality import quality_and_score_lines
from arena_core.report.text import render_table
from arena_core.testing import arena as run_arena

ARENA = [sys.executable, "-m", "arena_core"]


def arena(*args: str, columns: int = 80) -> subprocess.CompletedProcess:
    """``arena ARGS``: in this process, or as a child for a command that measures (arena_core.testing.arena)."""
    return run_arena(*args, env={**os.environ, "COLUMNS": str(columns)})


@pytest.fixture(scope="module")
def seeds(seed_store_template, tmp_path_factory):
    store = shutil.copytree(seed_store_template, tmp_path_factory.mktemp("seeds") / "store")  # its ledger's fits kept
    board = json.loads(arena("leaderboard", "--output", str(store), "--json").stdout)
    return store, {row["model"]: row["run_id"] for row in board}


def longest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


@pytest.mark.slow
def test_every_command_fits_80_columns(seeds):
    store, run_of = seeds
    big, small = run_of["qwen3.6-35b-a3b"], run_of["qwen3.5-0.8b"]
    printed = {
        "card": arena("card", big, "--output", str(store)),
        "leaderboard": arena("leaderboard", "--output", str(store)),
        "reasoning board": arena("leaderboard", "--output", str(store), "--profile", "reasoning"),
        "compare": arena("compare", big, small, "--output", str(store)),
        "predict": arena("predict", "qwen3.6-35b-a3b", "--hardware", "gb10", "--capacity", "--output", str(store)),
    }
    for name, done in printed.items():
        assert done.returncode == 0, (name, done.stderr[-2000:])
        assert longest(done.stdout) <= 80, (name, max(done.stdout.splitlines(), key=len))
    assert len(printed["card"].stdout.splitlines()) > 100  # the whole card, fitted: nothing left out to fit
    wide = arena("leaderboard", "--output", str(store), "--wide")
    assert wide.returncode == 0 and longest(wide.stdout) > 80 and "hardware" in wide.stdout  # --wide: the rest, as wide as it is


def test_a_table_fits_by_wrapping_text_and_keeps_numbers_right_aligned():
    rows = [("1", "Qwen3.6-35B-A3B (FP8), a model with a very long name indeed", "73.1", "38.0 GB"), ("=12", "x", "5.0", "2.0 GB")]
    table = render_table(["rank", "model", "score", "memory"], rows, width=40)
    lines = table.splitlines()
    assert longest(table) <= 40 and "very long" in table  # the name wrapped in its column
    assert lines[2].startswith("     1") and lines[-1].startswith("   =12")  # ranks right-aligned
    assert any(line.rstrip().endswith("38.0 GB") for line in lines) and any(line.rstrip().endswith(" 2.0 GB") for line in lines)
    assert render_table(["a", "b"], [("x" * 30, "1")], width=200) == render_table(["a", "b"], [("x" * 30, "1")], width=1000)  # fits: as it is


def test_a_word_is_broken_only_when_nothing_else_makes_the_table_fit():
    """A workload's name is one word ("long-context-25k"): where a column of figures can give up
    the character the table lacks, the name stays on one line; a figure and its interval stay
    whole. Only a table that cannot fit otherwise breaks a word."""
    rows = [("long-context-25k", "6.8\n[5.5–8.5]", "37.7\n[29.2–49.7]", "25.92 s\n[18.62 s–34.89 s]", "41.2\n[32.1–54.1]")]
    table = render_table(["workload", "tok/s per user", "tok/s total", "TTFT", "seed's G"], rows, width=80)
    assert longest(table) <= 80 and "long-context-25k" in table and "[18.62 s–34.89 s]" in table
    assert longest(render_table(["workload", "figure"], [("long-context-25k", "1")], width=20)) <= 20  # no room: broken, not overflowing


def test_a_wrapped_figure_keeps_its_unit_and_its_per_cent_sign():
    """A cell that must wrap moves "(2 %)" to the next line whole: never "(2" on one line and
    "%)" on the next, nor a figure apart from its unit."""
    rows = [
        ("rag-8k", "5.7 → 5.6 (1 %)", "23.71 s → 23.31 s (2 %)", "45.3 → 45.1 (0 %)"),
        ("long-context-25k", "94.9 → 79.8 (19 %)", "73.80 s → 76.49 s (4 %)", "16.8 → 5.9 (187 %)"),
    ]
    table = render_table(["workload", "tok/s", "TTFT", "G"], rows, width=80)
    lines = table.splitlines()
    assert longest(table) <= 80 and "(2 %)" in table and "(4 %)" in table and "\u2007" not in table
    assert not any(line.rstrip().endswith(("(2", "(4", "23.31", "76.49")) for line in lines), table


@pytest.mark.slow
def test_a_source_several_quality_scores_share_is_said_once(seeds):
    """The seed's three published scores of a model share one source: the card says it once
    and "as above" after it, not the same paragraph a row (on a phone, three times its height)."""
    store, run_of = seeds
    card = arena("card", run_of["qwen3.6-35b-a3b"], "--output", str(store), columns=120).stdout
    quality = card.split("Quality: published")[1].split("\n\n")[0]
    assert quality.count("seed site: seed card") == 1 and quality.count("as above") == 2, quality
    assert "mean of 3 published scores (Q)" in quality


@pytest.mark.slow
def test_a_run_ranked_alone_leads_with_its_absolute_score_not_a_relative_100(seeds, tmp_path):
    """The seed's score is relative to the best run ranked with it: a store of one run would lead
    its card with 100. It leads with the absolute score instead, which means something alone."""
    store, run_of = seeds
    run_id = run_of["qwen3.6-35b-a3b"]
    alone = tmp_path / "alone"
    shutil.copytree(store / run_id, alone / run_id)
    card = arena("card", run_id, "--output", str(alone), columns=200).stdout
    figures = card.split("\n\n")[1]
    assert "absolute score, aggregate" in figures and "100.0" not in figures, figures
    assert re.search(r"scored among +1 run ranked together", card)  # the relative score is still there, and says why it is 100
    summary = [line for line in quality_and_score_lines(alone / run_id, ArenaHooks(make_plugin_manager())) if line.startswith("Arena score")]
    assert "arena-site" not in summary[0] and "arena-site/1, relative: the only run ranked, its own best): 100.0" in summary[1], summary  # as `arena run` ends
    shared = arena("card", run_id, "--output", str(store), columns=200).stdout.split("\n\n")[1]
    assert "Arena score, aggregate" in shared and "absolute" not in shared  # ranked among 17: the seed's own score leads


@pytest.mark.slow
def test_a_share_or_a_quotient_on_the_card_says_what_it_divides_by(seeds):
    """Every figure can be recomputed from the page: the open-loop G says the peak it divides the
    total by, and the decode's share of the memory-bandwidth ceiling says the ceiling."""
    store, run_of = seeds
    card = arena("card", run_of["qwen3.6-35b-a3b"], "--output", str(store), columns=400).stdout
    quotients = re.findall(r"([\d.]+) tok/s per request in flight \(the seed's: the total ÷ (\d+) at peak\), ([\d.]+) tok/s in all", card)
    assert len(quotients) == 3, card  # office-baseline, sharegpt, monday-peak
    for figure, peak, total in quotients:
        assert float(total) / int(peak) == pytest.approx(float(figure), abs=0.05 + 0.5 / int(peak))
    share = re.search(r"Decode reaches (\d+)% of the memory-bandwidth ceiling at best \(([\w-]+): ([\d.]+) of ([\d.]+) tok/s per user\)", card)
    assert share and int(share[1]) == pytest.approx(100 * float(share[3]) / float(share[4]), abs=1.5), card
    # the figure is the workload's own tok/s per user, as the card's workload table shows it
    assert re.search(rf"^{re.escape(share[2])} +{re.escape(share[3])} ", card, re.M), (share[0], card)


def test_an_open_loop_per_user_figure_is_the_total_over_the_peak_it_names():
    """Arena's own open-loop result keeps vLLM's output throughput as its tokens/s (900 here): the
    block's per-request figure is the seed's G, the total over the peak it says (2400 ÷ 12)."""
    from arena_core.report.workload_blocks import per_user_figure
    from arena_core.types import CardWorkload

    line = CardWorkload(
        name="office-baseline", tokens_per_second=900.0, ttft_p50_s=0.4, metrics={"total_tps": 2400.0, "peak_concurrency": 12.0, "site_tps": 200.0}
    )
    assert per_user_figure(line) == (200.0, "tok/s per request in flight (the seed's: the total ÷ 12 at peak)")
    assert per_user_figure(CardWorkload(name="chat", tokens_per_second=14.9, ttft_p50_s=1.2)) == (14.9, "tok/s per user")


@pytest.mark.slow
def test_compare_says_estimated_of_the_memory_that_is_and_only_of_it(seeds):
    store, run_of = seeds
    measured, estimated = run_of["qwen3.6-35b-a3b"], run_of["qwen3.6-27b"]
    rows = {line.split("  ")[0]: line for line in arena("compare", measured, estimated, "--output", str(store), columns=200).stdout.splitlines()}
    assert re.fullmatch(r"memory +38\.0 GB +27\.0 GB \(estimated\) +1\.41x, B better", rows["memory"]), rows["memory"]


@pytest.mark.slow
def test_the_leaderboard_heads_the_scores_second_part_as_what_it_is(seeds):
    """The seed's score ranks by G as a percentage of the best run's (23.4 for the 35B, whose card
    says G 86.4 tok/s): its column is "G %", not "G"; the absolute score's second part is P."""
    store, _ = seeds
    site = arena("leaderboard", "--output", str(store), columns=200).stdout
    assert re.search(r"rank +model +score +Q +G % +memory", site) and "G %: throughput G as a % of the best run's" in site
    absolute = arena("leaderboard", "--scorer", "arena", "--output", str(store), columns=200).stdout
    assert re.search(r"rank +model +score +Q +P +memory", absolute) and "P: performance" in absolute and "G %" not in absolute


@pytest.mark.slow
def test_a_run_is_named_by_a_unique_start_or_end_of_its_id(seeds):
    store, run_of = seeds
    run_id = run_of["qwen3.6-35b-a3b"]
    for short in (run_id[-4:], run_id):
        card = arena("card", short, "--output", str(store), "--format", "json")
        assert card.returncode == 0 and json.loads(card.stdout)["card"]["run_id"] == run_id, card.stderr
    shared = arena("card", run_id[:8], "--output", str(store))  # every seed run starts so
    assert shared.returncode == 2 and "is the start or end of 17 runs" in shared.stderr and "Traceback" not in shared.stderr
    board = arena("leaderboard", "--output", str(store)).stdout
    assert f"  {run_id[-4:]}\n" in board  # the leaderboard shows each run by the end that names it


@pytest.mark.slow
def test_compare_marks_each_figure_better_or_worse_in_its_direction(seeds):
    store, run_of = seeds
    big, small = run_of["qwen3.6-35b-a3b"], run_of["qwen3.5-0.8b"]
    rows = {line.split("  ")[0]: line for line in arena("compare", big, small, "--output", str(store), columns=200).stdout.splitlines()}
    assert rows["score (aggregate)"].endswith("A better")  # 73.1 against 46.9: more is better
    assert rows["memory"].endswith("B better")  # 38 GB against 2 GB: less is better
    assert rows["chat TTFT mean"].endswith("B better") and rows["chat tok/s"].endswith("B better")  # 1.21 s vs faster small model (the seed's means)
    assert "office-baseline TTFT p50" in rows  # an open-loop TTFT is a p50
    estimated = rows["memory"] if "memory" in rows else ""
    assert "(estimated)" not in estimated  # both runs' memory is the seed's published figure
    assert "monday-peak served" in rows and "benches of 9" in rows and "G, tok/s" in rows


@pytest.mark.slow
def test_the_reasoning_board_ranks_the_runs_that_ran_reasoning_first(seeds):
    store, _ = seeds
    board = json.loads(arena("leaderboard", "--output", str(store), "--profile", "reasoning", "--json").stdout)
    ranked = [row for row in board if row["rank"]]
    measured = [row for row in ranked if not any("reasoning not measured" in label for label in row["labels"])]
    assert 0 < len(measured) < len(ranked) and ranked[: len(measured)] == measured
    text = arena("leaderboard", "--output", str(store), "--profile", "reasoning").stdout
    assert "†" in text and "ranked after the runs that measured it" in " ".join(text.split())

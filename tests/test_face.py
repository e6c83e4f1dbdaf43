"""What a person reads must be right: the same score on every page, and a score explanation whose
arithmetic recomputes the score (issue 31's "correct first", on the seed cohort)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from arena_core import ArenaHooks, make_plugin_manager
from arena_core.results.cards import load_cards, scores_for_all
from arena_core.testing import arena as run_arena

ARENA = [sys.executable, "-m", "arena_core"]


def arena(*args: str) -> subprocess.CompletedProcess:
    """``arena ARGS``: in this process, or as a child for a command that measures (arena_core.testing.arena)."""
    return run_arena(*args)


@pytest.fixture(scope="module")
def seed_store(seed_store_template, tmp_path_factory):
    """The seed cards with their ledger's fits kept (a copy of conftest's template): nothing here changes them."""
    return shutil.copytree(seed_store_template, tmp_path_factory.mktemp("seeds") / "store")


@pytest.mark.slow
def test_compare_shows_each_runs_own_score_as_its_card_and_the_leaderboard_do(seed_store):
    board = json.loads(arena("leaderboard", "--output", str(seed_store), "--json").stdout)
    ranked = [row for row in board if row["score"] is not None]
    first, last = ranked[0], ranked[-1]
    compared = arena("compare", first["run_id"], last["run_id"], "--output", str(seed_store))
    assert compared.returncode == 0, compared.stderr
    row = next(line for line in compared.stdout.splitlines() if line.startswith("score ("))
    assert re.findall(r"\d+\.\d", row)[:2] == [f"{first['score']:.1f}", f"{last['score']:.1f}"]
    for entry in (first, last):
        card = json.loads(arena("card", entry["run_id"], "--output", str(seed_store), "--format", "json").stdout)
        assert card["scores"]["aggregate"]["value"] == entry["score"]


def _recomputed(arithmetic: str) -> float:
    """The sum of the weight × part terms before "=" in a score's arithmetic."""
    terms = re.findall(r"([0-9.]+) × [A-Z] ([0-9.]+)", arithmetic.split("=")[0])
    assert terms, arithmetic
    return sum(float(weight) * float(part) for weight, part in terms)


@pytest.mark.slow
def test_every_score_explanation_recomputes_its_score(seed_store):
    pm = make_plugin_manager(autoload=False)
    hooks = ArenaHooks(pm)
    cards, problems = load_cards(seed_store, hooks.registry)
    assert not problems and len(cards) == 17
    explained, ranked = 0, []
    for run_id, scores in scores_for_all(cards, hooks).items():
        if scores["aggregate"].value is not None:
            ranked.append(run_id)
        for score in scores.values():
            if score.value is None:
                assert score.arithmetic == ""
                continue
            # the terms as shown (two decimals) sum to the score before its rounding to one
            assert _recomputed(score.arithmetic) == pytest.approx(score.value, abs=0.05 + 0.005), score.arithmetic
            for part, value, best in re.findall(r"([QGE]) = 100 × ([0-9.e+]+) / ([0-9.e+]+)", score.arithmetic):
                shown = float(re.search(rf"× {part} ([0-9.]+)", score.arithmetic).group(1))
                assert 100 * float(value) / float(best) == pytest.approx(shown, abs=0.06), score.arithmetic
            explained += 1
    assert explained >= 6 * 2  # the ranked seed runs, under both scorers at least
    card = arena("card", ranked[0], "--output", str(seed_store)).stdout
    assert " × Q " in card and " × G " in card and " × E " in card


@pytest.mark.slow
def test_saturated_only_over_the_arrivals_and_alike_in_table_and_findings(seed_store):
    """The seed calls the 35B's office-baseline "200/200 green" (0.28 of 0.30 req/s over the whole
    run, drain included) and the 0.8B's reasoning fine at 96 ms TTFT: neither is saturated over its
    arrivals; the 35B's monday-peak (0.35 of 1.50) is. The table and the findings say the same."""
    board = json.loads(arena("leaderboard", "--output", str(seed_store), "--json").stdout)
    run_of = {row["model"]: row["run_id"] for row in board}
    big = arena("card", run_of["qwen3.6-35b-a3b"], "--output", str(seed_store)).stdout
    small = arena("card", run_of["qwen3.5-0.8b"], "--output", str(seed_store)).stdout
    assert re.search(r"office-baseline .*0\.28 of 0\.30 req/s(?!: saturated)", big) and "Saturated under office-baseline" not in big
    assert re.search(r"reasoning .*0\.17 of 0\.20 req/s(?!: saturated)", small) and "Saturated under reasoning" not in small
    assert "0.35 of 1.50 req/s: saturated" in big and "Saturated under monday-peak" in big
    for run_id in run_of.values():
        card = arena("card", run_id, "--output", str(seed_store)).stdout
        in_table = set(re.findall(r"^(\S+) .* req/s: saturated", card, re.MULTILINE))
        in_findings = set(re.findall(r"Saturated under (\S+):", card))
        assert in_table == in_findings, (run_id, in_table, in_findings)


def _figure(text: str) -> float:
    """A figure as a card writes it ("8.2", "113", "511 ms", "1.08 s"), in tokens/s or seconds."""
    number, _, unit = text.partition(" ")
    return float(number) / 1000 if unit == "ms" else float(number)


@pytest.mark.slow
def test_every_predicted_against_measured_error_recomputes_from_the_figures_beside_it(seed_store):
    """A reader checks "8.2 → 8.2 (1 %)" with the two figures the page gives, and gets 0 %: each
    error is written from the figures as written (the seed's Nemotron 3 Super's chat is such a row)."""
    board = json.loads(arena("leaderboard", "--output", str(seed_store), "--json").stdout)
    cells = 0
    for row in board:
        card = arena("card", row["run_id"], "--output", str(seed_store), "--format", "markdown", "--wide").stdout
        for predicted, measured, error in re.findall(r"\| ([0-9.]+(?: m?s)?) → ([0-9.]+(?: m?s)?) \((\d+) %\)", card):
            expected = abs(_figure(predicted) - _figure(measured)) / _figure(measured) * 100
            assert f"{expected:.0f}" == error, (row["model"], predicted, measured, error)
            cells += 1
    assert cells >= 17 * 9 * 2  # every run's tok/s and TTFT at least

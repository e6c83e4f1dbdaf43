"""The Arena score: the golden check against the two published cards, profiles, missing inputs."""

from __future__ import annotations

import attrs
import pytest

from arena_core import ArenaHooks, CardWorkload, make_plugin_manager
from arena_core.cards import load_cards, scores_for
from arena_core.imports import import_file, seed_cards_path
from arena_scoring import ArenaScorer


@pytest.fixture(scope="module")
def hooks():
    return ArenaHooks(make_plugin_manager(autoload=False, strict=True))


@pytest.fixture(scope="module")
def seed_cards(hooks, tmp_path_factory):
    output = tmp_path_factory.mktemp("store")
    import_file(seed_cards_path(), output, hooks.registry, workload=None, model=None, hardware=None, backend="vllm")
    cards, problems = load_cards(output, hooks.registry)
    assert problems == []
    return {card.model: card for card in cards}


def test_golden_the_seed_cards_score_as_published(seed_cards):
    big, small = seed_cards["qwen3.6-35b-a3b"], seed_cards["qwen3.5-0.8b"]
    assert ArenaScorer().score(big).value == pytest.approx(73.1, abs=0.3)
    assert ArenaScorer().score(small).value == pytest.approx(46.9, abs=0.3)
    # the parts as scoring.md derives them
    assert ArenaScorer().score(big).quality == pytest.approx(83.87, abs=0.01)
    assert ArenaScorer().score(small).quality == pytest.approx(20.80, abs=0.01)  # HumanEval not published: left out
    assert ArenaScorer().score(big).performance == pytest.approx(55.5, abs=0.5)
    assert ArenaScorer().score(small).performance == pytest.approx(88.9, abs=0.5)


def test_missing_workload_scores_zero_and_is_named(seed_cards):
    score = ArenaScorer().score(seed_cards["qwen3.6-35b-a3b"])
    assert score.per_workload["reasoning"] == 0 and score.missing == ("reasoning",)
    assert score.publishable and score.version == "arena-score/1"


def test_profiles_weigh_differently(seed_cards):
    card = seed_cards["qwen3.5-0.8b"]
    aggregate, agent, batch = (ArenaScorer(profile=p).score(card) for p in ("aggregate", "agent", "batch"))
    assert aggregate.value != agent.value != batch.value
    # batch: 0.4 quality weight, speed share 0.8 -- by hand from its own parts
    assert batch.value == pytest.approx(round(0.4 * batch.quality + 0.6 * batch.performance, 1))


def test_config_profiles_override_and_add(seed_cards, hooks):
    card = seed_cards["qwen3.5-0.8b"]
    custom = {"speed-only": {"quality_weight": 0.0, "speed_share": 1.0}, "aggregate": {"quality_weight": 1.0, "speed_share": 0.5}}
    scores = scores_for(card, hooks, custom)
    assert set(scores) == {"aggregate", "agent", "batch", "speed-only"}
    assert scores["aggregate"].value == pytest.approx(20.8, abs=0.05)  # quality alone now
    with pytest.raises(ValueError, match="unknown scoring profile 'nope'"):
        ArenaScorer(profile="nope")


def test_no_quality_means_no_score_but_performance_shown(seed_cards):
    card = attrs.evolve(seed_cards["qwen3.5-0.8b"], quality=())
    score = ArenaScorer().score(card)
    assert score.value is None and score.performance > 0 and "quality" in score.missing


def test_scaled_or_invalid_results_are_not_publishable(seed_cards):
    card = seed_cards["qwen3.5-0.8b"]
    scaled = attrs.evolve(card, workloads=tuple(attrs.evolve(w, scale=0.1) for w in card.workloads))
    score = ArenaScorer().score(scaled)
    assert not score.publishable and "scaled run (x0.1)" in score.notes[0]
    broken = attrs.evolve(card, workloads=tuple(attrs.evolve(w, valid=w.name != "chat") for w in card.workloads))
    score = ArenaScorer().score(broken)
    assert not score.publishable and score.per_workload["chat"] == 0 and "chat: invalid result" in score.notes[0]


def test_interval_comes_from_the_workloads_own_intervals(seed_cards):
    card = seed_cards["qwen3.5-0.8b"]
    assert ArenaScorer().score(card).low == ArenaScorer().score(card).high  # published figures carry no interval
    wide = CardWorkload(name="chat", tokens_per_second=10.0, ttft_p50_s=1.0, tokens_per_second_low=5.0, tokens_per_second_high=20.0, ttft_p50_low_s=0.5, ttft_p50_high_s=2.0)
    lines = tuple(wide if w.name == "chat" else w for w in card.workloads)
    score = ArenaScorer().score(attrs.evolve(card, workloads=lines))
    assert score.low < score.value < score.high


def test_the_example_script_scores_stored_runs_without_the_cli(hooks, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    import_file(seed_cards_path(), tmp_path, hooks.registry, workload=None, model=None, hardware=None, backend="vllm")
    script = Path(__file__).resolve().parent.parent / "examples" / "score_stored_runs.py"
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "aggregate         73.1" in done.stdout and "missing: reasoning" in done.stdout

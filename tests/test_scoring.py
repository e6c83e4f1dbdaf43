"""The two scores: the seed site's own (arena-site) against the whole published cohort, and Arena's
absolute one (arena-score/1) against the two published cards; profiles, missing inputs."""

from __future__ import annotations

import attrs
import pytest

from arena_core import CardWorkload, read_manifest, testing
from arena_core.results.cards import load_cards, scores_for
from arena_core.results.imports import import_file, seed_cards_path
from arena_scoring import ArenaScorer, SiteScorer


@pytest.fixture(scope="module")
def seed_cards(hooks, tmp_path_factory):
    output = tmp_path_factory.mktemp("store")
    import_file(seed_cards_path(), output, hooks.registry, workload=None, model=None, hardware=None, backend="vllm")
    cards, problems = load_cards(output, hooks.registry)
    assert problems == []
    return {card.model: card for card in cards}


def test_golden_the_seed_cards_score_as_published(seed_cards):
    big, small = seed_cards["qwen3.6-35b-a3b"], seed_cards["qwen3.5-0.8b"]
    assert len(seed_cards) == 17  # the whole published cohort
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
    # the default scorer (arena-site) by profile name, Arena's absolute one beside it with the config's tables
    arena = {name.removesuffix(" (arena-score/1)") for name in scores if name.endswith("(arena-score/1)")}
    assert arena == {"aggregate", "agent", "batch", "speed-only"}
    assert set(scores) - {f"{name} (arena-score/1)" for name in arena} == {"aggregate", "chat", "agent", "batch", "reasoning"}
    assert scores["aggregate (arena-score/1)"].value == pytest.approx(20.8, abs=0.05)  # quality alone now
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
    wide = CardWorkload(
        name="chat", tokens_per_second=10.0, ttft_p50_s=1.0, tokens_per_second_low=5.0, tokens_per_second_high=20.0, ttft_p50_low_s=0.5, ttft_p50_high_s=2.0
    )
    lines = tuple(wide if w.name == "chat" else w for w in card.workloads)
    score = ArenaScorer().score(attrs.evolve(card, workloads=lines))
    assert score.low < score.value < score.high


@pytest.mark.slow
def test_the_example_script_scores_stored_runs_without_the_cli(hooks, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    import_file(seed_cards_path(), tmp_path, hooks.registry, workload=None, model=None, hardware=None, backend="vllm")
    script = Path(__file__).resolve().parent.parent / "examples" / "score_stored_runs.py"
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "aggregate         73.1" in done.stdout and "missing: reasoning" in done.stdout


def test_leaderboard_ties_where_intervals_overlap(seed_cards):
    from arena_core import Score
    from arena_core.results.leaderboard import choose, rank

    base = seed_cards["qwen3.5-0.8b"]
    cards = [attrs.evolve(base, run_id=name) for name in ("a", "b", "c", "scaled")]
    cards[3] = attrs.evolve(cards[3], workloads=tuple(attrs.evolve(w, scale=0.1) for w in base.workloads))

    def score(value, low, high):
        return Score(
            version="v", profile="aggregate", value=value, low=low, high=high, quality=1.0, performance=1.0, per_workload={}, missing=(), publishable=True
        )

    scores = {"a": score(60.0, 58.0, 62.0), "b": score(59.0, 57.5, 61.0), "c": score(50.0, 49.0, 51.0), "scaled": score(90.0, 90.0, 90.0)}
    rows = rank(choose(cards), scores)
    assert [(r.card.run_id, r.rank, r.tie) for r in rows] == [("a", 1, True), ("b", 1, True), ("c", 3, False)]
    with_scaled = rank(choose(cards, include_scaled=True), scores)
    assert with_scaled[0].card.run_id == "scaled" and with_scaled[0].labels == ("scaled x0.1",)


LLAMA_BENCHY_RESULT = {
    "version": "0.4.0",
    "timestamp": "2026-11-29 18:19:35Z",
    "latency_mode": "generation",
    "latency_ms": 10.0,
    "model": "org/model",
    "prefix_caching_enabled": False,
    "max_concurrency": 10,
    "benchmarks": [
        {
            "concurrency": 10,
            "context_size": 0,
            "prompt_size": 1024,
            "response_size": 1024,
            "is_context_prefill_phase": False,
            "tg_throughput": {"mean": 148.0, "std": 2.0, "values": [146.0, 150.0]},
            "tg_req_throughput": {"mean": 14.9, "std": 0.3, "values": [14.6, 15.2]},
            "e2e_ttft": {"mean": 1210.0, "std": 50.0, "values": [1150.0, 1210.0, 1300.0]},
        }
    ],
}
VLLM_RESULT = {
    "date": "20261129-182531",
    "completed": 290,
    "failed": 10,
    "output_throughput": 59.1,
    "total_token_throughput": 500.0,
    "request_throughput": 0.35,
    "median_ttft_ms": 1350.0,
    "median_tpot_ms": 60.0,
    "request_rate": 1.5,
}


def test_import_reference_tool_results(hooks, tmp_path):
    import json

    from arena_core.errors import UsageError

    (tmp_path / "benchy.json").write_text(json.dumps(LLAMA_BENCHY_RESULT))
    (tmp_path / "vllm.json").write_text(json.dumps(VLLM_RESULT))
    store = tmp_path / "store"
    import_file(tmp_path / "benchy.json", store, hooks.registry, workload="chat", model="qwen3.6-35b-a3b", hardware="gb10", backend="vllm")
    import_file(tmp_path / "vllm.json", store, hooks.registry, workload="monday-peak", model="qwen3.6-35b-a3b", hardware="gb10", backend="vllm")
    cards, problems = load_cards(store, hooks.registry)
    assert problems == [] and len(cards) == 2
    chat = next(c for c in cards if c.workload("chat")).workload("chat")
    assert chat.tokens_per_second == 14.9 and chat.ttft_p50_s == 1.21 and chat.metrics["decode_tps_total"] == 148.0 and chat.valid
    peak = next(c for c in cards if c.workload("monday-peak")).workload("monday-peak")
    assert peak.tokens_per_second == 59.1 and peak.ttft_p50_s == 1.35
    assert not peak.valid and "10 of 300 requests failed" in peak.reasons[0]  # failures are not hidden by an import
    with pytest.raises(UsageError, match="--workload is required"):
        import_file(tmp_path / "vllm.json", store, hooks.registry, workload=None, model="qwen3.6-35b-a3b", hardware="gb10", backend="vllm")
    # a model outside the catalog (as an attached server's run names it) is taken by its name; text that is no name is not
    with pytest.raises(UsageError, match="^--model: '../nope' is neither a catalog model"):
        import_file(tmp_path / "vllm.json", store, hooks.registry, workload="monday-peak", model="../nope", hardware="gb10", backend="vllm")
    (outside,) = import_file(tmp_path / "vllm.json", store, hooks.registry, workload="monday-peak", model="my-own-model", hardware="gb10", backend="vllm")
    assert read_manifest(store / outside).model_title == "my-own-model"


@pytest.mark.slow
def test_a_config_profile_ranks_the_leaderboard(tmp_path):

    (tmp_path / "arena.toml").write_text(
        "[scoring.profiles.speed-only]\nquality_weight = 0.0\nspeed_share = 1.0\n\n[scoring.profiles.agent]\nquality_weight = 0.7\nspeed_share = 0.5\nworkload_weights = { chat = 5 }\n"
    )

    def arena(*args):
        return testing.arena(*args, cwd=tmp_path)

    assert arena("import", "--seeds").returncode == 0
    board = arena("leaderboard", "--scorer", "arena", "--profile", "speed-only", "--json")
    assert board.returncode == 0, board.stderr
    rows = [r for r in __import__("json").loads(board.stdout) if r["rank"]]
    assert len(rows) == 9 and rows == sorted(rows, key=lambda r: -r["performance"])  # the 9 with quality scores, by speed alone
    assert all(r["score"] == pytest.approx(r["performance"], abs=0.05) for r in rows)
    assert arena("leaderboard", "--scorer", "arena", "--profile", "agent").returncode == 0
    wrong = arena("leaderboard", "--profile", "speed-only")  # the config's profiles are the arena scorer's
    assert wrong.returncode == 2 and "--scorer arena" in wrong.stderr


SITE_PRESETS = ("aggregate", "chat", "agent", "batch", "reasoning")


def test_golden_the_site_score_of_the_cohort_is_the_published_one(seed_cards):
    """Scored as one cohort, every preset value the seed site published comes out within 0.15
    (scoring.md A), and the two seed headlines exactly at one decimal."""
    cohort = list(seed_cards.values())
    compared = 0
    for preset in SITE_PRESETS:
        scores = SiteScorer(preset=preset).score_cohort(cohort)
        for card in cohort:
            published = card.model_facts.published_scores.get(preset)
            if published is not None:
                assert scores[card.run_id].value == pytest.approx(published, abs=0.15), (card.model, preset)
                compared += 1
    assert compared == 16
    aggregate = SiteScorer().score_cohort(cohort)
    assert aggregate[seed_cards["qwen3.6-35b-a3b"].run_id].value == 73.1 and aggregate[seed_cards["qwen3.5-0.8b"].run_id].value == 46.9
    # the other views of the 35B: agent 72.8, batch 33.2
    assert SiteScorer(preset="agent").score_cohort(cohort)[seed_cards["qwen3.6-35b-a3b"].run_id].value == 72.8
    assert SiteScorer(preset="batch").score_cohort(cohort)[seed_cards["qwen3.6-35b-a3b"].run_id].value == 33.2


def test_the_site_score_lists_what_it_cannot_rank(seed_cards):
    """A model without quality is not ranked, and says what is missing; one without stated
    memory is ranked with its weights' size, and its score says the memory is estimated."""
    cohort = list(seed_cards.values())
    scores = SiteScorer().score_cohort(cohort)
    unranked = [c for c in cohort if scores[c.run_id].value is None]
    assert len(unranked) == 8  # the 8 seed runs without published quality; 6 ranked before memory was estimated
    for card in unranked:
        missing = scores[card.run_id].missing
        assert missing == ("quality",)
        assert any(note.startswith("not ranked: ") for note in scores[card.run_id].notes)
    estimated = [c for c in cohort if c.model_memory_estimated and scores[c.run_id].value is not None]
    assert {c.model_title for c in estimated} == {"Qwen3.6-27B (FP8)", "Gemma 4 26B-A4B-it (NVFP4)", "Qwen3.6-35B-A3B (BF16)"}
    nvfp4 = next(c for c in estimated if "NVFP4" in c.model_title)
    assert nvfp4.model_memory_gb == 14.6 and "26B parameters × 0.5625 bytes (NVFP4" in (nvfp4.model_memory_source or "")
    assert any("E from the model's estimated memory, 14.6 GB" in note for note in scores[nvfp4.run_id].notes)


def test_the_site_score_is_relative_to_its_cohort(seed_cards):
    """Alone, a run is its own best: 100 on every component; in the cohort, its published value."""
    small = seed_cards["qwen3.5-0.8b"]
    assert SiteScorer().score(small).value == 100.0
    assert "cohort: 1 run ranked together" in " ".join(SiteScorer().score(small).notes)


def test_the_site_throughput_of_a_workload(seed_cards):
    """Closed loop: total decode tokens/s at c=10; open loop: total throughput over peak concurrency."""
    small = seed_cards["qwen3.5-0.8b"]
    assert small.workload("chat").site_tps == 669.04
    assert small.workload("monday-peak").site_tps == pytest.approx(6461.492173878038 / 23, abs=1e-3)
    measured = attrs.evolve(small.workload("monday-peak"), metrics={"total_tps": 100.0, "peak_concurrency": 4.0})  # an Arena run's figures
    assert measured.site_tps == 25.0
    assert attrs.evolve(small.workload("chat"), metrics={"tokens_per_second": 1.0}).site_tps is None


def test_every_cards_scores_at_once_are_each_cards_own(seed_cards, hooks):
    """The site scores each shared cohort once; a scaled run still gets its own cohort."""
    from arena_core.results.cards import scores_for_all

    cards = list(seed_cards.values())
    scaled = attrs.evolve(cards[0], run_id="scaled", workloads=tuple(attrs.evolve(w, scale=0.1) for w in cards[0].workloads))
    cards.append(scaled)
    together = scores_for_all(cards, hooks)
    assert together == {card.run_id: scores_for(card, hooks, None, cards) for card in cards}
    assert any(note.startswith("cohort: 18 runs") for note in together["scaled"]["aggregate"].notes)

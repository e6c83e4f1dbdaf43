"""The seed site's figures and suite from Arena's own measurements (issue 15): what its cards
print, computed and labelled; its reasoning shape; its second suite as optional workloads; a
scorer's own nine, whatever else is registered; imported cards that carry quality."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import attrs
import pytest
from compare import flat

from arena_core import ArenaHooks, WorkloadSpec, hookimpl
from arena_core.plugins import BUILTIN_PLUGINS
from arena_core.results.cards import load_cards
from arena_core.results.imports import import_file, seed_cards_path
from arena_core.testing import arena as run_arena
from arena_core.testing import plugin_manager_with, rig_run_argv
from arena_core.testing.fake_server import FakeServerProcess
from arena_scoring import ArenaScorer, SiteScorer

TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"


def arena(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``arena ARGS``: in this process, or as a child for a command that measures (arena_core.testing.arena)."""
    return run_arena(*args, cwd=cwd)


def test_reasoning_is_what_the_seed_site_ran(registry):
    shape = registry.get("workloads", "reasoning").shape
    assert (shape.input_tokens, shape.output_tokens, shape.request_rate, shape.num_prompts) == (1024, 4096, 0.2, 50)


def test_the_second_suite_is_registered_but_measured_only_when_named(registry):
    from arena_core.run.session import default_workloads

    stress = registry.get("workloads", "concurrency-stress")
    assert (stress.shape.prompt_tokens, stress.shape.generated_tokens, stress.shape.concurrency, stress.optional) == (25000, 256, 20, True)
    points = {(w.shape.prompt_tokens, w.shape.concurrency) for w in (r.item for r in registry.registrations("workloads")) if w.name.startswith("big-context-")}
    assert points == {(p, c) for p in (4096, 8192, 16384, 25000) for c in (1, 5, 10)}
    assert len(default_workloads(registry)) == 9 and "concurrency-stress" not in default_workloads(registry)
    sweep = [w for w in (r.item for r in registry.registrations("workloads")) if w.name.startswith("rate-sweep-")]
    assert [(w.shape.request_rate, w.shape.num_prompts, w.shape.burstiness, w.optional) for w in sweep] == [
        (0.1, 100, 0.7, True),
        (0.2, 100, 0.7, True),
        (0.3, 100, 0.7, True),
        (0.5, 125, 0.7, True),
        (0.7, 175, 0.7, True),
        (1.0, 250, 0.7, True),
    ]


class TenthWorkload:
    """A plugin adding a workload to every default run."""

    @hookimpl
    def arena_register_workloads(self, register):
        register(
            WorkloadSpec(
                name="tenth",
                title="Tenth",
                description="one more",
                runner="llama-benchy",
                shape=attrs.evolve(ArenaHooks(plugin_manager_with(builtins=BUILTIN_PLUGINS)).registry.get("workloads", "chat").shape),
            )
        )


def test_a_tenth_workload_changes_no_stored_score(tmp_path, hooks):
    """Scores and "n/9" count the scorer's own nine, not whatever plugins register."""
    import_file(seed_cards_path(), tmp_path, hooks.registry, workload=None, model=None, hardware=None, backend="vllm")
    plain, _ = load_cards(tmp_path, hooks.registry)
    widened = ArenaHooks(plugin_manager_with(TenthWorkload(), builtins=BUILTIN_PLUGINS))
    assert "tenth" in widened.registry.names("workloads")
    wide, _ = load_cards(tmp_path, widened.registry)
    assert [c.expected for c in wide] == [c.expected for c in plain] and len(wide[0].expected) == 9
    assert [ArenaScorer().score(c) for c in wide] == [ArenaScorer().score(c) for c in plain]
    assert SiteScorer().score_cohort(wide) == SiteScorer().score_cohort(plain)


def test_a_workload_with_one_of_its_two_figures_counts_as_missing_and_is_named(tmp_path, hooks):
    import_file(seed_cards_path(), tmp_path, hooks.registry, workload=None, model=None, hardware=None, backend="vllm")
    cards, _ = load_cards(tmp_path, hooks.registry)
    card = next(c for c in cards if c.model == "qwen3.5-0.8b")
    halved = attrs.evolve(card, workloads=tuple(attrs.evolve(w, ttft_p50_s=None) if w.name == "chat" else w for w in card.workloads))
    score = ArenaScorer().score(halved)
    assert score.per_workload["chat"] == 0 and "chat" in score.missing and "chat: no TTFT p50, scored as missing" in score.notes


@pytest.mark.slow
def test_the_seed_figures_of_arenas_own_run(tmp_path, rig_run):
    """Measured by Arena: the closed-loop TTFT mean (the seed's "TTFT p50") beside the true p50,
    the open-loop total ÷ peak concurrency beside output throughput, G and the rate served."""
    run_dir = rig_run("--decode-gap-ms", "1")
    chat = json.loads((run_dir / "workloads" / "chat" / "result.json").read_text())["metrics"]
    peak = json.loads((run_dir / "workloads" / "monday-peak" / "result.json").read_text())["metrics"]
    assert chat["ttfr_mean_s"] > 0 and chat["ttft_p50_s"] > 0 and chat["decode_tps_total"] > 0
    assert peak["peak_concurrency"] >= 1 and peak["site_tps"] == pytest.approx(peak["total_tps"] / peak["peak_concurrency"])
    assert peak["ttft_p95_tool_s"] >= peak["ttft_p50_s"] > 0  # vllm bench serve's own p95, as the rate sweep judges it
    card = flat(arena("card", run_dir.name, "--output", "store", "--wide", cwd=tmp_path).stdout)  # --wide: table cells unwrapped
    assert "As the seed site counts it" in card and "total ÷ peak concurrency; TTFT p50" in card and "per user at c=10; TTFT mean" in card
    assert "Throughput (the seed site's G, mean over 2 workloads)" in card
    # the commands to type: the served model's id and the local tokenizer the run used
    assert "--model fake-org/fake-model --pp " in card and f"--tokenizer {TOKENIZER}" in card
    assert f"--max-concurrency 25 --seed 42 --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,95,99 --tokenizer {TOKENIZER}" in card


@pytest.mark.slow
def test_a_seed_card_is_as_complete_as_the_seeds(tmp_path):
    assert arena("import", "--seeds", "--output", "store", cwd=tmp_path).returncode == 0
    board = json.loads(arena("leaderboard", "--output", "store", "--json", cwd=tmp_path).stdout)
    big = next(r["run_id"] for r in board if r["model"] == "qwen3.6-35b-a3b")
    card = flat(arena("card", big, "--output", "store", "--wide", cwd=tmp_path).stdout)  # tables whole, commands on one line
    for shown in (
        re.escape("0.35 of 1.50 req/s: saturated"),  # monday-peak: served 0.35 of the 1.5 req/s asked
        r"average\s+83\.9",  # the quality average (Q)
        re.escape("35B total, 3B active"),
        re.escape("https://huggingface.co/Qwen/Qwen3.6-35B-A3B-FP8"),
        re.escape("128 GB unified"),
        re.escape("published by the seed site (LLM Arena, CC-BY-4.0"),
        r"scored among\s+17 runs ranked together",
        r"GPQA-Diamond\s+86\.0",  # a number keeps its trailing .0
        # what each workload is and how it ran, in its block
        re.escape("Monday-morning peak (monday-peak) · open loop, as vllm bench serve 4000 in / 500 out at 1.5 req/s (Poisson)"),
        re.escape("parameters: random (4000 in / 500 out), 300 prompts at 1.5 req/s"),
        # the command as a reader runs it: the model's Hugging Face id, the server's name for it kept
        re.escape(
            "vllm bench serve --backend openai-chat --base-url http://localhost:8000 --endpoint /v1/chat/completions "
            "--model Qwen/Qwen3.6-35B-A3B-FP8 --tokenizer Qwen/Qwen3.6-35B-A3B-FP8 --served-model-name qwen3.6-35b-a3b-fp8"
        ),
        # multi-turn's figures are of the seed's literal command (4 tokens of history): the card says so, and shows it first
        re.escape("Measured as its source ran it: 1 turn, 4 tokens of history, prompts of 1,877 tokens as its server counted them: the figures below"),
        # and every closed-loop prompt as the seed's server counted it (its llama-benchy cut them in GPT-2's tokens)
        re.escape("Measured as its source ran it: prompts of 933 tokens as its server counted them"),
        re.escape("multi-turn as the seed site ran it, which measured these figures (4 tokens of history, not five turns): llama-benchy"),
        re.escape("--pp 2048 --tg 512 --depth 4 --concurrency 10 --runs 3 --latency-mode generation multi-turn as Arena runs it (five turns): llama-benchy"),
        # a closed-loop TTFT the seed gave as a mean (llama-benchy's) is called one; open loop's is a p50
        r"chat\s+14\.9\s+1\.21 s \(mean\)",
        re.escape("tok/s in all · TTFT mean 1.21 s"),
        re.escape("Prefill wall: TTFT mean grows 22.2x"),
        r"office-baseline\s+53\.6\s+1\.23 s\s",
        re.escape("1286 tok/s in all, input and output"),  # open loop: vllm bench serve's total, input tokens counted
    ):
        assert re.search(shown, card), shown


@pytest.mark.slow
def test_an_imported_card_carries_quality_and_refuses_impossible_ones(tmp_path):
    card = {
        "model": "someones-model",
        "model_title": "Someone's model",
        "hardware": "gb10",
        "backend": "vllm",
        "source": "a test",
        "quality": [{"benchmark": "MMLU-Pro", "value": 61.5, "source": "vendor card"}],
        "workloads": {"chat": {"tokens_per_second": 10.0, "ttft_p50_s": 0.5, "decode_tps_total": 90.0}},
    }
    (tmp_path / "cards.json").write_text(json.dumps({"format": "arena-cards/1", "cards": [card]}))
    assert arena("import", "cards.json", "--output", "store", cwd=tmp_path).returncode == 0
    (stored,) = json.loads(arena("leaderboard", "--output", "store", "--json", cwd=tmp_path).stdout)
    assert stored["model_title"] == "Someone's model" and stored["quality"] == 61.5
    card["quality"][0]["value"] = 150
    (tmp_path / "bad.json").write_text(json.dumps({"format": "arena-cards/1", "cards": [card]}))
    bad = arena("import", "bad.json", "--output", "store", cwd=tmp_path)
    assert bad.returncode == 2 and "$.cards[0].quality[0].value: a quality score is 0 to 100, not 150" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_a_cards_file_says_what_its_runs_measured_and_bad_settings_are_refused(tmp_path):
    """The seed's cards say their multi-turn ran four tokens of history (not a conversation) on
    servers with an FP8 KV cache; the import keeps both for the prediction, and checks them."""
    card = {"model": "qwen3.5-0.8b", "hardware": "gb10", "backend": "vllm", "source": "a test"}
    card["workloads"] = {"multi-turn": {"tokens_per_second": 90.0, "ttft_p50_s": 0.5}}
    said = {"measured_shapes": {"multi-turn": {"turns": 1, "depth": 4}}, "server_settings": {"kv_cache_dtype": "fp8"}}
    (tmp_path / "cards.json").write_text(json.dumps({"format": "arena-cards/1", **said, "cards": [card]}))
    assert arena("import", "cards.json", "--output", "store", cwd=tmp_path).returncode == 0
    (manifest,) = [json.loads(p.read_text()) for p in (tmp_path / "store").glob("*/manifest.json")]
    assert manifest["config"] == said
    wrong = (
        ("measured_shapes", {"multi-turn": {"turns": 0}}, "$.measured_shapes.multi-turn:"),
        ("server_settings", {"kv_cache_dtype": "fp4"}, "$.server_settings.kv_cache_dtype: expected one of auto, bf16"),
        ("server_settings", {"kv_cache_dtype": ["fp8"]}, "$.server_settings.kv_cache_dtype: expected one of auto, bf16"),
    )
    for key, value, message in wrong:
        (tmp_path / "bad.json").write_text(json.dumps({"format": "arena-cards/1", **said, key: value, "cards": [card]}))
        bad = arena("import", "bad.json", "--output", "store", cwd=tmp_path)
        assert bad.returncode == 2 and message in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    # a card's own settings (its server's step budget and slots, say) over the file's, each checked
    for value, message in (
        ({"token_budget": 0}, "$.cards[0].server_settings.token_budget: must be greater than 0"),
        ({"slots": "20"}, "$.cards[0].server_settings.slots: expected an integer, got str '20'"),
        ({"slots": "9" * 5000}, "$.cards[0].server_settings.slots: expected an integer, got str '999"),
        ({"token_budget": True}, "$.cards[0].server_settings.token_budget: expected an integer, got bool"),
        ({"slots": 10**9}, "$.cards[0].server_settings.slots: must be greater than 0 and at most 10,000"),
        ({"speculative_tokens": 1000}, "$.cards[0].server_settings.speculative_tokens: must be greater than 0 and at most 64"),
        (
            {"max_num_batched_tokens": 2048},
            "$.cards[0].server_settings.max_num_batched_tokens: not a known setting (kv_cache_dtype, token_budget, slots, speculative_tokens, "
            "sixteen_bit_compute, prefix_caching)",
        ),
        ({"sixteen_bit_compute": "yes"}, "$.cards[0].server_settings.sixteen_bit_compute: expected true or false"),
        ({"prefix_caching": 0}, "$.cards[0].server_settings.prefix_caching: expected true or false"),
        ([2048], "$.cards[0].server_settings: expected a mapping of settings"),
    ):
        (tmp_path / "bad.json").write_text(json.dumps({"format": "arena-cards/1", **said, "cards": [card | {"server_settings": value}]}))
        bad = arena("import", "bad.json", "--output", "store2", cwd=tmp_path)
        assert bad.returncode == 2 and message in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
        assert len(bad.stderr) < 400  # a long value is cut short in the one line
        assert not (tmp_path / "store2").exists() or not list((tmp_path / "store2").glob("*/manifest.json"))
    own = card | {"server_settings": {"kv_cache_dtype": "auto", "token_budget": 2048, "slots": 20}}
    (tmp_path / "own.json").write_text(json.dumps({"format": "arena-cards/1", **said, "cards": [own, card]}))
    assert arena("import", "own.json", "--output", "store3", cwd=tmp_path).returncode == 0
    configs = sorted((json.loads(p.read_text())["config"] for p in (tmp_path / "store3").glob("*/manifest.json")), key=len)
    assert {json.dumps(c["server_settings"], sort_keys=True) for c in configs} == {
        json.dumps({"kv_cache_dtype": "fp8"}),
        json.dumps({"kv_cache_dtype": "auto", "slots": 20, "token_budget": 2048}),
    }
    # the card says what its figures are of: the seed's literal command where that is what ran, else the shape
    for shapes, said_first in (({"turns": 1, "depth": 4}, True), ({"turns": 2}, False)):
        (tmp_path / "shaped.json").write_text(json.dumps({"format": "arena-cards/1", "measured_shapes": {"multi-turn": shapes}, "cards": [card]}))
        store = f"shaped{shapes['turns']}"
        assert arena("import", "shaped.json", "--output", store, cwd=tmp_path).returncode == 0
        (run,) = [p.parent.name for p in (tmp_path / store).glob("*/manifest.json")]
        shown = flat(arena("card", run, "--output", store, "--wide", cwd=tmp_path).stdout)
        assert f"Measured as its source ran it: {shapes['turns']} turn" in shown
        assert ("multi-turn as the seed site ran it, which measured these figures" in shown) == said_first, shown
    for shapes, message in (({"office-baseline": {"depth": 4}}, "expected a closed-loop workload"), ({"multi-turn": {"turns": "1"}}, "expected whole numbers")):
        (tmp_path / "bad.json").write_text(json.dumps({"format": "arena-cards/1", "measured_shapes": shapes, "cards": [card]}))
        bad = arena("import", "bad.json", "--output", "store", cwd=tmp_path)
        assert bad.returncode == 2 and message in bad.stderr, bad.stderr
    # a card's own measured shapes (the prompts its server counted) join the file's field by field, each checked
    counted = card | {"measured_shapes": {"multi-turn": {"prompt_tokens": 1866}, "chat": {"prompt_tokens": 927}}}
    (tmp_path / "counted.json").write_text(json.dumps({"format": "arena-cards/1", **said, "cards": [counted, card]}))
    assert arena("import", "counted.json", "--output", "counted", cwd=tmp_path).returncode == 0
    shapes_of = {json.dumps(json.loads(p.read_text())["config"]["measured_shapes"], sort_keys=True) for p in (tmp_path / "counted").glob("*/manifest.json")}
    assert shapes_of == {
        json.dumps({"multi-turn": {"turns": 1, "depth": 4}}, sort_keys=True),
        json.dumps({"chat": {"prompt_tokens": 927}, "multi-turn": {"depth": 4, "prompt_tokens": 1866, "turns": 1}}, sort_keys=True),
    }
    (run,) = [p.parent.name for p in (tmp_path / "counted").glob("*/manifest.json") if "chat" in p.read_text()]
    shown = flat(arena("card", run, "--output", "counted", "--wide", cwd=tmp_path).stdout)
    assert "1 turn, 4 tokens of history, prompts of 1,866 tokens as its server counted them" in shown
    assert "multi-turn as the seed site ran it, which measured these figures" in shown  # still the literal command, with its prompt counted
    for shapes, message in (
        ({"chat": {"prompt_tokens": 0}}, "$.cards[0].measured_shapes.chat:"),
        ({"sharegpt": {"prompt_tokens": 9}}, "expected a closed-loop workload"),
    ):
        (tmp_path / "bad.json").write_text(json.dumps({"format": "arena-cards/1", **said, "cards": [card | {"measured_shapes": shapes}]}))
        bad = arena("import", "bad.json", "--output", "store4", cwd=tmp_path)
        assert bad.returncode == 2 and message in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
        assert not (tmp_path / "store4").exists() or not list((tmp_path / "store4").glob("*/manifest.json"))


def test_a_cards_command_names_the_tokenizer_and_dataset_the_run_used(registry, tmp_path):
    from arena_core import RunOptions

    runner, sharegpt = registry.get("runners", "vllm-bench"), registry.get("workloads", "sharegpt")
    (tmp_path / "tok").mkdir()
    options = RunOptions(tokenizer=tmp_path / "tok" / "tokenizer.json", dataset=tmp_path / "sharegpt.json")
    line = runner.command_for(sharegpt, "http://spark:8000", "org/model", options)
    assert line.endswith(f"--tokenizer {tmp_path / 'tok'} --dataset-path {tmp_path / 'sharegpt.json'}")
    plain = runner.command_for(sharegpt, "http://spark:8000", "org/model", RunOptions())
    assert plain.endswith("--dataset-path ShareGPT_V3_unfiltered_cleaned_split.json")  # the file vllm bench serve needs
    assert "--tokenizer" not in plain and "--dataset-path" not in runner.command_for(sharegpt, "http://spark:8000", "org/model")


@pytest.mark.slow
def test_a_server_answering_garbage_stops_the_run_before_its_first_workload(tmp_path):
    """The sanity check before a suite: one question, and noise instead of text ends the run at
    once, saying what came back; nothing measured, no run left behind."""
    from arena_core.run.sanity import QUESTION, garbage
    from arena_core.testing.fake_server import SANITY_QUESTION

    assert QUESTION == SANITY_QUESTION
    assert garbage("Hello") == "" and garbage("  \n") == "an empty answer" and garbage("\x00\ufffd\x07 hi").startswith("3 of 6 characters")
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--fault", "garbage"]) as rig:
        done = subprocess.run(
            rig_run_argv(rig.url, tmp_path / "store", tokenizer=TOKENIZER, workloads="chat", scale="0.02"), capture_output=True, text=True, timeout=120
        )
        log = rig.stop()
    assert done.returncode == 2 and "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "sanity check" in last and "answered garbage" in last and "no workload was started" in last and "\\x00" in last
    assert [e for e in log if e["path"] == "/v1/chat/completions" and not e.get("sanity")] == []
    assert not any((p / "manifest.json").is_file() for p in (tmp_path / "store").iterdir()) if (tmp_path / "store").exists() else True


@pytest.mark.slow
def test_a_seed_model_the_catalog_knows_better_shows_the_catalogs_precision_beside_the_sources(seed_store, registry):
    """The seed labels its Ministral 3 runs BF16; their decode speed is only possible at one byte a
    weight, and the catalog (its title, the prediction) takes FP8. The card's Model section says
    both and its weights estimate is the catalog's, so no page says BF16 and 16 GB beside "FP8"."""
    from arena_core.report.model_card import model_rows
    from arena_core.results.cards import load_cards

    cards = {card.model: card for card in load_cards(seed_store, registry)[0]}
    eight = cards["ministral-3-8b-instruct-bf16"]
    assert ("precision", "FP8 (Arena's catalog; the source says BF16)") in model_rows(eight)
    assert eight.model_title.endswith("(FP8)") and eight.model_memory_estimated and eight.model_memory_gb == 8.0
    assert ("precision", "BF16") in model_rows(cards["qwen-3.5-2b-bf16"])  # where the two agree, the source's words


def test_an_extra_workload_is_counted_apart_on_every_page(tmp_path, hooks):
    """One rule for "benches": the standard suite's count, an optional tenth apart. The
    leaderboard said "10/9" where the card said "9/9"."""
    from arena_core.cli.cmd_leaderboard import _ranked_table
    from arena_core.report.model_card import big_figures, header_rows
    from arena_core.results.leaderboard import rank, row_dict

    import_file(seed_cards_path(), tmp_path, hooks.registry, workload=None, model=None, hardware=None, backend="vllm")
    cards, _ = load_cards(tmp_path, hooks.registry)
    card = next(c for c in cards if len(c.measured_benches) == 9)
    tenth = attrs.evolve(card.workload("chat"), name="ttft-cache-states")
    card = attrs.evolve(card, workloads=(*card.workloads, tenth))
    assert card.benches() == "9/9 + 1 extra" and card.extra_benches == ("ttft-cache-states",)
    score = ArenaScorer().score(card)
    rows = rank([card], {card.run_id: score})
    assert row_dict(rows[0])["benches"] == "9/9 + 1 extra"
    _, table = _ranked_table(rows, {card.run_id: "r1"}, lambda c: None, wide=False)
    assert "9/9 + 1 extra" in table[0]
    assert ("benches measured", "9/9 + 1 extra") in header_rows(card, {"arena": score})
    assert any(figure[1] == "9/9 + 1 extra" for figure in big_figures(card, {"arena": score}))

"""Prediction is a plugin like any other: without it Arena measures, shows cards, ranks and
publishes, and says where prediction would be; with it, the ledger's fits are kept in the store
and a card reads them instead of fitting again."""

from __future__ import annotations

import json
import subprocess

import pytest
from compare import flat

from arena_core import make_plugin_manager
from arena_core.results.predictions import NO_PREDICTOR, StoredFits
from arena_core.testing import arena as run_arena
from arena_core.testing import run_cli


def arena(*args: str) -> subprocess.CompletedProcess:
    """``arena ARGS``: in this process, or as a child for a command that measures (arena_core.testing.arena)."""
    return run_arena(*args)


@pytest.mark.slow
def test_without_the_prediction_plugin_run_card_leaderboard_and_publish_work_and_say_so(rig_run, monkeypatch, tmp_path):
    monkeypatch.setenv("ARENA_DISABLED_PLUGINS", "arena_prediction")
    run_dir = rig_run()  # arena run, measured on the rig, with the plugin disabled
    store = run_dir.parent
    manager = make_plugin_manager(autoload=False, disabled=["arena_prediction"])
    assert run_cli(manager, ["list", "predictors"]).output.strip() == "No predictors registered."
    card = run_cli(manager, ["card", run_dir.name, "--output", str(store)])
    assert card.exit_code == 0 and "Predicted vs measured" in card.output and NO_PREDICTOR in flat(card.output)
    assert json.loads(run_cli(manager, ["card", run_dir.name, "--output", str(store), "--format", "json"]).output)["predictions"] == []
    board = run_cli(manager, ["leaderboard", "--output", str(store), "--include-scaled", "--prediction-error"])
    assert board.exit_code == 0 and NO_PREDICTOR in board.output
    published = run_cli(manager, ["publish", str(tmp_path / "site"), "--output", str(store)])
    assert published.exit_code == 0, published.output
    (page,) = [path.read_text(encoding="utf-8") for path in (tmp_path / "site" / "cards").glob("*.html")]  # the one run's page, named from what it is
    assert NO_PREDICTOR in page and NO_PREDICTOR in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    predicted = arena("predict", "qwen3.6-35b-a3b", "--hardware", "gb10")
    assert predicted.returncode == 2 and NO_PREDICTOR in predicted.stderr and "Traceback" not in predicted.stderr


@pytest.mark.slow
def test_a_backend_that_declares_no_scheduling_is_not_covered(rig_run, tmp_path):
    """The attaching backend does not know which engine answers: predict, calibrate and the card
    of its run say so, instead of simulating it as another engine."""
    run_dir = rig_run()
    card = arena("card", run_dir.name, "--output", str(run_dir.parent))
    assert card.returncode == 0 and "backend 'openai' declares no scheduling: the step simulator does not cover it" in card.stdout
    shown = json.loads(arena("card", run_dir.name, "--output", str(run_dir.parent), "--format", "json").stdout)
    assert shown["predictions"] == [] and "declares no scheduling" in shown["not_predicted"]
    done = arena("predict", "qwen3.6-35b-a3b", "--hardware", "gb10", "--backend", "openai", "--workloads", "chat")
    assert done.returncode == 2 and "declares no scheduling" in done.stderr and "Traceback" not in done.stderr
    calibrated = arena("calibrate", "--hardware", "gb10", "--backend", "openai", "--output", str(tmp_path))
    assert calibrated.returncode == 2 and "declares no scheduling" in calibrated.stderr


def test_the_ledgers_fits_and_lines_are_kept_in_the_store_and_read_again(tmp_path, monkeypatch):
    """A card's ledger fits its fold once; the next view reads its lines from the store, with the
    same figures; other runs' lines fit only the folds not fitted yet; a damaged or tampered
    cache is made again, never a crash and never read as a fit."""
    import arena_prediction.ledger as ledger_module
    from arena_core import ArenaHooks
    from arena_core.results.cards import load_cards
    from arena_core.results.predictions import ledger_of

    manager = make_plugin_manager(autoload=False)
    assert run_cli(manager, ["import", "--seeds", "--output", str(tmp_path)]).exit_code == 0
    registry = ArenaHooks(manager).registry
    cards = load_cards(tmp_path, registry)[0][:5]
    fitted = []
    fit = ledger_module.fit
    monkeypatch.setattr(ledger_module, "fit", lambda samples, prior, **kw: fitted.append(len(samples)) or fit(samples, prior, **kw))
    monkeypatch.setattr(ledger_module, "open_results_of", lambda cards, registry: [])
    only = cards[0].run_id
    first = ledger_of(tmp_path, cards, registry, only=only)
    assert len(fitted) == 1 and first and all(line.run_id == only and line.tier == 1 for line in first)
    stored = StoredFits.of(tmp_path, "step-simulator")
    assert sorted(key.split("--")[0] for key in stored) == ["fit", "lines"]
    monkeypatch.setattr(ledger_module, "samples_of", lambda cards, registry: pytest.fail("simulated again"))
    assert ledger_of(tmp_path, cards, registry, only=only) == first and len(fitted) == 1  # read, not simulated nor fitted
    monkeypatch.undo()
    monkeypatch.setattr(ledger_module, "fit", lambda samples, prior, **kw: fitted.append(len(samples)) or fit(samples, prior, **kw))
    monkeypatch.setattr(ledger_module, "open_results_of", lambda cards, registry: [])
    everything = ledger_of(tmp_path, cards, registry)
    assert [line for line in everything if line.run_id == only] == first and len(fitted) == 5  # the four other folds
    ledger_of(tmp_path, cards[:4], registry, only=only)  # other runs beside it: another fit
    assert len(fitted) == 6
    stored.path.write_text("{not json", encoding="utf-8")
    assert ledger_of(tmp_path, cards, registry, only=only) == first and len(fitted) == 7
    kept = json.loads(stored.path.read_text(encoding="utf-8"))
    fit_key = next(key for key in kept if key.startswith("fit--"))
    lines_key = next(key for key in kept if key.startswith("lines--"))
    # 5,000 % of the bandwidth is no fit, and lines of the wrong shape are no lines: both made again
    stored.path.write_text(json.dumps({fit_key: {**kept[fit_key], "bandwidth": 50.0}, lines_key: {"lines": [{"run_id": 5}]}}), encoding="utf-8")
    assert ledger_of(tmp_path, cards, registry, only=only) == first and len(fitted) == 8


@pytest.mark.slow
def test_a_second_card_view_reads_the_kept_fits_in_another_process(tmp_path):
    """The cache works across commands: the second `arena card` of a run fits nothing (the fits
    file is not rewritten) and shows the same predictions."""
    assert arena("import", "--seeds", "--output", str(tmp_path)).returncode == 0
    run_id = sorted(p.name for p in tmp_path.iterdir() if (p / "manifest.json").is_file())[0]
    first = arena("card", run_id, "--output", str(tmp_path), "--format", "json")
    kept = StoredFits.of(tmp_path, "step-simulator").path
    before = kept.read_bytes()
    again = arena("card", run_id, "--output", str(tmp_path), "--format", "json")
    assert json.loads(again.stdout)["predictions"] == json.loads(first.stdout)["predictions"] != []
    assert kept.read_bytes() == before


def test_the_kept_fits_of_runs_gone_are_dropped_after_a_ledger_of_the_whole_store(tmp_path):
    fits = StoredFits(tmp_path / "fits.json")
    fits["old"], fits["current"] = {"bandwidth": 0.5}, {"bandwidth": 0.6}
    fits.save()
    again = StoredFits(tmp_path / "fits.json")
    assert again["current"] == {"bandwidth": 0.6}
    again.save(prune=True)
    assert json.loads((tmp_path / "fits.json").read_text()) == {"current": {"bandwidth": 0.6}}


def test_a_changed_card_is_a_new_key(tmp_path):
    """What the simulator reads of a card is in its key: the KV cache type a run states changes it."""
    import attrs

    from arena_core import ArenaHooks, ServerSettings
    from arena_core.results.cards import load_cards
    from arena_prediction.ledger import card_print

    manager = make_plugin_manager(autoload=False)
    assert run_cli(manager, ["import", "--seeds", "--output", str(tmp_path)]).exit_code == 0
    registry = ArenaHooks(manager).registry
    card = load_cards(tmp_path, registry)[0][0]
    assert card_print(card, registry) == card_print(attrs.evolve(card), registry)
    assert card_print(card, registry) != card_print(attrs.evolve(card, server_settings=ServerSettings(kv_cache_dtype="auto")), registry)


def test_a_runs_stated_server_settings_are_what_it_is_simulated_with(tmp_path):
    """The seed's runs on vLLM's cu130-nightly build scheduled 2048 tokens a step (their boot
    logs), Nemotron 3 Super at most 20 sequences, three NVFP4 runs through Marlin's 16-bit kernels:
    the prediction simulates each run as its server ran, the others at the backend's defaults;
    and a changed budget is a new key for the kept fits."""
    import attrs

    from arena_core import ArenaHooks, ServerSettings
    from arena_core.report.model_card import platform_rows
    from arena_core.results.cards import load_cards
    from arena_prediction.calibration import _served
    from arena_prediction.ledger import card_print

    manager = make_plugin_manager(autoload=False)
    assert run_cli(manager, ["import", "--seeds", "--output", str(tmp_path)]).exit_code == 0
    registry = ArenaHooks(manager).registry
    cards = {card.model: card for card in load_cards(tmp_path, registry)[0]}
    scheduled = {model: _served(card, registry).scheduling for model, card in cards.items()}
    assert (scheduled["qwen3.6-27b"].token_budget, scheduled["qwen3.6-27b"].slots) == (2048, 256)
    assert (scheduled["nemotron-3-super-120b-a12b-nvfp4"].token_budget, scheduled["nemotron-3-super-120b-a12b-nvfp4"].slots) == (2048, 20)
    assert (scheduled["gemma-4-26b-a4b-it-bf16-v23"].token_budget, scheduled["gemma-4-26b-a4b-it-bf16-v23"].slots) == (8192, 256)
    assert sorted(m for m, s in scheduled.items() if s.token_budget == 2048) == [
        "nemotron-3-nano-4b-bf16",
        "nemotron-3-nano-4b-fp8",
        "nemotron-3-super-120b-a12b-nvfp4",
        "qwen-3.5-2b-bf16",
        "qwen-3.6-35b-a3b-bf16",
        "qwen3.5-0.8b",
        "qwen3.6-27b",
        "qwen3.6-35b-a3b",
    ]
    assert _served(cards["qwen-3.6-35b-a3b-bf16"], registry).kv_bytes_per_element == 2.0  # "auto" on a 16-bit checkpoint
    assert _served(cards["qwen3.6-35b-a3b"], registry).kv_bytes_per_element == 1.0
    gemma = cards["gemma-4-26b-a4b-it-bf16-v23"]
    assert card_print(gemma, registry) != card_print(attrs.evolve(gemma, server_settings=ServerSettings(kv_cache_dtype="fp8", token_budget=2048)), registry)
    # Super and Gemma 4's MTP build decoded speculatively (their raw data): out of every fit,
    # simulated with the draft tokens their servers ran, said on the card
    assert sorted(model for model, card in cards.items() if _served(card, registry).speculative) == [
        "gemma-4-26b-a4b-it-mtp-v23",
        "nemotron-3-super-120b-a12b-nvfp4",
    ]
    assert cards["nemotron-3-super-120b-a12b-nvfp4"].server_settings.speculative_tokens == 3
    assert [_served(cards[m], registry).scheduling.draft_tokens for m in ("nemotron-3-super-120b-a12b-nvfp4", "gemma-4-26b-a4b-it-mtp-v23", "qwen3.6-27b")] == [
        3,
        4,
        0,
    ]
    # three NVFP4 runs computed through Marlin's weight-only kernels (their raw data): at the 16-bit
    # roof; the NVFP4 run whose kernel is not known keeps the FP4 roof
    marlin = ("gemma-4-26b-a4b-it-nvfp4-v23", "mistral-small-3.2-24b-it-nvfp4", "nemotron-3-super-120b-a12b-nvfp4")
    assert sorted(model for model, card in cards.items() if card.server_settings.sixteen_bit_compute) == list(marlin)
    assert [_served(cards[m], registry).machine.low_precision for m in (*marlin, "nemotron-3-nano-omni-30b-a3b-nvfp4")] == ["", "", "", "fp4"]
    # the card says what its prediction simulates
    said = (
        "KV cache fp8, 2,048 tokens a step, 20 sequences at once (what its prediction simulates); speculative decoding of 3 draft tokens a step "
        "(simulated at an assumed acceptance: docs/prediction.md); its low-precision weights computed in 16 bits, through a weight-only kernel "
        "(simulated at the 16-bit roof)"
    )
    assert ("server settings", said) in platform_rows(cards["nemotron-3-super-120b-a12b-nvfp4"])
    assert ("server settings", "KV cache fp8 (what its prediction simulates)") in platform_rows(gemma)
    # a run whose server prefilled a conversation's turns again (vLLM as Arena starts it on a DGX
    # Spark): simulated so, and said; one that says nothing keeps the backend's prefix cache
    uncached = attrs.evolve(gemma, server_settings=ServerSettings(kv_cache_dtype="fp8", prefix_caching=False))
    assert (_served(uncached, registry).scheduling.prefix_caching, _served(gemma, registry).scheduling.prefix_caching) == (False, True)
    assert ("server settings", "KV cache fp8, prefix caching off (what its prediction simulates)") in platform_rows(uncached)


def test_a_manifests_server_settings_are_believed_only_as_the_import_checks_them(registry):
    """A manifest is outside data too: a KV cache type Arena does not know, a budget that is not a
    count, states nothing (and so reaches no card and no simulation)."""
    import attrs

    from arena_core import ServerSettings
    from arena_core.results.cards import _server_settings
    from arena_core.run.manifest import Manifest

    base = Manifest(run_id="r", arena_version="0", status="completed", started_at="", model="m", backend="vllm", hardware="gb10", instrument="imported")
    hostile = {"kv_cache_dtype": "<script>x</script>", "token_budget": "2048", "slots": 10**12, "speculative_tokens": 10**6, "sixteen_bit_compute": "true"}
    assert _server_settings(attrs.evolve(base, config={"server_settings": hostile}), registry) == ServerSettings()
    assert _server_settings(attrs.evolve(base, config={"server_settings": {"sixteen_bit_compute": 1}}), registry) == ServerSettings()
    assert _server_settings(attrs.evolve(base, config={"server_settings": {"sixteen_bit_compute": True}}), registry).sixteen_bit_compute
    # the prefix cache: as a cards file says it, else as the server Arena started recorded it; a non-boolean says nothing
    assert _server_settings(attrs.evolve(base, config={"server_settings": {"prefix_caching": "off"}}), registry) == ServerSettings()
    assert _server_settings(attrs.evolve(base, backend_facts={"prefix_caching": False}), registry).prefix_caching is False
    stated = attrs.evolve(base, backend_facts={"prefix_caching": False}, config={"server_settings": {"prefix_caching": True}})
    assert _server_settings(stated, registry).prefix_caching is True
    assert _server_settings(attrs.evolve(base, config={"server_settings": {"kv_cache_dtype": ["fp8"], "slots": True}}), registry) == ServerSettings()
    assert _server_settings(attrs.evolve(base, config={"server_settings": {"kv_cache_dtype": "auto", "token_budget": 512}}), registry) == ServerSettings(
        kv_cache_dtype="auto", token_budget=512
    )

    # speculative decoding, from vLLM's own counters over the run's workloads (a server Arena started or attached to)
    from arena_core import CardWorkload

    def ran(drafts, tokens):
        counters = {"server_vllm_spec_decode_num_drafts_total": drafts, "server_vllm_spec_decode_num_draft_tokens_total": tokens}
        return [CardWorkload(name=name, tokens_per_second=10.0, ttft_p50_s=0.1, metrics=counters) for name in ("chat", "rag-8k")]

    assert _server_settings(base, registry, ran(40.0, 120.0)).speculative_tokens == 3
    assert _server_settings(base, registry, ran(0.0, 0.0)).speculative_tokens is None  # counters that never grew: no speculation
    for drafts, tokens in ((1.0, 1e12), (1.0, 1e308), (float("nan"), 30.0), (-5.0, -15.0), ("40", "120"), (True, 3.0), (10.0, 5.0)):  # not believed blindly
        assert _server_settings(base, registry, ran(drafts, tokens)).speculative_tokens is None, (drafts, tokens)
    stated = attrs.evolve(base, config={"server_settings": {"speculative_tokens": 4}})
    assert _server_settings(stated, registry, ran(40.0, 120.0)).speculative_tokens == 4  # what a cards file says comes first


def test_the_slots_of_a_server_arena_started_are_what_its_runs_are_simulated_with(registry):
    """A vLLM Arena started with ``--max-num-seqs 4`` (``--slots 4``) serves four sequences at
    once, and its prediction simulates four, not the engine's default 256; llama.cpp's
    ``--parallel`` alike, and an attached server's reported slots. A cards file's own slots come
    first; a fact out of range states nothing."""
    import attrs

    from arena_core import ServerSettings
    from arena_core.results.cards import _server_settings
    from arena_core.run.manifest import Manifest

    vllm = Manifest(run_id="r", arena_version="0", status="completed", started_at="", model="m", backend="vllm", hardware="gb10", instrument="native")
    assert _server_settings(attrs.evolve(vllm, backend_facts={"max_num_seqs": 4}), registry) == ServerSettings(slots=4)
    assert _server_settings(attrs.evolve(vllm, backend_facts={"max_num_seqs": 4}, config={"server_settings": {"slots": 20}}), registry).slots == 20
    assert _server_settings(attrs.evolve(vllm, backend="llama-cpp", backend_facts={"parallel": 25}), registry).slots == 25
    for hostile in (0, 10**12, "4", True, None):
        assert _server_settings(attrs.evolve(vllm, backend_facts={"max_num_seqs": hostile}), registry).slots is None
    assert _server_settings(attrs.evolve(vllm, backend="openai", backend_facts={"parallel": 25}), registry).slots is None  # no slots fact of its own
    # a server Arena attached to: the slots it reported (llama.cpp's /props), in the same place, bounded alike
    attached = attrs.evolve(vllm, backend="openai", backend_facts={"engine": "llama-cpp", "slots": 25})
    assert _server_settings(attached, registry) == ServerSettings(slots=25)
    for hostile in (0, 10**12, "25", True, None):
        assert _server_settings(attrs.evolve(attached, backend_facts={"engine": "llama-cpp", "slots": hostile}), registry).slots is None
    assert _server_settings(attrs.evolve(vllm, backend_facts={"slots": 25}), registry).slots is None  # vLLM Arena started: its own flag only


def test_an_attached_run_on_an_unnamed_machine_says_it_is_not_covered(registry):
    from arena_core import ModelCard
    from arena_core.results.predictions import why_not_predicted

    card = ModelCard(
        run_id="20261202-000000-abcd",
        model="served-model",
        model_title="a model the catalog lacks",
        hardware="unnamed",
        hardware_title="the server's machine (not named)",
        backend="openai",
        measured_with="native",
        measured_at="",
        source="measured by Arena",
        expected=("chat",),
        workloads=(),
    )
    assert why_not_predicted(card, registry) == "backend 'openai' declares no scheduling: the step simulator does not cover it"


def test_a_backend_that_prefills_whole_prompts_is_not_covered(tmp_path):
    """The step simulator chunks every prompt into the token budget: a backend that declares it
    does not is said not covered, never simulated as if it did."""
    from arena_core import BackendSpec, Scheduling, hookimpl

    class WholePrompts:
        @hookimpl
        def arena_register_backends(self, register):
            scheduling = Scheduling(engine="whole", slots=8, token_budget=4096, chunked_prefill=False)
            register(BackendSpec(name="whole-prompts", description="test", create=lambda request: None, scheduling=scheduling))

    manager = make_plugin_manager(autoload=False, extra_plugins=[("whole", WholePrompts())])
    done = run_cli(
        manager, ["predict", "qwen3.6-35b-a3b", "--hardware", "gb10", "--backend", "whole-prompts", "--workloads", "chat", "--output", str(tmp_path)]
    )
    assert done.exit_code == 2 and "prefills whole prompts (no chunked prefill)" in done.stderr
    fitted = run_cli(manager, ["calibrate", "--hardware", "gb10", "--backend", "whole-prompts", "--output", str(tmp_path)])
    assert fitted.exit_code == 2 and "prefills whole prompts" in fitted.stderr


def test_a_run_s_measured_chat_template_is_prefilled_in_its_prediction(registry):
    """Arena's closed-loop runner measures at warm-up what the server's chat template adds to a
    user message (llama-benchy's prompt adaptation), and the result keeps it: the run is then
    simulated with that template, on a model the catalog lacks too. A stored figure that is no
    such count is not believed."""
    import attrs

    from arena_core import CardWorkload, ModelCard, ModelFacts
    from arena_core.loadgen import ClosedLoopPlan, SessionFacts
    from arena_core.loadgen.closed_summary import closed_loop_result, llama_benchy_report
    from arena_core.types import ClosedLoopShape
    from arena_prediction.calibration import _served, measured_template

    plan = ClosedLoopPlan(workload="chat", model="m", shape=ClosedLoopShape(prompt_tokens=10, generated_tokens=5, concurrency=1, runs=1))
    for added, kept in ((634, 634.0), (0, None)):
        facts = SessionFacts(latency_s=0.0, delta_user=added, delta_context=13, coherence="skipped")
        result = closed_loop_result((), plan, facts, llama_benchy_report((), plan, facts, "m"), runner="llama-benchy", instrument="native")
        assert result.metrics.get("template_tokens") == kept
    card = ModelCard(
        run_id="20261205-000000-abcd",
        model="served-model",
        model_title="a model the catalog lacks",
        hardware="gb10",
        hardware_title="DGX Spark",
        backend="vllm",
        measured_with="native",
        measured_at="",
        source="measured by Arena",
        expected=("chat",),
        workloads=(CardWorkload(name="chat", tokens_per_second=20.0, ttft_p50_s=0.2, metrics={"template_tokens": 634.0}),),
        model_facts=ModelFacts(precision="bf16", params_total_b=8.0),
    )
    assert measured_template(card) == 634 and _served(card, registry).model.template_tokens == 634
    for hostile in (-5.0, 1e9, float("nan"), True, "634"):
        line = attrs.evolve(card.workloads[0], metrics={"template_tokens": hostile})
        assert measured_template(attrs.evolve(card, workloads=(line,))) == 0, hostile

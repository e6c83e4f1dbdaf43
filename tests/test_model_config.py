"""A model the catalog lacks, from its Hugging Face config.json (issue 32, "any model from what
describes it"): configs written from the catalog's published layouts (each with its source) read
back into the same layouts, one per family -- dense, mixture of experts, sliding window, hybrid
linear attention, Mamba-style state -- and a mixture of experts is never silently dense."""

from __future__ import annotations

import json
import os

import attrs
import pytest

from arena_core.errors import UsageError
from arena_core.testing import arena
from arena_models import cohort
from arena_models.config_json import describe, find_config


def qwen_hybrid(arch, **extra) -> dict:
    """Qwen3.5 / 3.6's config.json: every 4th layer full attention, the rest Gated DeltaNet."""
    return {
        "model_type": "qwen3_5_moe" if arch.experts else "qwen3_5",
        "num_hidden_layers": arch.layers,
        "hidden_size": arch.hidden,
        "num_attention_heads": arch.query_heads,
        "num_key_value_heads": arch.kv_heads,
        "head_dim": arch.head_dim,
        "vocab_size": arch.vocab,
        "layer_types": ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(arch.layers)],
        "linear_num_key_heads": arch.linear_key_heads,
        "linear_num_value_heads": arch.linear_value_heads,
        "linear_key_head_dim": arch.linear_head_dim,
        "linear_value_head_dim": arch.linear_head_dim,
        "linear_conv_kernel_dim": arch.linear_conv_kernel,
        "torch_dtype": "bfloat16",
        **extra,
    }


#: (catalog layout, its config.json as the source names it, the catalog's total and active billions)
FAMILIES = {
    "dense": (
        cohort.MINISTRAL3_3B,
        {
            "model_type": "ministral3",
            "num_hidden_layers": 26,
            "hidden_size": 3072,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 131072,
            "intermediate_size": 9216,
            "tie_word_embeddings": True,
            "torch_dtype": "bfloat16",
        },
        (3.0, 3.0),
    ),
    "mixture of experts": (
        cohort.QWEN36_35B_A3B,
        qwen_hybrid(
            cohort.QWEN36_35B_A3B,
            num_experts=256,
            num_experts_per_tok=8,
            moe_intermediate_size=512,
            shared_expert_intermediate_size=512,
            quantization_config={"quant_method": "fp8", "fmt": "e4m3"},
        ),
        (35.0, 3.0),
    ),
    "sliding window": (
        None,  # gemma-3-270m, the embedded default's model (the catalog's own entry)
        {
            "model_type": "gemma3_text",
            "num_hidden_layers": 18,
            "hidden_size": 640,
            "num_attention_heads": 4,
            "num_key_value_heads": 1,
            "head_dim": 256,
            "vocab_size": 262144,
            "intermediate_size": 2048,
            "sliding_window": 512,
            "sliding_window_pattern": 6,
            "tie_word_embeddings": True,
            "torch_dtype": "bfloat16",
        },
        (0.27, 0.27),
    ),
    "hybrid linear attention": (cohort.QWEN35_08B, qwen_hybrid(cohort.QWEN35_08B, intermediate_size=3584, tie_word_embeddings=True), (0.8, 0.8)),
    "Mamba-style state": (
        cohort.NEMOTRON3_NANO_4B,
        {
            "model_type": "nemotron_h",
            "num_hidden_layers": 42,
            "hidden_size": 3136,
            "num_attention_heads": 40,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 131072,
            "hybrid_override_pattern": "M-M-M-MM-M-M*-M-M*-M-M-M*-M-M-MM*-MMM-M-M-",  # 21 Mamba-2, 17 MLP, 4 attention layers
            "mamba_num_heads": 96,
            "mamba_head_dim": 80,
            "ssm_state_size": 128,
            "n_groups": 8,
            "conv_kernel": 4,
            "chunk_size": 256,
            "intermediate_size": 12544,
            "mlp_hidden_act": "relu2",
            "torch_dtype": "bfloat16",
        },
        (4.0, 4.0),
    ),
}


@pytest.mark.parametrize("family", FAMILIES)
def test_a_config_reads_back_into_the_catalogs_layout(family, registry):
    arch, config, (total, active) = FAMILIES[family]
    arch = arch or registry.get("models", "gemma-3-270m").architecture
    described = describe(config, name="described")
    found = described.spec.architecture
    for field in attrs.fields(type(arch)):
        if field.name in ("source", "window_kv_heads", "window_head_dim"):
            continue
        assert getattr(found, field.name) == getattr(arch, field.name), (family, field.name)
    assert described.spec.params_total_b == pytest.approx(total, rel=0.15), family  # counted from the layout
    assert described.spec.params_active_b == pytest.approx(active, rel=0.25), family
    assert described.assumptions == ()  # a whole config: nothing assumed


def test_a_mixture_of_experts_is_never_silently_dense():
    _, config, _ = FAMILIES["mixture of experts"]
    routed = {key: value for key, value in config.items() if key != "num_experts_per_tok"}
    with pytest.raises(UsageError, match="256 experts but no num_experts_per_tok: say --active-params"):
        describe(routed, name="moe")
    described = describe(config, name="moe")
    assert described.spec.params_active_b < described.spec.params_total_b / 5 and described.spec.precision == "FP8"


def test_the_layers_a_quantisation_leaves_in_16_bits_are_counted_from_its_config():
    """NVIDIA's Nemotron FP8 recipe keeps the attention layers and the Mamba layer before each in
    BF16, listed by name in ModelOpt's exclude_modules: counted from the layout they are what
    the catalog states for Nemotron 3 Nano 4B's FP8 checkpoint; a pattern counts what it names;
    a module of another kind, or a regular expression (never run), is said, not counted."""
    _, config, _ = FAMILIES["Mamba-style state"]
    pattern = config["hybrid_override_pattern"]  # each attention layer after a Mamba one
    attention = [layer for layer, kind in enumerate(pattern) if kind == "*"]
    excluded = ["lm_head", "backbone.layers.0.mixer.conv1d", "backbone.norm_f"]
    excluded += [f"backbone.layers.{layer}.mixer.{p}" for layer in attention for p in ("q_proj", "k_proj", "v_proj", "o_proj")]
    excluded += [f"backbone.layers.{layer - 1}.mixer.{p}" for layer in attention for p in ("in_proj", "out_proj")]
    modelopt = {"quant_method": "modelopt", "quant_algo": "FP8", "exclude_modules": excluded}
    described = describe({**config, "quantization_config": modelopt}, name="nano-fp8")
    assert described.spec.precision == "FP8" and described.assumptions == ()
    assert described.spec.params_sixteen_bit_b == pytest.approx(cohort.NEMOTRON3_NANO_4B_FP8_SIXTEEN_BIT_B, abs=0.001)
    arch = described.spec.architecture
    patterned = {**modelopt, "exclude_modules": ["lm_head", "*.mixer.q_proj", "*.mixer.k_proj", "*.mixer.v_proj", "*.mixer.o_proj"]}
    only_attention = describe({**config, "quantization_config": patterned}, name="attention")
    assert only_attention.spec.params_sixteen_bit_b == pytest.approx(4 * arch.attention_params() / 1e9, abs=0.001)
    unread = {**modelopt, "exclude_modules": ["backbone.layers.1.mixer.up_proj", "re:.*mixer.*"]}
    said = describe({**config, "quantization_config": unread}, name="unread")
    assert said.spec.params_sixteen_bit_b is None
    assert said.assumptions == ("quantization_config leaves 2 more modules unquantised: not counted (only attention and linear-attention projections are)",)
    # a list as long as an attacker likes is read to a bound: "*" names every projection of every layer
    everything = describe({**config, "quantization_config": {**modelopt, "ignore": ["*"] * 100_000}}, name="all")
    assert everything.spec.params_sixteen_bit_b == pytest.approx((4 * arch.attention_params() + 21 * arch.linear_layer_params()) / 1e9, abs=0.001)
    # Qwen's FP8 checkpoints leave each Gated DeltaNet layer's small in_proj_ba (and the routers) in
    # 16 bits: that part is counted, not the whole in_proj
    _, qwen, _ = FAMILIES["mixture of experts"]
    linear = [layer for layer, kind in enumerate(qwen["layer_types"]) if kind == "linear_attention"]
    names = [f"model.language_model.layers.{layer}.linear_attn.in_proj_ba" for layer in linear] + ["model.language_model.layers.0.mlp.gate"]
    small = describe({**qwen, "quantization_config": {**qwen["quantization_config"], "modules_to_not_convert": names}}, name="qwen-fp8")
    qwen_arch = small.spec.architecture
    assert small.spec.params_sixteen_bit_b == pytest.approx(len(linear) * 2 * qwen_arch.linear_value_heads * qwen_arch.hidden / 1e9, abs=0.001)
    assert small.assumptions == ()
    plain = describe(config, name="bf16")  # a 16-bit checkpoint keeps nothing apart
    assert plain.spec.precision == "BF16" and plain.spec.params_sixteen_bit_b is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"num_hidden_layers": 10**9}, "num_hidden_layers = 1000000000 is not a whole number"),
        ({"hidden_size": "4096"}, "hidden_size = '4096' is not a whole number"),
        ({"vocab_size": None}, "does not say vocab_size"),
        ({"num_attention_heads": 0.5}, "num_attention_heads = 0.5 is not"),
    ],
)
def test_a_config_is_outside_data(change, message):
    _, config, _ = FAMILIES["dense"]
    with pytest.raises(UsageError, match=message):
        describe({**config, **change}, name="bad")


def test_what_a_config_does_not_say_is_assumed_and_said():
    _, config, _ = FAMILIES["dense"]
    sparse = {key: value for key, value in config.items() if key not in ("num_key_value_heads", "torch_dtype")}
    described = describe(sparse, name="sparse")
    assert any("no num_key_value_heads" in said for said in described.assumptions)
    assert any("BF16 assumed" in said for said in described.assumptions) and described.spec.precision == "BF16"
    # a layout figure the config leaves out is taken at a default, and said: the MLP's width, a hybrid's state
    unsized = describe({key: value for key, value in config.items() if key != "intermediate_size"}, name="unsized")
    assert f"no intermediate_size in the config: {4 * config['hidden_size']:,} assumed" in unsized.assumptions
    _, hybrid, _ = FAMILIES["hybrid linear attention"]
    stateless = describe({key: value for key, value in hybrid.items() if key != "linear_num_value_heads"}, name="stateless")
    assert "no linear_num_value_heads in the config: 32 assumed" in stateless.assumptions


def test_a_config_in_the_hugging_face_cache_is_found_without_a_download(tmp_path, monkeypatch):
    snapshot = tmp_path / "hub" / "models--org--new-model" / "snapshots" / "abc123"
    blob = tmp_path / "hub" / "models--org--new-model" / "blobs" / "f00"
    blob.parent.mkdir(parents=True)
    snapshot.mkdir(parents=True)
    blob.write_text("{}")
    (snapshot / "config.json").symlink_to(blob)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    assert find_config("org/new-model") == blob.resolve()
    with pytest.raises(UsageError, match="is not in the local Hugging Face cache"):
        find_config("org/other-model")


@pytest.mark.slow
def test_arena_predict_a_model_outside_the_catalog_from_its_config(tmp_path):
    _, config, _ = FAMILIES["mixture of experts"]
    path = tmp_path / "new-moe" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps({**config, "_name_or_path": "someone/New-MoE-35B"}))
    env = {**os.environ, "COLUMNS": "80"}
    done = arena("predict", "--model-config", str(path), "--hardware", "gb10", "--capacity", env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Predicted: new-moe-35b on NVIDIA DGX Spark (GB10)" in done.stdout
    assert all(name in done.stdout for name in ("chat", "rag-8k", "monday-peak", "reasoning"))
    said = " ".join(done.stdout.split())
    assert "chat users [" in said and all("req/s [" in said and f"TTFT p95 ≤ {limit} s" in said for limit in (2, 5, 10))  # capacity both ways
    flags = arena("predict", "big", "--params", "120", "--hardware", "gb10", "--json", env=env)
    said = json.loads(flags.stdout)["assumptions"]
    assert any("BF16 assumed" in s for s in said) and any("dense" in s for s in said)  # every assumption said, and stored with the answer
    unknown = arena("predict", "nope", "--hardware", "gb10", env=env)
    assert unknown.returncode == 2 and "unknown model 'nope'" in unknown.stderr


def predicted(*args: str) -> dict:
    done = arena("predict", *args, "--hardware", "gb10", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.slow
def test_every_setting_that_changes_the_answer_is_an_input():
    """The KV cache's type, the server's slots, its step budget and its speculative decoding
    change the prediction and are said where they were assumed; the calibration is chosen explicitly."""
    workloads = ("--workloads", "long-context-25k,chat")
    base = predicted("qwen3.6-27b", *workloads, "--calibration", "none")
    fp8 = predicted("qwen3.6-27b", *workloads, "--calibration", "none", "--kv-cache", "fp8")
    one = predicted("qwen3.6-27b", *workloads, "--calibration", "none", "--slots", "1")

    def figure(answer: dict, workload: str, key: str) -> float:
        return next(w for w in answer["workloads"] if w["workload"] == workload)["central"][key]

    assert figure(fp8, "long-context-25k", "per_user_tps") > figure(base, "long-context-25k", "per_user_tps")  # half the KV bytes to read
    assert figure(one, "chat", "total_tps") < figure(base, "chat", "total_tps") / 3  # one sequence at a time
    assert any("16-bit KV cache" in said for said in base["assumptions"]) and not any("KV cache" in said for said in fp8["assumptions"])
    assert any("default slots" in said for said in base["assumptions"]) and not any("default slots" in said for said in one["assumptions"])
    assert base["tier"].startswith("tier 0")
    bf16 = predicted("qwen3.6-35b-a3b", "--precision", "bf16", "--workloads", "chat")  # a catalog model at another precision
    assert any("precision bf16 instead of the catalog's fp8" in said for said in bf16["assumptions"])
    assert bf16["title"] == "Qwen3.6-35B-A3B (FP8) with precision bf16"  # not the catalog's "(FP8)" alone
    resized = predicted("nemotron-3-nano-4b-bf16", "--params", "5", "--workloads", "chat")  # a dense model resized stays dense
    assert any("5B active instead of the catalog's 4B active" in said for said in resized["assumptions"])
    assert not any("mixture of experts" in note for note in resized["workloads"][0]["notes"])
    # a chat template's default system prompt, prefilled with every open-loop request
    talked = ("qwen3.6-27b", "--workloads", "sharegpt", "--calibration", "none")
    templated = predicted(*talked, "--template-tokens", "634")
    assert figure(templated, "sharegpt", "ttft_p50_s") > 2 * figure(predicted(*talked), "sharegpt", "ttft_p50_s")
    assert any("chat template adds 634 tokens" in note for note in templated["workloads"][0]["notes"])
    huge = arena("predict", "qwen3.6-27b", "--hardware", "gb10", "--template-tokens", "5000")
    assert huge.returncode == 2 and "--template-tokens" in huge.stderr and "Traceback" not in huge.stderr  # no template is that long
    missing = arena("predict", "qwen3.6-27b", "--hardware", "gb10", "--calibration", "/nonexistent.json")
    assert missing.returncode == 2 and "--calibration: /nonexistent.json: not a readable calibration" in missing.stderr
    # speculative decoding: the server's draft tokens speed decode up, at an acceptance said as assumed
    drafted = predicted("qwen3.6-27b", *workloads, "--calibration", "none", "--speculative-tokens", "3")
    assert figure(drafted, "chat", "per_user_tps") > 1.2 * figure(base, "chat", "per_user_tps")
    assert any("3 draft tokens a step" in note and "assumed" in note for w in drafted["workloads"] for note in w["notes"])
    mtp = predicted("gemma-4-26b-a4b-it-mtp-v23", "--workloads", "chat")  # an MTP build: how many drafts is the server's to say
    assert any("--speculative-tokens" in note for note in mtp["workloads"][0]["notes"])
    many = arena("predict", "qwen3.6-27b", "--hardware", "gb10", "--speculative-tokens", "65")
    assert many.returncode == 2 and "--speculative-tokens" in many.stderr and "Traceback" not in many.stderr
    # prefix caching: a conversation whose earlier turns the server prefills again waits longer for each turn's first token
    talk = ("qwen3.6-27b", "--workloads", "multi-turn,chat", "--calibration", "none")
    cached, uncached = predicted(*talk), predicted(*talk, "--no-prefix-caching")
    assert figure(uncached, "multi-turn", "ttft_p50_s") > 1.5 * figure(cached, "multi-turn", "ttft_p50_s")
    assert figure(uncached, "chat", "ttft_p50_s") == figure(cached, "chat", "ttft_p50_s")  # one turn: nothing to keep
    assert predicted(*talk, "--prefix-caching")["workloads"] == cached["workloads"]  # the backend's default, said as assumed
    assert any("earlier turns kept in its prefix cache" in said for said in cached["assumptions"])
    assert not any("prefix cache" in said for said in [*uncached["assumptions"], *base["assumptions"]])  # given, or no conversation


@pytest.mark.slow
def test_the_config_file_shapes_the_workloads_predicted(tmp_path):
    """arena.toml's [workloads.NAME] and [run] scale shape what is predicted, as they shape what
    arena run measures, and are said; a key that fits no workload is one line naming it."""
    (tmp_path / "arena.toml").write_text("[run]\nscale = 0.5\n\n[workloads.chat]\nconcurrency = 1\n")
    args = ["predict", "qwen3.6-27b", "--hardware", "gb10", "--workloads", "chat,rag-8k", "--calibration", "none", "--json"]
    done = arena(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    shaped = json.loads(done.stdout)
    plain = predicted("qwen3.6-27b", "--workloads", "chat,rag-8k", "--calibration", "none")

    def central(answer: dict, workload: str) -> dict:
        return next(w for w in answer["workloads"] if w["workload"] == workload)["central"]

    assert central(shaped, "chat")["total_tps"] < central(plain, "chat")["total_tps"] / 3  # one user, not ten
    assert central(shaped, "rag-8k")["ttft_p50_s"] < central(plain, "rag-8k")["ttft_p50_s"] * 0.7  # half the prompt
    assert "chat as arena.toml shapes it (concurrency=1)" in shaped["assumptions"]
    assert any("x0.5, the scale arena.toml sets" in said for said in shaped["assumptions"])
    (tmp_path / "arena.toml").write_text("[workloads.office-baseline]\nturns = 3\n")
    wrong = arena(*args[:-1], cwd=tmp_path)
    assert wrong.returncode == 2 and "turns" in wrong.stderr and "office-baseline" in wrong.stderr and "Traceback" not in wrong.stderr


@pytest.mark.slow
def test_a_precision_an_engine_version_computes_in_16_bits_is_the_backend_s_declared_fact():
    """vLLM declares, with its source, that its 0.20 releases run MXFP4 experts through a 16-bit
    (weight-only) path on GB10: the prediction for that version prefills slower and says why; a
    later version uses the FP4 roof; without a version the path is named, not applied."""
    from arena_backends import VLLM_SCHEDULING
    from arena_core import PrecisionPath

    path = VLLM_SCHEDULING.precision_paths[0]
    assert path.source and (path.covers("0.20.1rc1"), path.covers("vLLM 0.21.0"), path.covers("0.19.2"), path.covers("")) == (True, False, False, None)
    with pytest.raises(ValueError):
        PrecisionPath(precision="mxfp4", hardware=("gb10",), since="soon", source="x")
    big = ("big", "--params", "117", "--active-params", "5.1", "--precision", "mxfp4", "--workloads", "chat", "--calibration", "none")
    old, new, unsaid = predicted(*big, "--engine-version", "0.20.1"), predicted(*big, "--engine-version", "0.22.0"), predicted(*big)
    ttft = [answer["workloads"][0]["central"]["ttft_p50_s"] for answer in (old, new, unsaid)]
    assert ttft[0] > 1.2 * ttft[1] and ttft[2] == ttft[1]
    assert any("computes in 16 bits" in note and "41477" in note for note in old["workloads"][0]["notes"])
    assert any("engine version not given" in note for note in unsaid["workloads"][0]["notes"])
    wrong = arena("predict", *big, "--hardware", "gb10", "--engine-version", "latest")
    assert wrong.returncode == 2 and "--engine-version" in wrong.stderr and "Traceback" not in wrong.stderr
    # a server told to use a weight-only kernel (vLLM's Marlin) whatever its version: said, and the 16-bit path taken
    told = predicted(*big, "--engine-version", "0.22.0", "--sixteen-bit-compute")
    assert told["workloads"][0]["central"]["ttft_p50_s"] == pytest.approx(ttft[0])
    assert "mxfp4 computed in 16 bits, through a weight-only kernel, as stated" in told["workloads"][0]["notes"]
    # a precision that computes in 16 bits already (a GGUF type, BF16): nothing changes, nothing said
    gguf = ("big", "--params", "117", "--active-params", "5.1", "--precision", "q4_k_m", "--workloads", "chat", "--calibration", "none")
    plain, flagged = predicted(*gguf), predicted(*gguf, "--sixteen-bit-compute")
    assert flagged["workloads"][0]["central"] == plain["workloads"][0]["central"]
    assert not any("as stated" in note for note in flagged["workloads"][0]["notes"])


def test_vllm_s_version_is_read_from_its_log():
    from arena_backends.vllm_dialect import _VERSION

    assert _VERSION.findall("(APIServer pid=7) INFO 12-01 10:00:00 [api_server.py:1] vLLM API server version 0.20.1rc1.dev91+ga749a33d8\n") == [
        "0.20.1rc1.dev91+ga749a33d8"
    ]


@pytest.mark.slow
def test_capacity_is_predicted_both_ways_with_intervals():
    answer = predicted("qwen3.5-0.8b", "--workloads", "chat", "--capacity", "--calibration", "none")
    users, *rates = answer["capacity"]
    assert users["load"] == "users" and [r["limit"].split(",")[0] for r in rates] == ["TTFT p95 ≤ 2 s", "TTFT p95 ≤ 5 s", "TTFT p95 ≤ 10 s"]
    for found in (users, *rates):
        assert found["central"] is not None and found["low"] <= found["central"] <= found["high"], found
    assert [r["central"] for r in rates] == sorted(r["central"] for r in rates)  # a looser TTFT limit never serves less
    # each rate is probed with arrivals of its own: a search at the fast end found 0.75 req/s where
    # the central one found 0.781; the interval holds its central figure all the same
    moe = predicted("qwen3.6-35b-a3b", "--workloads", "office-baseline", "--capacity", "--calibration", "none")
    for found in moe["capacity"]:  # a low end of None is below the least rate searched
        assert found["central"] is not None and (found["low"] is None or found["low"] <= found["central"]) and found["central"] <= found["high"], found


@pytest.mark.slow
def test_a_capacity_below_the_least_load_searched_says_which_least():
    """A rate search starts at 0.125 req/s: a box that fails its first probe serves below that,
    not "below 1 req/s"; a capacity whose every end failed says so once, not as [below–below]."""
    from arena_core.results.predicted_capacity import LEAST_RATE, PredictedCapacity

    rate = PredictedCapacity(load="rate", limit="TTFT p95 ≤ 10 s", central=0.164, low=None, high=0.484, least=LEAST_RATE)
    assert rate.describe() == "0.164 req/s [below 0.125–0.484] (TTFT p95 ≤ 10 s)"
    none = PredictedCapacity(load="users", limit="the SLO", central=None, low=None, high=None)
    assert none.describe() == "below 1 chat users, at both ends of its interval too (the SLO)"
    slow = predicted("qwen3.6-27b", "--workloads", "chat,office-baseline", "--capacity", "--calibration", "none")
    assert {found["least_searched"] for found in slow["capacity"][1:]} == {LEAST_RATE}

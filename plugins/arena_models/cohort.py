"""The seed site's cohort (17 checkpoints on a DGX Spark, ``shared/reference/seed-cohort.json``)
as catalog entries, so that the simulator knows the layout of every model it is checked against.

Each entry is named as the seed's card names it, so an imported seed card finds its entry. The
architecture is written once per family: the checkpoints of one family (BF16, FP8, NVFP4) share
it. Parameters, precisions and the quality figures are the seed's (``seed-cohort.json``); each
layout says where its figures come from, and which were assumed.
"""

from __future__ import annotations

import attrs

from arena_core import ModelArchitecture, ModelSpec, QualityScore

_SEED = "https://djangodevreng.nl (the seed site, CC-BY-4.0): "

QWEN36_35B_A3B = ModelArchitecture(
    layers=40,
    full_attention_layers=10,
    kv_heads=2,
    head_dim=256,
    vocab=248320,
    linear_attention_layers=30,
    linear_key_heads=16,
    linear_value_heads=32,
    linear_head_dim=128,
    linear_conv_kernel=4,
    experts=256,
    experts_per_token=8,
    hidden=2048,
    query_heads=16,
    source="config.json of Qwen/Qwen3.6-35B-A3B (10 x (3 Gated DeltaNet + 1 full attention); 8 routed + 1 shared expert)",
)
QWEN35_08B = ModelArchitecture(
    layers=24,
    full_attention_layers=6,
    kv_heads=2,
    head_dim=256,
    vocab=248320,
    linear_attention_layers=18,
    linear_key_heads=16,
    linear_value_heads=16,
    linear_head_dim=128,
    linear_conv_kernel=4,
    hidden=1024,
    query_heads=8,
    source="config.json of Qwen/Qwen3.5-0.8B (6 x (3 Gated DeltaNet + 1 full attention), tied embeddings)",
)
QWEN35_2B = attrs.evolve(
    QWEN35_08B,
    hidden=2048,
    source="Qwen3.5 model-size table (24 layers, width 2048; 6 x (3 Gated DeltaNet + 1 full attention)); "
    "attention and DeltaNet heads assumed as Qwen3.5-0.8B's config.json",
)
MINISTRAL3_3B = ModelArchitecture(
    layers=26,
    full_attention_layers=26,
    kv_heads=8,
    head_dim=128,
    vocab=131072,
    hidden=3072,
    query_heads=32,
    source="NeMo Megatron-Bridge Ministral 3 page and Mistral's model card (26 layers, width 3072, "
    "32 query / 8 KV heads of 128, tied embeddings; a 0.4B vision encoder idle for text)",
)
MINISTRAL3_8B = ModelArchitecture(
    layers=34,
    full_attention_layers=34,
    kv_heads=8,
    head_dim=128,
    vocab=131072,
    hidden=4096,
    query_heads=32,
    source="NeMo Megatron-Bridge Ministral 3 page (34 layers, width 4096, 32 query / 8 KV heads of 128)",
)
GEMMA4_26B_A4B = ModelArchitecture(
    layers=30,
    full_attention_layers=5,
    kv_heads=1,  # the global layers' 2 KV heads of 512 share K and V: one tensor of 2 x 512 = 1 K+V pair of 512
    head_dim=512,
    sliding_window_layers=25,
    sliding_window=1024,
    window_kv_heads=8,
    window_head_dim=256,
    vocab=262144,
    experts=128,
    experts_per_token=8,
    hidden=2816,
    query_heads=16,
    source="config.json of google/gemma-4-26B-A4B-it as the Gemma 4 architecture write-ups give it "
    "(30 layers: 25 sliding-window of 1024 with 8 KV heads of 256, 5 global with 2 KV heads of 512 "
    "and K = V, 210 KiB of KV a token; 128 experts, top-8, 1 shared; width 2816)",
)
MISTRAL_SMALL_24B = ModelArchitecture(
    layers=40,
    full_attention_layers=40,
    kv_heads=8,
    head_dim=128,
    vocab=131072,
    hidden=5120,
    query_heads=32,
    source="config.json of mistralai/Mistral-Small-3.1-24B-Instruct-2503, the base of 3.2 (40 layers, width 5120, 32 query / 8 KV heads of 128)",
)
#: What Mistral Small 3.2's chat template adds to a request without a system message: its default
#: system prompt (Mistral's SYSTEM_PROMPT.txt) and markers. The seed's llama-benchy logs it at
#: warm-up: "Warmup (User only) complete. Delta: 634 tokens (Server: 656, Local: 22)"; with a
#: system message of the request's own, 13 (its C_output-throughput.log, commit 956e375). Every
#: other model of the cohort adds 3-16.
MISTRAL_SMALL_32_TEMPLATE_TOKENS = 634
NEMOTRON3_SUPER = ModelArchitecture(
    layers=88,
    full_attention_layers=8,
    kv_heads=2,
    head_dim=128,
    vocab=131072,
    linear_attention_layers=40,
    linear_key_heads=8,
    linear_value_heads=128,
    linear_head_dim=64,
    linear_key_dim=128,
    linear_conv_kernel=4,
    experts=512,
    experts_per_token=22,
    hidden=4096,
    query_heads=32,
    source="Nemotron 3 Super write-ups of its config.json (88 layers: 40 Mamba-2 with 128 heads of 64 "
    "and state 128, 8 GQA, 8 KiB of KV a token, 40 LatentMoE with 512 experts, top-22, 1 shared; "
    "width 4096); 32 query heads and 8 Mamba groups assumed as Nano's",
)
NEMOTRON3_NANO_30B = ModelArchitecture(
    layers=52,
    full_attention_layers=6,
    kv_heads=2,
    head_dim=128,
    vocab=131072,
    linear_attention_layers=23,
    linear_key_heads=8,
    linear_value_heads=64,
    linear_head_dim=64,
    linear_key_dim=128,
    linear_conv_kernel=4,
    experts=128,
    experts_per_token=6,
    hidden=2688,
    query_heads=32,
    source="Nemotron 3 Nano 30B-A3B model card and tech report (52 layers: 23 Mamba-2, 23 MoE with "
    "128 experts, top-6, 1 shared, 6 GQA with 32 query / 2 KV heads; width 2688); the Omni "
    "checkpoints share this language model",
)
NEMOTRON3_NANO_4B = ModelArchitecture(
    layers=42,
    full_attention_layers=4,
    kv_heads=8,
    head_dim=128,
    vocab=131072,
    linear_attention_layers=21,
    linear_key_heads=8,
    linear_value_heads=96,
    linear_head_dim=80,
    linear_key_dim=128,
    linear_conv_kernel=4,
    linear_chunk=256,
    hidden=3136,
    query_heads=40,
    source="NVIDIA's Nemotron 3 Nano 4B blog and model card (42 layers: 21 Mamba-2 with 96 heads, 4 GQA "
    "with 16 KiB of KV a token, 17 MLP; width 3136, pruned from Nano 9B v2); its config.json as "
    "mlc-llm's and Modular MAX's Nemotron-H tests and a Rust port quote it: 40 query heads of 128, "
    "Mamba heads of 80, state 128 in 8 groups, chunk_size 256, pattern "
    "M-M-M-MM-M-M*-M-M*-M-M-M*-M-M-MM*-MMM-M-M- (each attention layer after a Mamba one), untied embeddings",
)
#: What Nemotron 3 Nano 4B's FP8 checkpoint keeps in BF16: its 4 attention layers and the 4
#: Mamba-2 layers that feed them, the Nemotron 3 Nano recipe (the model cards: "attention layers
#: and the Mamba layers that feed into them in BF16"; the 30B's hf_quant_config.json leaves out
#: layers 4/5, 11/12, ... so; Modular MAX's NemotronH support for this checkpoint: FP8 on "the
#: (non-excluded) mamba in/out_proj and MLP up/down projections; attention ... stay bf16"). Its
#: 5.3 GB (two listings of it) is what these 0.47B at two bytes make of an all-FP8 body's 4.8 GB.
NEMOTRON3_NANO_4B_FP8_SIXTEEN_BIT_B = 4 * (NEMOTRON3_NANO_4B.attention_params() + NEMOTRON3_NANO_4B.linear_layer_params()) / 1e9


def _checkpoint(
    name: str,
    title: str,
    hf_id: str,
    precision: str,
    total: float,
    active: float,
    architecture: ModelArchitecture,
    quality: tuple[float | None, float | None, float | None],
    quality_source: str,
) -> ModelSpec:
    benchmarks = ("MMLU-Pro", "GPQA-Diamond", "HumanEval")
    return ModelSpec(
        name=name,
        title=title,
        description=f"{title}: a checkpoint of the seed site's cohort (DGX Spark, vLLM).",
        hf_id=hf_id,
        precision=precision,
        params_total_b=total,
        params_active_b=active,
        context_length=262144,
        quality=tuple(QualityScore(benchmark=b, value=v, source=_SEED + quality_source) for b, v in zip(benchmarks, quality, strict=True)),
        architecture=architecture,
    )


_UNPUBLISHED = (None, None, None)
_GEMMA4 = (82.6, 82.3, 77.1)
#: Gemma 4 26B-A4B's parameters: 25.2B in all, 3.8B active a token (Google's model card as the
#: write-ups quote it; "26B" and "A4B" are the rounded name)
GEMMA4_TOTAL, GEMMA4_ACTIVE = 25.2, 3.8
#: Nemotron 3 Nano 30B-A3B: kept at the name's 30B and 3B. Its write-ups give 31.6B in all and
#: 3.2B, 3.5B or 3.6B active, "with" or "without embeddings", which do not add up to one count
#: of what a token computes; the catalog takes none of them until the config is read.
NEMOTRON3_NANO_TOTAL, NEMOTRON3_NANO_ACTIVE = 30.0, 3.0
_QWEN36_35B = (85.2, 86.0, 80.4)

COHORT: tuple[ModelSpec, ...] = (
    _checkpoint("qwen-3.5-2b-bf16", "Qwen3.5-2B (BF16)", "Qwen/Qwen3.5-2B", "bf16", 2, 2, QWEN35_2B, (55.3, 30.4, None), "HF row"),
    # The seed labels these two BF16, but the checkpoints it names are Mistral's FP8 releases
    # ("the instruct post-trained version in FP8"; the BF16 weights are the -BF16 repositories),
    # and their measured speeds are above what BF16 weights allow on 273 GB/s.
    _checkpoint(
        "ministral-3-3b-instruct-bf16",
        "Ministral 3 3B Instruct (FP8)",
        "mistralai/Ministral-3-3B-Instruct-2512",
        "fp8",
        3.4,  # the language model's parameters (the Megatron-Bridge page and Mistral's card: 3.4B + a 0.4B vision encoder)
        3.4,
        MINISTRAL3_3B,
        (70.7, 53.4, 54.8),
        "HF row",
    ),
    _checkpoint(
        "ministral-3-8b-instruct-bf16",
        "Ministral 3 8B Instruct (FP8)",
        "mistralai/Ministral-3-8B-Instruct-2512",
        "fp8",
        8.4,  # the language model's parameters (the Megatron-Bridge page: 8.4B + a 0.4B vision encoder)
        8.4,
        MINISTRAL3_8B,
        _UNPUBLISHED,
        "not published",
    ),
    _checkpoint(
        "gemma-4-26b-a4b-it-bf16-v23",
        "Gemma 4 26B-A4B-it (BF16)",
        "google/gemma-4-26B-A4B-it",
        "bf16",
        GEMMA4_TOTAL,
        GEMMA4_ACTIVE,
        GEMMA4_26B_A4B,
        _GEMMA4,
        "site card",
    ),
    _checkpoint(
        "gemma-4-26b-a4b-it-mtp-v23",
        "Gemma 4 26B-A4B-it (BF16, MTP)",
        "google/gemma-4-26B-A4B-it",
        "bf16 + mtp",
        GEMMA4_TOTAL,
        GEMMA4_ACTIVE,
        GEMMA4_26B_A4B,
        _GEMMA4,
        "site card",
    ),
    _checkpoint(
        "gemma-4-26b-a4b-it-nvfp4-v23",
        "Gemma 4 26B-A4B-it (NVFP4)",
        "nvidia/Gemma-4-26B-A4B-NVFP4",
        "nvfp4",
        GEMMA4_TOTAL,
        GEMMA4_ACTIVE,
        GEMMA4_26B_A4B,
        _GEMMA4,
        "same base model as the BF16 card",
    ),
    attrs.evolve(
        _checkpoint(
            "mistral-small-3.2-24b-it-nvfp4",
            "Mistral Small 3.2 24B Instruct (NVFP4)",
            "RedHatAI/Mistral-Small-3.2-24B-Instruct-2506-NVFP4",
            "nvfp4",
            24,
            24,
            MISTRAL_SMALL_24B,
            _UNPUBLISHED,
            "not published",
        ),
        template_tokens=MISTRAL_SMALL_32_TEMPLATE_TOKENS,
    ),
    _checkpoint(
        "nemotron-3-super-120b-a12b-nvfp4",
        "Nemotron 3 Super 120B-A12B (NVFP4)",
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4",
        "nvfp4",
        120,
        12,
        NEMOTRON3_SUPER,
        _UNPUBLISHED,
        "not published",
    ),
    _checkpoint(
        "nemotron-3-nano-omni-30b-a3b-nvfp4",
        "Nemotron 3 Nano Omni 30B-A3B (NVFP4)",
        "nvidia/Nemotron-3-Nano-Omni-30B-A3B-Reasoning-NVFP4",
        "nvfp4",
        NEMOTRON3_NANO_TOTAL,
        NEMOTRON3_NANO_ACTIVE,
        NEMOTRON3_NANO_30B,
        _UNPUBLISHED,
        "not published",
    ),
    _checkpoint(
        "nemotron-3-nano-omni-30b-a3b-bf16",
        "Nemotron 3 Nano Omni 30B-A3B (BF16)",
        "nvidia/Nemotron-3-Nano-Omni-30B-A3B-Reasoning-BF16",
        "bf16",
        NEMOTRON3_NANO_TOTAL,
        NEMOTRON3_NANO_ACTIVE,
        NEMOTRON3_NANO_30B,
        _UNPUBLISHED,
        "not published",
    ),
    _checkpoint(
        "nemotron-3-nano-omni-30b-a3b-fp8",
        "Nemotron 3 Nano Omni 30B-A3B (FP8)",
        "nvidia/Nemotron-3-Nano-Omni-30B-A3B-Reasoning-FP8",
        "fp8",
        NEMOTRON3_NANO_TOTAL,
        NEMOTRON3_NANO_ACTIVE,
        NEMOTRON3_NANO_30B,
        _UNPUBLISHED,
        "not published",
    ),
    _checkpoint(
        "nemotron-3-nano-4b-bf16",
        "Nemotron 3 Nano 4B (BF16)",
        "nvidia/NVIDIA-Nemotron-3-Nano-4B-BF16",
        "bf16",
        4,
        4,
        NEMOTRON3_NANO_4B,
        _UNPUBLISHED,
        "not published",
    ),
    attrs.evolve(
        _checkpoint(
            "nemotron-3-nano-4b-fp8",
            "Nemotron 3 Nano 4B (FP8)",
            "nvidia/NVIDIA-Nemotron-3-Nano-4B-FP8",
            "fp8",
            4,
            4,
            NEMOTRON3_NANO_4B,
            _UNPUBLISHED,
            "not published",
        ),
        params_sixteen_bit_b=NEMOTRON3_NANO_4B_FP8_SIXTEEN_BIT_B,
    ),
    _checkpoint(
        "qwen-3.6-35b-a3b-bf16",
        "Qwen3.6-35B-A3B (BF16)",
        "Qwen/Qwen3.6-35B-A3B",
        "bf16",
        35,
        3,
        QWEN36_35B_A3B,
        _QWEN36_35B,
        "same base model as the 35B FP8 seed card",
    ),
)

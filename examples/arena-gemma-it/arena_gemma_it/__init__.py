"""An Arena plugin that adds a model to the catalog: Gemma 3 270M, instruction-tuned.

Google's card for this model publishes none of the three quality benchmarks the Arena score
uses, so each is registered as not published (``None``) with the card as its source; the Arena
score then shows performance only, never a fake quality of 0.
"""

from __future__ import annotations

from collections.abc import Callable

from arena_core import ModelSpec, QualityScore, hookimpl

CARD = "https://huggingface.co/google/gemma-3-270m-it"

GEMMA_3_270M_IT = ModelSpec(
    name="gemma-3-270m-it",
    title="Gemma 3 270M IT",
    description="Google's Gemma 3 270M, instruction-tuned (BF16 weights).",
    hf_id="google/gemma-3-270m-it",
    precision="bf16",
    params_total_b=0.27,
    params_active_b=0.27,
    context_length=32768,
    quality=tuple(QualityScore(benchmark=benchmark, value=None, source=f"{CARD} (not published)") for benchmark in ("MMLU-Pro", "GPQA-Diamond", "HumanEval")),
)


@hookimpl
def arena_register_models(register: Callable[[ModelSpec], None]) -> None:
    register(GEMMA_3_270M_IT)

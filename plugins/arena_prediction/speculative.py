"""Speculative decoding in the step simulator: a server that drafts tokens (an MTP head, EAGLE,
a draft model) and has the model verify them, so that a step can give a sequence more than one
token.

Each step, every decoding sequence gets the token the model samples itself and each draft the
model accepts while every draft before it was accepted. A step costs the verification of every
draft beside that token (their weights and FLOPs, as a prefill of a few tokens each: a mixture
of experts' union of experts grows with them; a recurrent state written once a position it may
be rolled back to) and the drafting before it, a pass a draft.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from attrs import frozen

if TYPE_CHECKING:  # the simulator imports this module: its physics is only a type here
    from arena_prediction.simulator import ModelPhysics

#: The share of draft tokens the model accepts, each given that every one before it was: an
#: assumption, between two published measurements of MTP heads: 0.65 at the first position for
#: Qwen3.6-27B's over code, factual, prose and technical text (0.48-0.91 by kind; tenstorrent/vllm
#: issue 442), and 0.76 there and 0.81-0.86 after it for a multi-layer MTP on GSM8K at
#: temperature 0 (vllm PR 48892). Acceptance depends on the drafter, the model and the text, and
#: falls as a context grows (vllm issue 47602). The seed cohort's two speculative runs measured
#: 2.3-2.9 tokens a step (vLLM's spec-decode counters in their open-loop results: Nemotron 3
#: Super's MTP at 3 draft tokens, 2.54-2.62; Gemma 4's at 4, 2.33-2.86), where this gives 2.53
#: and 2.77 (docs/prediction-notes.md, "Speculative decoding, simulated"). Calibration does not fit it:
#: a run's speed cannot tell acceptance from bandwidth.
DRAFT_ACCEPTANCE = 0.7


def tokens_per_step(draft_tokens: int, acceptance: float = DRAFT_ACCEPTANCE) -> float:
    """The tokens a decoding sequence gets a step with ``draft_tokens`` drafts, on average: its
    own, and each draft accepted after all before it (1 + a + a² + ... + a^k; 1 with none)."""
    return 1.0 + sum(acceptance**position for position in range(1, draft_tokens + 1))


@frozen(kw_only=True)
class Drafting:
    """What a step's drafting adds to it: bytes read, FLOPs at the GEMMs' speed, and the draft
    passes' attention over the decoding sequences' contexts (at a decoding token's attention speed)."""

    read: float
    flops: float
    decode_attention_flops: float


def drafting_cost(costs: ModelPhysics, *, decode_contexts: Sequence[int], prefill: Sequence[tuple[int, int]], draft_tokens: int) -> Drafting:
    """A step's drafting: ``draft_tokens`` passes for the sequences decoding over
    ``decode_contexts``, each of about one layer of the model and its LM head, and the drafter's
    own pass over the step's ``prefill`` chunks (tokens, context before them): an MTP head reads
    the model's hidden states of every token (one layer's worth, no LM head but for the prompt's
    last). An MTP head is one such layer baked into the checkpoint (NVIDIA's Nemotron 3 Super
    deployment guide: "a single layer called per predicted token"); a separate draft model costs
    more, and each pass launches its own kernels, which this does not see.

    That layer attends over the whole context, as the model's full-attention layers do: an MTP
    layer has a KV cache of its own, and Gemma 4's assistant reads the target's last
    full-attention layer's (vllm/v1/spec_decode/gemma4.py); vLLM's proposer passes it every
    token the step scheduled, prompt chunks included (llm_base_proposer.py). So each prompt
    token costs one full-attention layer's attention over what came before it, and each draft
    pass one such layer's KV read and attention over its sequence's context."""
    share = 1.0 / max(1, costs.layers)
    sequences, prefilled = len(decode_contexts), sum(n for n, _ in prefill)

    def one_layer(tokens: int) -> float:  # the weights one layer reads for ``tokens`` tokens
        return (costs.weight_bytes(tokens) - costs.lm_head_bytes) * share if tokens else 0.0

    # one full-attention layer's share of the model's (none in a model without one)
    attention_share = 1.0 / costs.full_attention_layers if costs.full_attention_layers else 0.0
    per_context_flops = costs.attention_flops_per_context_token * attention_share
    read = draft_tokens * (one_layer(sequences) + (costs.lm_head_bytes if sequences else 0.0)) + one_layer(prefilled)
    read += draft_tokens * costs.kv_bytes_per_token * attention_share * sum(decode_contexts)
    read += costs.kv_bytes_per_token * attention_share * sum(before + n for n, before in prefill)
    flops = (draft_tokens * sequences + prefilled) * costs.flops_per_token * share + draft_tokens * sequences * costs.lm_head_flops
    flops += per_context_flops * sum(n * (before + n / 2) for n, before in prefill)
    return Drafting(read=read, flops=flops, decode_attention_flops=draft_tokens * per_context_flops * sum(decode_contexts))

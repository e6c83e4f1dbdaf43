"""A step simulator of LLM serving (``shared/spec/prediction.md`` section 2): what a model will
do on a machine, before anyone downloads it. The default predictor
(:class:`arena_prediction.predictor.StepSimulator`) and its error ledger call :func:`simulate`.

**One engine step** serves a batch: every running sequence that has its prompt decodes one token,
and what is left of the step's token budget prefills waiting prompts in chunks (continuous
batching with chunked prefill, as vLLM and llama.cpp schedule). It takes

    max(bytes read / (bandwidth × η_bw), FLOPs / (peak × η_compute × speedup) + scan FLOPs / (peak × η_scan)) + overhead

(for a mixture of experts, the two joined as (read^p + compute^p)^(1/p) instead of the larger:
its grouped GEMMs overlap the experts' read with their math less, and in a step that only
decodes, not at all: their sum; peak is the 16-bit roof;
η_compute is a mixture of experts' own where the model is one; the
speedup is a low precision's where its GEMMs run in FP8 or FP4; the scan is Gated DeltaNet's
chunked scan, in kernels of its own; a step that prefills adds the compute of
``prefill_ramp_tokens`` tokens; the overhead is per step, per layer and per logit of each
sequence that samples a token.)

Bytes read: the weights the step's tokens touch (for a mixture of experts, the shared part plus
the *union* of the experts its tokens route to, E·(1 − (1 − k/E)^T) per layer for T tokens), the
LM head at its own precision, every decoding sequence's KV cache at its current context, and
twice each sequence's linear-attention state (read and written). FLOPs: 2 × active parameters per
token but the LM head, which runs once per token sampled (not per prompt token), plus attention
over the context (4 × layers × query width per context token).

**The scheduler** is a discrete-event simulation: requests arrive (together, for a closed-loop
run; on the workload's own seeded schedule, for open loop), wait for a free slot, prefill, decode.
Queueing, TTFT under load and saturation come out of it rather than from a formula.

**Speculative decoding** (a server that drafts tokens for the model to verify) is simulated where
the scheduling says its draft tokens: a step verifies each sequence's drafts beside its own token
and gives it the drafts accepted, at an assumed acceptance (:mod:`arena_prediction.speculative`).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

import attrs
import numpy as np
from attrs import define, field, frozen
from attrs.validators import ge, le

from arena_core import BYTES_PER_PARAM, GGUF_TYPES, HardwareProfile, ModelArchitecture, ModelSpec, bounds, bytes_per_param
from arena_prediction.speculative import drafting_cost, tokens_per_step

#: A number, or an array of numbers computed element by element.
T = TypeVar("T", float, np.ndarray)

#: The low-precision GEMMs a checkpoint's precision runs: FP8 W8A8 and NVFP4/MXFP4 W4A4 (where
#: the hardware has the roof). Weight-only formats (AWQ, GPTQ, GGUF) compute in 16 bits (hardware.md 4.1).
LOW_PRECISION = {"fp8": "fp8", "nvfp4": "fp4", "mxfp4": "fp4"}


#: A simulation longer than this is a mistake (a request that can never finish), not a forecast.
MAX_STEPS = 2_000_000
#: The most steps :func:`_decode_run` takes at once (its arrays hold this many per sequence), and
#: the fewest worth its arrays' cost: a shorter run is stepped one by one (test_simulator holds
#: both ways to the same bits).
DECODE_RUN_STEPS, DECODE_RUN_LEAST = 4096, 8


def expected_experts(experts: int, top_k: int, tokens: float) -> float:
    """Distinct experts ``tokens`` tokens route to in one layer, each to ``top_k`` of ``experts``
    uniformly: E·(1 − (1 − k/E)^T) (an upper bound: real routing is skewed)."""
    if experts <= 0 or top_k <= 0 or tokens <= 0:
        return 0.0
    return experts * (1.0 - (1.0 - top_k / experts) ** tokens)


#: One routed expert's parameters in one layer of the mixture of experts where the MoE prefill's
#: prior was measured (Qwen3.6-35B-A3B: 3 x width 2048 x expert width 512, its config.json):
#: ``Efficiency.moe_compute`` is the share of the peak experts of this size reach.
REFERENCE_EXPERT_PARAMS = 3 * 2048 * 512


def moe_layers(arch: ModelArchitecture) -> int:
    """The layers with routed experts: every layer where each has both an attention (or state)
    mixer and experts (Qwen3.6, Gemma 4), else the layers that are neither attention nor state
    (Nemotron-H's, which give each layer one part: Mamba, attention, or experts)."""
    mixers = arch.full_attention_layers + arch.sliding_window_layers + arch.linear_attention_layers
    return arch.layers if mixers >= arch.layers else arch.layers - mixers


def expert_params(model: ModelSpec) -> float | None:
    """One routed expert's parameters in one layer, from the total and active parameter counts
    and the layout (the LM head taken out of both): None where they do not say."""
    arch = model.architecture
    total, active = model.params_total_b, model.params_active_b
    if arch is None or not arch.experts or not arch.experts_per_token or not total or not active or active >= total or arch.experts <= arch.experts_per_token:
        return None
    routed = (total - active) * 1e9 / (1.0 - arch.experts_per_token / arch.experts)  # every routed expert's parameters
    return routed / arch.experts / max(1, moe_layers(arch))


#: A low precision's speedup over 16 bits: never slower, at most FP4 over BF16's 4 times, with room.
SPEEDUP = [ge(1.0), le(8.0)]


@frozen(kw_only=True)
class Efficiency:
    """How much of the machine an engine reaches: of the memory bandwidth in decode, of the dense
    peak in prefill, and a fixed cost per engine step (launches, scheduling, sampling)."""

    bandwidth: float = field(default=0.65, validator=bounds.EFFICIENCY)
    compute: float = field(default=0.35, validator=bounds.EFFICIENCY)
    overhead_s: float = field(default=0.004, validator=bounds.STEP_OVERHEAD_S)
    #: of the dense peak in a mixture of experts' prefill: its grouped expert GEMMs over small
    #: experts reach less of the roof than a dense layer's GEMMs
    moe_compute: float = field(default=0.35, validator=bounds.EFFICIENCY)
    #: and how that share grows with the experts' size: ``moe_compute`` is reached by experts of
    #: :data:`REFERENCE_EXPERT_PARAMS`, experts s times larger reach s to this power of it
    #: (larger matrices keep more of a GEMM's tiles busy); 0: every size alike
    moe_size_exponent: float = field(default=0.0, validator=[ge(-1.0), le(1.0)])
    #: How a mixture of experts' step joins its read and its math: (read^p + compute^p)^(1/p),
    #: between their sum (p = 1) and the larger (p large, a dense layer's roof). A grouped GEMM
    #: loads each expert's weights and multiplies a few rows by them, so the two hide each other
    #: less than in a dense layer's GEMM. 1.75: chosen on the seed's ledger (vLLM's runs;
    #: docs/prediction-notes.md, "A mixture of experts' roof"); other engines take it too, an
    #: assumption for calibration to test. test_simulator's MoE cases hold the formula.
    moe_roof_power: float = field(default=1.75, validator=[ge(1.0), le(64.0)])
    #: and a step of it that only decodes (no prompt in it): 1, their sum. Such a step runs its
    #: attention and then its experts' GEMMs over a few rows each, kernels one after the other
    #: that each wait on their own reads, so its math adds to the read rather than hiding in it.
    #: Dense models' decode steps keep the larger of the two. Chosen on the seed's ledger, not
    #: fitted (docs/prediction-notes.md, "A decode step's own roof").
    moe_decode_roof_power: float = field(default=1.0, validator=[ge(1.0), le(64.0)])
    #: and per layer of the model (kernel launches grow with depth)
    layer_overhead_s: float = field(default=0.0, validator=bounds.STEP_OVERHEAD_S)
    #: A step that prefills costs the compute of this many more tokens: a GEMM reaches less of
    #: its peak on fewer rows, so prefilling n tokens takes about (n + this) tokens' time. A
    #: decode-only step runs other kernels (few rows, bound by memory), so it has no such term.
    prefill_ramp_tokens: float = field(default=0.0, validator=[ge(0.0), le(65536.0)])
    #: How much faster than at 16 bits a dense model prefills whose GEMMs run in FP8 or FP4, and
    #: a mixture of experts whose expert GEMMs run in either: at most the roofs' ratio, less where
    #: attention, norms and the activations' quantisation stay as they were or a kernel upcasts
    fp8_speedup: float = field(default=1.0, validator=SPEEDUP)
    fp4_speedup: float = field(default=1.0, validator=SPEEDUP)
    moe_speedup: float = field(default=1.0, validator=SPEEDUP)
    #: of the dense peak in Gated DeltaNet's chunked scan: kernels of their own beside the
    #: GEMMs, a Triton fallback on some GPUs (GB10: hardware.md 4.2)
    scan_compute: float = field(default=0.05, validator=bounds.EFFICIENCY)
    #: and in Mamba-2's chunked scan (SSD: state-space duality), kernels of their own too; no
    #: low precision speeds either scan up
    ssd_compute: float = field(default=0.2, validator=bounds.EFFICIENCY)
    #: The FLOP/s a decoding token's attention reaches, as a share of the GEMMs': one query row
    #: against a sequence's whole KV cache. On a GPU it is bound by memory and its FLOPs hardly
    #: count (1: left as the GEMMs'); llama.cpp's on a CPU runs far below its GEMMs (measured on
    #: the embedded Gemma 3, a twentieth: calibration fits it)
    decode_attention_speed: float = field(default=1.0, validator=bounds.EFFICIENCY)

    #: A step's cost for each logit it makes for a sequence that samples a token (a decoding one,
    #: a prompt that ends: a vocabulary's worth each), serial with the rest of the step. On a GPU
    #: llama.cpp's server copies each such row to the host and samples it there (ggml-org/llama.cpp
    #: issue 27050: at 32 slots it dominates a decode step); on a CPU the LM head's product for
    #: one sequence runs far below the GEMMs' speed and grows the same way (on this project's
    #: 2-core machine greedy and top-k 1 decoding cost what sampling does). vLLM samples on the
    #: GPU in one batched call: 0 (the seed's ledger fits nothing better).
    logit_overhead_s: float = field(default=0.0, validator=[ge(0.0), le(1e-6)])

    #: What one request costs before the engine can schedule it, beside any step: the HTTP
    #: request, applying the chat template, scheduling it and sending its first token back
    request_overhead_s: float = field(default=0.0, validator=bounds.STEP_OVERHEAD_S)
    #: and per token of its prompt (tokenising it: the whole conversation, a turn's history too)
    prompt_token_overhead_s: float = field(default=0.0, validator=[ge(0.0), le(0.001)])

    def step_overhead_s(self, layers: int, sampled_logits: T | float = 0.0) -> T | float:
        """A step's cost beside its bytes and FLOPs: per step, per layer, and per logit of the
        sequences that sample in it (a number, or an array of them for steps of ``sampled_logits`` each)."""
        return self.overhead_s + self.layer_overhead_s * layers + self.logit_overhead_s * sampled_logits

    def request_seconds(self, request: Request) -> float:
        """What ``request`` costs before the engine can schedule it (its send to its admission,
        with a free slot and no step running)."""
        return self.own_cost_s(request.prompt + request.cached)

    def own_cost_s(self, tokenised: T) -> T:
        """A request's own cost for ``tokenised`` tokens of prompt and history (a number, or an
        array of them: one cost each)."""
        return self.request_overhead_s + self.prompt_token_overhead_s * tokenised

    def describe(self, prior: Efficiency | None = None) -> str:
        """The efficiencies in one line, each beside its prior where ``prior`` is given."""
        parts = []
        for label, name, shown in DESCRIBED:
            text = f"{label} {shown(getattr(self, name))}"
            parts.append(text + (f" (prior {shown(getattr(prior, name))})" if prior is not None else ""))
        return ", ".join(parts)


#: Priors before any calibration (hardware.md 4.1-4.2). vLLM: the BLIS simulator's defaults (72 %
#: of the bandwidth, 0.5 ms a step and 20 µs a layer, with CUDA graphs); a dense prefill at 50 %
#: of the 16-bit peak (the middle of the 30-60 % prefill range; GB10's GEMMs reach 71-75 %), twice
#: that in FP8 (the roofs' ratio; GB10's FP8 GEMM 188 TFLOPS against BF16's 92) and no faster in
#: FP4 (many 4-bit paths upcast); a mixture of experts' low-precision expert GEMMs 1.3 times its
#: 16-bit ones (GB10's CUTLASS MoE kernels, 120-154 TFLOPS, against BF16's 92: the low end) and
#: its prefill at 28 % of the 16-bit peak (the one MoE prefill published on GB10, Qwen3.6-35B-A3B;
#: an NVFP4 figure, taken for the 16-bit one: read strictly, 22 %; docs/prediction-notes.md gives the
#: tier-0 error both ways). Gated DeltaNet's scan at 3 %: an assumption (on GB10 it runs a Triton
#: fallback that "loses efficiency"; no figure is published), for calibration to replace, chosen
#: on the ledger once the seed's runs were simulated at the step budget they ran (docs/prediction-notes.md,
#: "The seed's servers as they ran"; the cohort alone fits 1.5 %); Mamba-2's
#: at 20 %, an assumption too (memory-bound kernels; docs/prediction-notes.md gives the ledger at 10-100 %).
#: llama.cpp: 60 % of the bandwidth, 30 % of the peak (assumptions), its step and sampling costs
#: below. A request's own cost: 5 ms
#: (the HTTP request, its scheduling and its first token sent back: an assumption, for
#: calibration to replace) and tokenising its prompt, 15 µs a token in a Python server (a Hugging
#: Face tokenizer applying a chat template and encoding, 10-21 µs a token measured in
#: tenstorrent/tt-inference-server issue 2173), 1 µs in llama.cpp's C++ one (an assumption).
REQUEST_OVERHEAD_S = 0.005
#: llama.cpp's cost per logit: 4 ns, where two GPU measurements of its sampling agree: its server on
#: an H200, Gemma 3 270M (262,144 logits a token), ten sequences 11.5-13.9 ms a step against
#: 2.3 ms for one, 1.1 ms more a sequence: 4.2 ns a logit (docs/prediction-notes.md, "On a GPU");
#: ggml-org/llama.cpp issue 27050, an RTX 5090 at 32 slots, a step 15.8 ms longer than with
#: sampling on the GPU for 16.2 MB of logits (32 rows of about 127,000): 3.9 ns a logit.
LLAMA_CPP_LOGIT_S = 4e-9
#: and a step's own cost beside it: 0.7 ms, what is left of that H200's fastest single stream
#: (1.84 ms a token, 1/TPOT at one request) after 262,144 logits (1.05 ms) and the weights' read (0.09 ms).
LLAMA_CPP_STEP_S = 0.0007
TOKENISING_S = 15e-6
PRIORS = {
    "vllm": Efficiency(
        bandwidth=0.72,
        compute=0.5,
        moe_compute=0.28,
        overhead_s=0.0005,
        layer_overhead_s=20e-6,
        fp8_speedup=2.0,
        fp4_speedup=1.0,
        moe_speedup=1.3,
        scan_compute=0.03,
        ssd_compute=0.2,
        request_overhead_s=REQUEST_OVERHEAD_S,
        prompt_token_overhead_s=TOKENISING_S,
    ),
    "llama-cpp": Efficiency(
        bandwidth=0.6,
        compute=0.3,
        moe_compute=0.3,
        overhead_s=LLAMA_CPP_STEP_S,
        logit_overhead_s=LLAMA_CPP_LOGIT_S,
        request_overhead_s=REQUEST_OVERHEAD_S,
        prompt_token_overhead_s=1e-6,
    ),
}


def blended(prior: Efficiency, fitted: Efficiency, weight: float) -> Efficiency:
    """The efficiencies ``weight`` of the way from ``prior`` to ``fitted`` (0: the priors, 1: the fit)."""
    if weight == 1:
        return fitted
    return attrs.evolve(
        prior, **{f.name: getattr(prior, f.name) + weight * (getattr(fitted, f.name) - getattr(prior, f.name)) for f in attrs.fields(Efficiency)}
    )


def prior_of(engine: str) -> Efficiency:
    """The priors of the engine a backend's scheduling names; an engine without its own starts
    from the defaults, for calibration to replace."""
    return PRIORS.get(engine, Efficiency())


#: What :meth:`Efficiency.describe` says, in its order: label, field, how the value is shown.
DESCRIBED = (
    ("bandwidth", "bandwidth", "{:.0%}".format),
    ("compute", "compute", "{:.0%}".format),
    ("a mixture of experts' prefill", "moe_compute", "{:.0%}".format),
    ("growing with its experts' size as", "moe_size_exponent", "size^{:.2f}".format),
    ("its read and math joined by a p-norm of power", "moe_roof_power", "{:g}".format),
    ("and where a step only decodes, of power", "moe_decode_roof_power", "{:g}".format),
    ("FP8 speedup", "fp8_speedup", "×{:.2g}".format),
    ("FP4 speedup", "fp4_speedup", "×{:.2g}".format),
    ("a mixture of experts' low-precision speedup", "moe_speedup", "×{:.2g}".format),
    ("Gated DeltaNet's scan", "scan_compute", "{:.1%}".format),
    ("Mamba-2's scan", "ssd_compute", "{:.1%}".format),
    ("decode attention", "decode_attention_speed", "×{:.2g} of the GEMMs' speed".format),
    ("per step", "overhead_s", lambda s: f"{s * 1000:g} ms"),
    ("per layer", "layer_overhead_s", lambda s: f"{s * 1e6:g} µs"),
    ("per logit of a sampling sequence", "logit_overhead_s", lambda s: f"{s * 1e9:g} ns"),
    ("prefill ramp", "prefill_ramp_tokens", lambda t: f"{t:.0f} tokens"),
    ("per request", "request_overhead_s", lambda s: f"{s * 1000:g} ms"),
    ("per prompt token", "prompt_token_overhead_s", lambda s: f"{s * 1e6:g} µs"),
)


@frozen(kw_only=True)
class ModelPhysics:
    """One model's costs per step, in bytes and FLOPs, derived from its catalog entry."""

    shared_bytes: float  # weights every token reads (attention, shared experts, router, norms)
    expert_bytes: float  # one routed expert, summed over the MoE layers
    experts: int
    top_k: int
    lm_head_bytes: float
    lm_head_params: float
    flops_per_token: float  # 2 × the active parameters but the LM head
    lm_head_flops: float  # 2 × the LM head's parameters: once per token sampled, not per prompt token
    kv_bytes_per_token: float
    state_bytes: float  # linear-attention state of one sequence
    attention_flops_per_context_token: float
    #: the logits of one sampled token, the vocabulary (0: no architecture, so none counted)
    vocab: int = 0
    #: sliding-window layers: KV bytes and attention FLOPs per token of context inside the window
    window: int = 0
    window_kv_bytes_per_token: float = 0.0
    window_attention_flops_per_context_token: float = 0.0
    layers: int = 0
    #: full-attention layers (``attention_flops_per_context_token`` and ``kv_bytes_per_token`` are theirs together)
    full_attention_layers: int = 0
    #: Gated DeltaNet's or Mamba-2's FLOPs per token (its chunked scan and state update, every such layer)
    scan_flops_per_token: float = 0.0
    notes: tuple[str, ...] = ()

    def kv_read(self, contexts: Iterable[float]) -> float:
        """KV bytes read by tokens attending over ``contexts`` tokens each (full and windowed
        layers), summed in their order."""
        full, windowed, window = self.kv_bytes_per_token, self.window_kv_bytes_per_token, self.window
        return sum(full * context + windowed * min(context, window) for context in contexts)

    def attention_flops(self, contexts: Iterable[float]) -> float:
        """Attention FLOPs of tokens over ``contexts`` tokens each (full and windowed layers), summed."""
        full, windowed, window = self.attention_flops_per_context_token, self.window_attention_flops_per_context_token, self.window
        return sum(full * context + windowed * min(context, window) for context in contexts)

    def weight_bytes(self, tokens: float) -> float:
        """Weights one step reads for ``tokens`` tokens (decodes and prefill chunks together)."""
        return self.shared_bytes + self.lm_head_bytes + self.expert_bytes * expected_experts(self.experts, self.top_k, tokens)


#: Tokens per chunk of Gated DeltaNet's chunked scan (flash-linear-attention's kernels: 64).
SCAN_CHUNK = 64
#: and of Mamba-2's (Nemotron-H's config.json: ``chunk_size`` 128).
SSD_CHUNK = 128


def sixteen_bit_share(model: ModelSpec) -> float:
    """Of the parameters a token's GEMMs multiply (the active ones but the LM head), the share a
    low-precision checkpoint keeps in 16 bits (``ModelSpec.params_sixteen_bit_b``); 0 for none."""
    per_param = bytes_per_param(model.precision)
    if not model.params_sixteen_bit_b or per_param is None or per_param >= 2.0:
        return 0.0
    arch = model.architecture
    lm_head = arch.vocab * arch.hidden if arch and arch.hidden else 0.0
    body = (model.params_active_b or model.params_total_b or 0.0) * 1e9 - lm_head
    return min(1.0, model.params_sixteen_bit_b * 1e9 / body) if body > 0 else 0.0


def linear_scan_flops(arch: ModelArchitecture) -> float:
    """FLOPs of one token through every linear-attention layer's chunked scan, Gated DeltaNet's
    or Mamba-2's (``linear_key_dim`` set: its state size): its scores within the chunk
    (2·C·d_k), and per value head its outputs within the chunk (2·C·d_v) and the state's read
    and update (4·d_k·d_v). Gated DeltaNet's kernels score per value head; Mamba-2's once per
    group of heads (``linear_key_heads``), whose B and C its heads share (the SSD kernels' C·Bᵀ,
    ``_bmm_chunk_fwd``, is (chunks, groups, C, C))."""
    key, value = arch.linear_key_dim or arch.linear_head_dim, arch.linear_head_dim
    chunk = arch.linear_chunk or (SSD_CHUNK if arch.linear_key_dim else SCAN_CHUNK)
    scored = arch.linear_key_heads if arch.linear_key_dim else arch.linear_value_heads
    per_layer = scored * 2 * chunk * key + arch.linear_value_heads * (2 * chunk * value + 4 * key * value)
    return float(arch.linear_attention_layers * per_layer)


def physics(model: ModelSpec, kv_bytes_per_element: float = 2.0) -> ModelPhysics:
    """A model's step costs from its parameters, precision and architecture, with its KV cache
    at ``kv_bytes_per_element`` (2: 16 bits, as engines keep it unless told; 1: an FP8 KV cache);
    what had to be assumed is said in ``notes``."""
    per_param = bytes_per_param(model.precision)
    if per_param is None or model.params_total_b is None:
        raise ValueError(f"model {model.name!r}: no precision known to the simulator ({model.precision!r}) or no parameter count")
    total = model.params_total_b * 1e9
    active = (model.params_active_b or model.params_total_b) * 1e9
    arch = model.architecture
    notes: list[str] = []
    lm_head_params = arch.vocab * arch.hidden if arch and arch.hidden else 0.0
    # the LM head stays in 16 bits in quantised Hugging Face checkpoints; a GGUF keeps it at about q6_k
    lm_bytes = lm_head_params * (BYTES_PER_PARAM["q6_k"] if model.precision.lower() in GGUF_TYPES else 2.0)
    experts = arch.experts if arch else 0
    top_k = arch.experts_per_token if arch else 0
    if active < total and not experts:
        experts, top_k = 128, 8
        notes.append("a mixture of experts of unknown layout: 128 experts, top-8 assumed")
    if active < total and expert_params(model) is None:
        notes.append(f"its experts' size unknown: prefilled as experts of {REFERENCE_EXPERT_PARAMS / 1e6:.1f}M parameters a layer (Qwen3.6-35B-A3B's)")
    body_total, body_active = total - lm_head_params, active - lm_head_params
    if experts and top_k and active < total:
        routed = (body_total - body_active) / (1.0 - top_k / experts)  # all routed experts' parameters
        shared = body_total - routed
        expert_bytes = routed / experts * per_param
    else:
        shared, expert_bytes = body_active, 0.0
    if arch is None:
        notes.append("no architecture: KV cache and attention left out")
    query_heads = (arch.query_heads or 4 * arch.kv_heads) if arch else 0
    q_width = query_heads * arch.head_dim if arch else 0
    window_q_width = query_heads * (arch.window_head_dim or arch.head_dim) if arch else 0
    kept = min(max(0.0, shared), sixteen_bit_share(model) * body_active)  # attention, state layers: weights every token reads
    return ModelPhysics(
        shared_bytes=(max(0.0, shared) - kept) * per_param + kept * 2.0,
        expert_bytes=expert_bytes,
        experts=experts if expert_bytes else 0,
        top_k=top_k if expert_bytes else 0,
        lm_head_bytes=lm_bytes,
        lm_head_params=lm_head_params,
        vocab=arch.vocab if arch else 0,
        flops_per_token=2.0 * (active - lm_head_params),
        lm_head_flops=2.0 * lm_head_params,
        kv_bytes_per_token=arch.kv_bytes_per_token(kv_bytes_per_element) if arch else 0.0,
        state_bytes=arch.linear_state_bytes() if arch else 0.0,
        attention_flops_per_context_token=4.0 * (arch.full_attention_layers if arch else 0) * q_width,
        window=arch.sliding_window if arch and arch.sliding_window_layers else 0,
        window_kv_bytes_per_token=arch.window_kv_bytes_per_token(kv_bytes_per_element) if arch else 0.0,
        window_attention_flops_per_context_token=4.0 * (arch.sliding_window_layers if arch else 0) * window_q_width,
        layers=arch.layers if arch else 0,
        full_attention_layers=arch.full_attention_layers if arch else 0,
        scan_flops_per_token=linear_scan_flops(arch) if arch else 0.0,
        notes=tuple(notes),
    )


@frozen(kw_only=True)
class Machine:
    """The roofs a step runs under: memory bandwidth and dense peak (bytes/s, FLOP/s)."""

    bandwidth: float
    peak_flops: float
    #: the model it runs is a mixture of experts: its prefill runs at ``Efficiency.moe_compute``
    mixture_of_experts: bool = False
    #: "fp8" or "fp4": the low-precision GEMMs the model runs (``Efficiency.fp8_speedup``,
    #: ``fp4_speedup`` or ``moe_speedup``); "": it computes in 16 bits
    low_precision: str = ""
    #: a mixture of experts' experts over :data:`REFERENCE_EXPERT_PARAMS` (one routed expert's
    #: parameters in one layer): what ``Efficiency.moe_size_exponent`` scales its prefill by
    expert_scale: float = 1.0
    #: its linear-attention layers are Mamba-2's: their scan runs at ``Efficiency.ssd_compute``
    #: (Gated DeltaNet's at ``scan_compute``)
    mamba_scan: bool = False
    #: of its GEMMs' FLOPs, the share a low-precision checkpoint runs in 16 bits: the layers its
    #: recipe keeps there (:func:`sixteen_bit_share`), which the low precision's speedup skips
    sixteen_bit_share: float = field(default=0.0, validator=[ge(0.0), le(1.0)])

    def compute_flops(self, efficiency: Efficiency) -> float:
        """FLOP/s a prefill reaches: the 16-bit roof × the efficiency × a low precision's speedup."""
        if not self.low_precision:
            speedup = 1.0
        elif self.mixture_of_experts:
            speedup = efficiency.moe_speedup
        else:
            speedup = efficiency.fp8_speedup if self.low_precision == "fp8" else efficiency.fp4_speedup
        # the layers kept in 16 bits take their own time: the whole's speedup is the harmonic blend
        speedup = 1.0 / ((1.0 - self.sixteen_bit_share) / speedup + self.sixteen_bit_share)
        if self.mixture_of_experts:
            sized = efficiency.moe_compute * self.expert_scale**efficiency.moe_size_exponent
            # however large its experts, a grouped GEMM is no faster than a dense layer's
            return self.peak_flops * min(sized, max(efficiency.compute, efficiency.moe_compute)) * speedup
        return self.peak_flops * efficiency.compute * speedup

    def timing_of(self, efficiency: Efficiency, *, scans: bool = True) -> tuple[float, ...]:
        """What :func:`step_seconds` and :meth:`Efficiency.own_cost_s` read of ``efficiency`` on
        this machine, as the numbers they compute with (``scans``: whether the steps run a linear
        attention's scan): two efficiencies alike in them time every step and request alike."""
        scan = (efficiency.ssd_compute if self.mamba_scan else efficiency.scan_compute) if scans else 0.0
        powers = (efficiency.moe_roof_power, efficiency.moe_decode_roof_power) if self.mixture_of_experts else ()
        return (
            self.bandwidth * efficiency.bandwidth, self.compute_flops(efficiency), scan, efficiency.decode_attention_speed,
            efficiency.prefill_ramp_tokens, *powers, efficiency.overhead_s, efficiency.layer_overhead_s, efficiency.logit_overhead_s,
            efficiency.request_overhead_s, efficiency.prompt_token_overhead_s,
        )  # fmt: skip

    @classmethod
    def of(cls, hardware: HardwareProfile, model: ModelSpec, *, sixteen_bit: bool = False) -> Machine:
        """The roofs ``model`` runs under on ``hardware``: the 16-bit one, and which low-precision
        GEMMs it runs where the hardware has that roof (an FP8 checkpoint on a GPU without FP8
        runs its GEMMs in 16 bits) and the engine does not compute it in 16 bits (``sixteen_bit``:
        a weight-only kernel, as the backend declares for its version)."""
        if not hardware.memory_bandwidth_gbs or not hardware.dense_tflops:
            raise ValueError(f"hardware {hardware.name!r} has no memory bandwidth or dense TFLOPS for the simulator")
        moe = bool(model.params_active_b and model.params_total_b and model.params_active_b < model.params_total_b)
        tflops = hardware.dense_tflops.get("bf16") or max(hardware.dense_tflops.values())
        low = LOW_PRECISION.get(model.precision.lower().split()[0], "")
        return cls(
            bandwidth=hardware.memory_bandwidth_gbs * 1e9,
            peak_flops=tflops * 1e12,
            mixture_of_experts=moe,
            low_precision=low if low in hardware.dense_tflops and not sixteen_bit else "",
            expert_scale=(expert_params(model) or REFERENCE_EXPERT_PARAMS) / REFERENCE_EXPERT_PARAMS if moe else 1.0,
            mamba_scan=bool(model.architecture and model.architecture.linear_key_dim),
            sixteen_bit_share=sixteen_bit_share(model),
        )


def step_cost(
    physics_: ModelPhysics, *, decode_contexts: Sequence[int], prefill: Sequence[tuple[int, int]], draft_tokens: int = 0
) -> tuple[float, float, float, float]:
    """One step's bytes read, FLOPs, Gated DeltaNet scan FLOPs (kernels of their own) and the
    decoding tokens' attention FLOPs (at a speed of their own): ``decode_contexts`` are the
    contexts of the sequences decoding a token; ``prefill`` is (tokens, context before them)
    per prompt chunk; ``draft_tokens``: the drafts each decoding sequence verifies beside its
    own token, drafted in this step too (speculative decoding: :mod:`arena_prediction.speculative`)."""
    verified = len(decode_contexts) * (1 + draft_tokens)
    tokens = verified + sum(n for n, _ in prefill)
    read = physics_.weight_bytes(tokens)
    # a sequence's recurrent state is read once and written once, or, verifying drafts, once a
    # position it may be rolled back to (vllm PR 33726: a state slot for each of 1 + k positions)
    read += physics_.kv_read(decode_contexts) + (2 + draft_tokens) * physics_.state_bytes * len(decode_contexts)
    read += physics_.kv_read(before + n for n, before in prefill)  # a chunk reads its context and writes its own
    sampled = verified + len(prefill)  # the logits of a chunk's last token only (one that ends a prompt samples)
    flops = physics_.flops_per_token * tokens + physics_.lm_head_flops * sampled
    flops += sum(n * physics_.attention_flops((before + n / 2,)) for n, before in prefill)  # each token attends to what came before it
    decode_attention = (1 + draft_tokens) * physics_.attention_flops(decode_contexts)
    if draft_tokens:
        drafted = drafting_cost(physics_, decode_contexts=decode_contexts, prefill=prefill, draft_tokens=draft_tokens)
        read, flops, decode_attention = read + drafted.read, flops + drafted.flops, decode_attention + drafted.decode_attention_flops
    return read, flops, physics_.scan_flops_per_token * tokens, decode_attention


def step_seconds(
    read: np.ndarray | float,
    flops: np.ndarray | float,
    machine: Machine,
    efficiency: Efficiency,
    layers: int = 0,
    ramp_flops: np.ndarray | float = 0.0,
    scan_flops: np.ndarray | float = 0.0,
    decode_attention_flops: np.ndarray | float = 0.0,
    sampled_logits: np.ndarray | float = 0.0,
) -> tuple[Any, Any]:
    """Steps' times (of a model of ``layers`` layers), and whether each was bound by memory
    (True) or compute (False): arrays for arrays of steps, scalars for one step's floats.
    ``ramp_flops``: a prefilling step's FLOPs per token (0 for a decode-only step), which
    ``Efficiency.prefill_ramp_tokens`` multiplies; ``scan_flops``: a step's Gated DeltaNet
    or Mamba-2 FLOPs, at ``Efficiency.scan_compute`` or ``ssd_compute``; ``decode_attention_flops``: its decoding tokens'
    attention, at ``Efficiency.decode_attention_speed`` of the GEMMs' FLOP/s; ``sampled_logits``:
    the logits of its sampling sequences (a vocabulary's each), each at ``Efficiency.logit_overhead_s``.
    A dense model's step takes the larger of its read and its math, a mixture of experts' their
    p-norm (``Efficiency.moe_roof_power``; ``moe_decode_roof_power`` where the step prefills
    nothing, its ``ramp_flops`` 0)."""
    memory_s = read / (machine.bandwidth * efficiency.bandwidth)
    flops = flops + efficiency.prefill_ramp_tokens * ramp_flops
    gemm = machine.compute_flops(efficiency)
    scan = efficiency.ssd_compute if machine.mamba_scan else efficiency.scan_compute
    compute_s = flops / gemm + decode_attention_flops / (gemm * efficiency.decode_attention_speed) + scan_flops / (machine.peak_flops * scan)
    if isinstance(memory_s, float) and isinstance(compute_s, float):
        # one step's floats (the simulator's loop, millions of times): the same arithmetic in
        # Python floats, without numpy's cost per call on scalars
        if machine.mixture_of_experts:
            power = efficiency.moe_roof_power if ramp_flops > 0 else efficiency.moe_decode_roof_power
            roof = (memory_s**power + compute_s**power) ** (1 / power)
        else:
            roof = max(memory_s, compute_s)
    elif machine.mixture_of_experts:
        power = np.where(np.asarray(ramp_flops) > 0, efficiency.moe_roof_power, efficiency.moe_decode_roof_power)
        power, memory_s, compute_s = np.broadcast_arrays(power, memory_s, compute_s)
        roof = memory_s + compute_s  # a p-norm of power 1 (decode's default) is the sum: no pow where it is
        norm = power != 1.0
        roof[norm] = (memory_s[norm] ** power[norm] + compute_s[norm] ** power[norm]) ** (1 / power[norm])
    else:
        roof = np.maximum(memory_s, compute_s)
    return roof + efficiency.step_overhead_s(layers, sampled_logits), memory_s >= compute_s


@frozen(kw_only=True)
class Request:
    arrival_s: float
    prompt: int
    output: int
    #: Tokens already in the server's cache before the prompt (a conversation's earlier turns).
    cached: int = 0


@frozen(kw_only=True)
class Served:
    request: Request
    #: when the client sent it: when it was due, or later where the client held it back (its
    #: ``--max-concurrency``) until a request in flight ended
    sent_s: float
    #: when the engine took it into a slot (after the request's own cost, at a step's end)
    admitted_s: float
    first_token_s: float
    end_s: float
    first_step: int
    last_step: int
    #: the first step after its admission
    admitted_step: int = 0

    @property
    def ttft_s(self) -> float:
        """From the send to the first token, as the reference tools count it."""
        return self.first_token_s - self.sent_s

    @property
    def decode_tps(self) -> float | None:
        """Tokens per second after the first (one stream)."""
        span = self.end_s - self.first_token_s
        return (self.request.output - 1) / span if self.request.output > 1 and span > 0 else None


@frozen(kw_only=True)
class Simulation:
    """The requests as served, and every step's bytes and FLOPs (so a simulation whose steps do
    not depend on their timing, a closed-loop round, can be re-timed for other efficiencies)."""

    served: tuple[Served, ...]
    read: np.ndarray
    flops: np.ndarray
    memory_bound: np.ndarray
    layers: int = 0
    #: per step: the model's FLOPs per token if the step prefilled, else 0
    ramp_flops: np.ndarray | float = 0.0
    #: per step: its Gated DeltaNet FLOPs
    scan_flops: np.ndarray | float = 0.0
    #: per step: its decoding tokens' attention FLOPs
    decode_attention_flops: np.ndarray | float = 0.0
    #: per step: the logits it sampled (the vocabulary, once per sequence that sampled a token)
    sampled_logits: np.ndarray | float = 0.0

    def bound(self) -> str:
        """What bounded most steps: "bandwidth" or "compute"."""
        return "bandwidth" if self.memory_bound.mean() >= 0.5 else "compute"


class _Steps:
    """Each simulated step's end, bytes, FLOPs and whether memory bound it, as the loop appends them."""

    def __init__(self) -> None:
        self.ends: list[float] = []
        self.read: list[float] = []
        self.flops: list[float] = []
        self.memory: list[bool] = []
        self.ramp: list[float] = []
        self.scan: list[float] = []
        self.attention: list[float] = []
        self.sampled: list[float] = []

    def add(self, end: float, read: float, flops: float, memory: bool, ramp: float, scan: float, attention: float, sampled: float) -> int:
        """Record a step; its index."""
        self.ends.append(end)
        self.read.append(read)
        self.flops.append(flops)
        self.memory.append(memory)
        self.ramp.append(ramp)
        self.scan.append(scan)
        self.attention.append(attention)
        self.sampled.append(sampled)
        return len(self.ends) - 1

    def simulation(self, served: Sequence[Served], layers: int) -> Simulation:
        return Simulation(
            served=tuple(served),
            read=np.array(self.read),
            flops=np.array(self.flops),
            memory_bound=np.array(self.memory, dtype=bool),
            layers=layers,
            ramp_flops=np.array(self.ramp),
            scan_flops=np.array(self.scan),
            decode_attention_flops=np.array(self.attention),
            sampled_logits=np.array(self.sampled),
        )


@define(kw_only=True, eq=False)
class _Running:
    """A request the engine has taken: how far its prompt and its answer have come."""

    request: Request
    sent_s: float
    admitted_s: float
    #: the step count when it was admitted (its first step is the next)
    admitted_step: int
    prompt_done: int = 0
    #: tokens generated: a mean, fractional with speculative decoding
    generated: float = 0
    #: the step that ended its prompt and sampled its first token; None while it prefills
    first_step: int | None = None

    def served(self, first_token_s: float, end_s: float, last_step: int) -> Served:
        assert self.first_step is not None
        return Served(
            request=self.request,
            sent_s=self.sent_s,
            admitted_s=self.admitted_s,
            first_token_s=first_token_s,
            end_s=end_s,
            first_step=self.first_step,
            last_step=last_step,
            admitted_step=self.admitted_step,
        )


def _prefill_chunks(running: Sequence[_Running], budget: int, breaks: Sequence[int]) -> list[tuple[_Running, int]]:
    """(entry, tokens) each waiting prompt prefills this step, in admission order, from what is
    left of the budget; a prompt's share stops at the largest break it has not passed."""
    chunks = []
    for entry in running:
        if entry.first_step is None and budget > 0:
            left = entry.request.prompt - entry.prompt_done
            stop = next((offset for offset in breaks if left > offset), 0)
            take = min(left - stop, budget)
            chunks.append((entry, take))
            budget -= take
    return chunks


class _Client:
    """The requests not yet taken by the engine: those not yet due, and those sent (each with
    when it was sent and when the engine can take it), the client holding ``limit`` in flight
    at most (None: no limit)."""

    def __init__(self, requests: Sequence[Request], limit: int | None, efficiency: Efficiency) -> None:
        self.waiting = sorted(requests, key=lambda r: r.arrival_s)
        self.index = 0
        self.permits = [0.0] * limit if limit else None  # when each of the client's permits is free
        self.sent: list[tuple[Request, float, float]] = []  # (request, sent at, ready for the engine at), in order
        self.efficiency = efficiency

    def pending(self) -> bool:
        return self.index < len(self.waiting) or bool(self.sent)

    def send_due(self, clock: float) -> None:
        while self.index < len(self.waiting) and self.waiting[self.index].arrival_s <= clock and (self.permits is None or self.permits):
            request = self.waiting[self.index]
            at = max(request.arrival_s, heapq.heappop(self.permits)) if self.permits is not None else request.arrival_s
            self.sent.append((request, at, at + self.efficiency.request_seconds(request)))
            self.index += 1

    def next_event(self, clock: float) -> float:
        """When something happens next with nothing running: a request due, or one ready."""
        due = self.waiting[self.index].arrival_s if self.index < len(self.waiting) and (self.permits is None or self.permits) else float("inf")
        return max(clock, min(due, self.sent[0][2] if self.sent else float("inf")))

    def ended(self, clock: float) -> None:
        if self.permits is not None:
            heapq.heappush(self.permits, clock)

    def quiet_until(self, room: bool) -> float:
        """When the client may next change what the engine runs, at the soonest: its next request
        due, or, with ``room`` for one, the next sent ready (inf: never, until a request ends)."""
        free = self.permits is None or bool(self.permits)  # none free: no request is sent until one ends
        due = self.waiting[self.index].arrival_s if self.index < len(self.waiting) and free else float("inf")
        return min(due, self.sent[0][2] if room and self.sent else float("inf"))


def _engine_step(
    running: list[_Running],
    steps: _Steps,
    clock: float,
    physics_: ModelPhysics,
    machine: Machine,
    efficiency: Efficiency,
    token_budget: int,
    breaks: Sequence[int],
    draft_tokens: int,
) -> tuple[float, int]:
    """One step of the engine over ``running``: its cost, its prompts' chunks and its decoded
    tokens; the clock at its end and its index."""
    decoding = [entry for entry in running if entry.first_step is not None]
    # a decoding sequence's drafts count against the budget too (vLLM schedules 1 + k tokens for it)
    chunks = _prefill_chunks(running, max(0, token_budget - len(decoding) * (1 + draft_tokens)), breaks)
    read, flops, scan, attention = step_cost(
        physics_,
        decode_contexts=[e.request.cached + e.request.prompt + round(e.generated) for e in decoding],
        prefill=[(take, e.request.cached + e.prompt_done) for e, take in chunks],
        draft_tokens=draft_tokens,
    )
    ramp = physics_.flops_per_token if chunks else 0.0
    # every decoding sequence samples (each draft verified, and each drafted), and a prompt whose last chunk this is
    sampled = physics_.vocab * (len(decoding) * (1 + 2 * draft_tokens) + sum(1 for e, take in chunks if e.prompt_done + take >= e.request.prompt))
    seconds, memory = step_seconds(read, flops, machine, efficiency, physics_.layers, ramp, scan, attention, sampled)  # floats: no arrays of one
    clock += float(seconds)
    step = steps.add(clock, read, flops, bool(memory), ramp, scan, attention, sampled)
    gained = tokens_per_step(draft_tokens)  # a decoding sequence's tokens a step
    for entry in decoding:
        entry.generated += gained
    for entry, take in chunks:
        entry.prompt_done += take
        if entry.prompt_done >= entry.request.prompt:
            entry.generated, entry.first_step = 1, step  # the step that ends the prompt samples the first token
    return clock, step


def _decoding_ahead(running: Sequence[_Running], steps: _Steps, clock: float, until_s: float) -> int:
    """The steps :func:`_decode_run` may take now (0 where a sequence prefills): to the first
    sequence's end, to :data:`DECODE_RUN_STEPS`, and to about ``until_s`` (the client's next
    request) at the last step's length: steps lengthen as contexts grow, so the run is cut at
    ``until_s`` rather than short of it."""
    if not all(e.first_step is not None for e in running):
        return 0
    run = min(DECODE_RUN_STEPS, min(e.request.output - round(e.generated) for e in running))
    last = steps.ends[-1] - steps.ends[-2] if len(steps.ends) > 1 else 0.0
    if last > 0 and until_s < float("inf"):
        run = min(run, int((until_s - clock) / last) + 1)
    return run


def _decode_run(
    running: list[_Running], steps: _Steps, clock: float, physics_: ModelPhysics, machine: Machine, efficiency: Efficiency, until_s: float, most: int
) -> tuple[float, int]:
    """``most`` steps at most of the engine over ``running`` while every sequence only decodes,
    one token a step, computed together as arrays: the last is the step after which the first of
    them ends, or the first to end at or after ``until_s`` (when the client may have a request for
    the engine). The arithmetic of :func:`step_cost` and :func:`step_seconds` in the same order,
    element by element, as that many calls of :func:`_engine_step` without drafts; the clock at
    the last one's end and its index."""
    now = np.array([e.request.cached + e.request.prompt + round(e.generated) for e in running])
    contexts = now[:, None] + np.arange(most)  # a row of steps per sequence
    inside = np.minimum(contexts, physics_.window)
    # summed over the sequences row after row (a reduction across rows adds them in order), as
    # kv_read and attention_flops sum them
    kv = (physics_.kv_bytes_per_token * contexts + physics_.window_kv_bytes_per_token * inside).sum(axis=0)
    attention = (physics_.attention_flops_per_context_token * contexts + physics_.window_attention_flops_per_context_token * inside).sum(axis=0)
    tokens = len(running)
    read = physics_.weight_bytes(tokens) + (kv + 2 * physics_.state_bytes * tokens)
    flops = physics_.flops_per_token * tokens + physics_.lm_head_flops * tokens
    scan, sampled = physics_.scan_flops_per_token * tokens, physics_.vocab * tokens
    seconds, memory = step_seconds(read, flops, machine, efficiency, physics_.layers, 0.0, scan, attention, sampled)
    ends = np.cumsum(np.concatenate(([clock], seconds)))[1:]  # one addition a step, as the clock
    taken = min(most, int(np.searchsorted(ends, until_s)) + 1)  # through the first to reach until_s
    for entry in running:
        entry.generated += float(taken)
    steps.ends += ends[:taken].tolist()
    steps.read += read[:taken].tolist()
    steps.flops += [flops] * taken
    steps.memory += np.broadcast_to(memory, ends.shape)[:taken].tolist()
    steps.ramp += [0.0] * taken
    steps.scan += [scan] * taken
    steps.attention += attention[:taken].tolist()
    steps.sampled += [sampled] * taken
    return steps.ends[-1], len(steps.ends) - 1


def simulate(
    requests: Sequence[Request],
    physics_: ModelPhysics,
    machine: Machine,
    efficiency: Efficiency,
    *,
    slots: int,
    token_budget: int,
    prompt_breaks: Sequence[int] = (),
    client_limit: int | None = None,
    draft_tokens: int = 0,
) -> Simulation:
    """Serve ``requests`` with ``slots`` sequences at most and ``token_budget`` tokens per step;
    a request's first token comes at the end of the step that finishes its prompt, then one a step
    (with ``draft_tokens`` of speculative decoding, :func:`tokens_per_step` on average).

    A request is sent when it is due, or, where the client holds ``client_limit`` requests in
    flight at most, when one of them ends; the engine takes it at the first step's end after
    its own cost (:meth:`Efficiency.request_seconds`: the HTTP request, tokenising its prompt,
    scheduling it). Prompts are prefilled in admission order, each taking what is left of the
    budget, except that a prompt's share of a step stops ``prompt_breaks`` tokens before its end
    (largest first): llama.cpp stops there to checkpoint a memory it cannot roll back, and the
    step goes on with the next prompt."""
    client = _Client(requests, client_limit, efficiency)
    running: list[_Running] = []
    served: list[Served] = []
    steps = _Steps()
    breaks = sorted(prompt_breaks, reverse=True)
    clock = 0.0
    while client.pending() or running:
        client.send_due(clock)
        while client.sent and len(running) < slots and client.sent[0][2] <= clock:
            request, at, _ = client.sent.pop(0)
            running.append(_Running(request=request, sent_s=at, admitted_s=clock, admitted_step=len(steps.ends)))
        if not running:
            clock = client.next_event(clock)
            continue
        until = client.quiet_until(len(running) < slots)
        run = 0 if draft_tokens else _decoding_ahead(running, steps, clock, until)
        if run >= DECODE_RUN_LEAST:
            clock, step = _decode_run(running, steps, clock, physics_, machine, efficiency, until, run)
        else:
            clock, step = _engine_step(running, steps, clock, physics_, machine, efficiency, token_budget, breaks, draft_tokens)
        for entry in [e for e in running if e.first_step is not None and e.generated >= e.request.output]:
            served.append(entry.served(steps.ends[entry.first_step], clock, step))  # type: ignore[index]
            running.remove(entry)
            client.ended(clock)
        if len(steps.ends) > MAX_STEPS:
            raise ValueError(f"the simulation ran past {MAX_STEPS:,} steps")
    return steps.simulation(served, physics_.layers)

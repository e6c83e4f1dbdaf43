"""The physical decode ceiling (hardware.md section 4): memory bandwidth / bytes read per step.

One decode step of a batch of B sequences reads the active weights once (shared by the batch),
plus each sequence's KV cache and, for hybrid models, twice its linear-attention state (read
and written). A user's tokens/s cannot exceed ``bandwidth / bytes per step``. Every term is
taken at its least, so the figure is an upper bound: MoE weights at the top-k experts (a batch
touches more), the KV cache at the shortest context during decode (prompt plus prior depth) in
16-bit (both engines' default), B = the closed-loop concurrency (llama-benchy starts the
requests of a run together) and 1 for open-loop traffic. A measured per-user decode speed above
1.1 x the ceiling is impossible -- something was cached or mis-counted -- and invalidates the
result. Measured / ceiling is the "bandwidth efficiency" on the card.
"""

from __future__ import annotations

import attrs

from arena_core.errors import UsageError
from arena_core.types import HardwareProfile, ModelSpec, WorkloadResult, WorkloadSpec

#: Bytes per weight by precision; quantised GGUF types by their average bits per weight. The one
#: table: the decode ceiling and the step simulator (:mod:`arena_prediction.simulator`, through ``arena_core.BYTES_PER_PARAM``) both read it.
BYTES_PER_PARAM = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "nvfp4": 0.5625,  # 4 bits + an FP8 scale per 16
    "mxfp4": 0.53125,  # 4 bits + an 8-bit scale per 32
    "int4": 0.53125,  # AWQ/GPTQ, group 128 with 16-bit scales
    "awq": 0.53125,
    "fp4": 0.5,
    "q8_0": 1.0625,
    "q6_k": 0.8203,
    "q5_k_m": 0.6875,
    "q4_k_m": 0.6,
    "q4_0": 0.5625,
}
GGUF_TYPES = ("q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0")
TOLERANCE = 1.10


def bytes_per_param(precision: str) -> float | None:
    """Bytes per weight of a precision such as ``BF16``, ``BF16 + MTP``, ``nvfp4`` or ``q4_k_m``."""
    return BYTES_PER_PARAM.get(precision.lower().split()[0].replace("-", "_")) if precision.strip() else None


def known_precision(precision: str) -> str:
    """``precision`` where :data:`BYTES_PER_PARAM` knows its bytes per weight, else a one-line
    error (``--precision``) that lists the ones it knows."""
    if bytes_per_param(precision) is None:
        raise UsageError(f"--precision: {precision!r} is not a precision Arena knows ({', '.join(BYTES_PER_PARAM)})")
    return precision


def weight_bytes_per_token(model: ModelSpec) -> float | None:
    """Bytes of weights one decode step reads (active parameters at their precision)."""
    per_param = bytes_per_param(model.precision)
    active = model.params_active_b or model.params_total_b
    if per_param is None or active is None:
        return None
    return active * 1e9 * per_param


KV_BYTES_PER_ELEMENT = 2.0
#: Bytes per KV element of a server's KV cache type (vLLM's ``--kv-cache-dtype``; "auto": the
#: model's own 16 bits): the one table a run's recorded setting and a cards file are checked against.
KV_CACHE_BYTES = {"auto": 2.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "fp8_e4m3": 1.0, "fp8_e5m2": 1.0}


def decode_shape(workload: WorkloadSpec | None) -> tuple[int, int]:
    """(sequences decoding together, shortest context during decode) for ``workload``."""
    return (1, 0) if workload is None else workload.shape.decode_shape()


def bytes_per_step(model: ModelSpec, batch: int = 1, context_tokens: int = 0, kv_bytes_per_element: float = KV_BYTES_PER_ELEMENT) -> float | None:
    """The least bytes one decode step reads for ``batch`` sequences of ``context_tokens``, the
    KV cache at ``kv_bytes_per_element`` (the server's KV cache type; 16 bits, both engines'
    default, when the run does not say)."""
    weights = weight_bytes_per_token(model)
    if weights is None:
        return None
    architecture = model.architecture
    if architecture is None:
        return weights
    per_sequence = architecture.kv_bytes(context_tokens, kv_bytes_per_element) + 2 * architecture.linear_state_bytes()
    return weights + batch * per_sequence


def decode_ceiling(
    model: ModelSpec, hardware: HardwareProfile, workload: WorkloadSpec | None = None, kv_bytes_per_element: float = KV_BYTES_PER_ELEMENT
) -> float | None:
    """The most tokens/s one user can decode on ``hardware`` under ``workload``'s batch and
    context (weights only when no workload is given), or None when a figure is missing."""
    batch, context = decode_shape(workload)
    step = bytes_per_step(model, batch, context, kv_bytes_per_element)
    if step is None or not hardware.memory_bandwidth_gbs:
        return None
    return hardware.memory_bandwidth_gbs * 1e9 / step


def per_user_decode(metrics: dict) -> float | None:
    """A result's per-user decode speed: llama-benchy's per-request tg, or 1 / vLLM's median TPOT."""
    if metrics.get("decode_tps_per_user"):
        return float(metrics["decode_tps_per_user"])
    tpot = metrics.get("tpot_median_s")
    return 1.0 / tpot if tpot else None


def apply_ceiling(
    result: WorkloadResult,
    model: ModelSpec,
    hardware: HardwareProfile,
    workload: WorkloadSpec | None = None,
    kv_bytes_per_element: float = KV_BYTES_PER_ELEMENT,
) -> WorkloadResult:
    """``result`` with its bandwidth efficiency, and invalid when it decodes faster than physics
    allows (the KV cache at the server's own type: an FP8 cache reads half the bytes)."""
    ceiling = decode_ceiling(model, hardware, workload, kv_bytes_per_element)
    measured = per_user_decode(dict(result.metrics))
    if measured is None and workload is not None and workload.loop == "closed":
        measured = result.tokens_per_second  # a closed-loop result's tokens/s is one user's decode (an import may carry nothing else)
    if ceiling is None or measured is None:
        return result
    metrics = {**result.metrics, "decode_ceiling_tps": ceiling, "bandwidth_efficiency": measured / ceiling}
    verdict = result.verdict
    if measured > TOLERANCE * ceiling:
        reason = (
            f"decode {measured:.1f} tok/s per user exceeds the physical ceiling {ceiling:.1f} tok/s "
            f"({hardware.memory_bandwidth_gbs:g} GB/s over the bytes one decode step reads) by more than 10 %"
        )
        verdict = attrs.evolve(verdict, valid=False, reasons=(*verdict.reasons, reason))
    return attrs.evolve(result, metrics=metrics, verdict=verdict)

"""Shrinking workloads for small machines (workloads.md, "Scaling for small machines").

A scale factor multiplies token lengths and request counts -- never below 16 tokens or 1
request -- and keeps concurrency, turns, rates, burstiness and the shape of each workload. The
factor is recorded with every result and shown on the card ("scaled x0.05").
"""

from __future__ import annotations

import attrs

from arena_core.types import WorkloadSpec

MIN_TOKENS = 16


def _tokens(value: int, factor: float) -> int:
    return max(MIN_TOKENS, round(value * factor))


def _count(value: int, factor: float) -> int:
    return max(1, round(value * factor))


def scale_workload(spec: WorkloadSpec, factor: float) -> WorkloadSpec:
    if factor == 1:
        return spec
    if spec.closed_loop is not None:
        shape = spec.closed_loop
        return attrs.evolve(
            spec,
            closed_loop=attrs.evolve(
                shape,
                prompt_tokens=_tokens(shape.prompt_tokens, factor),
                generated_tokens=_tokens(shape.generated_tokens, factor),
                depth=_tokens(shape.depth, factor) if shape.depth else 0,
                runs=_count(shape.runs, factor),
            ),
        )
    assert spec.open_loop is not None
    shape = spec.open_loop
    return attrs.evolve(
        spec,
        open_loop=attrs.evolve(
            shape,
            input_tokens=_tokens(shape.input_tokens, factor) if shape.input_tokens else None,
            output_tokens=_tokens(shape.output_tokens, factor) if shape.output_tokens else None,
            num_prompts=_count(shape.num_prompts, factor),
        ),
    )


def context_needed(spec: WorkloadSpec) -> int:
    """The longest sequence (prompt, history and answer) one request of ``spec`` can reach."""
    if spec.closed_loop is not None:
        shape = spec.closed_loop
        return shape.depth + shape.turns * (shape.prompt_tokens + shape.generated_tokens)
    assert spec.open_loop is not None
    shape = spec.open_loop
    if shape.dataset == "random":
        assert shape.input_tokens is not None and shape.output_tokens is not None
        return int((shape.input_tokens + shape.output_tokens) * (1 + shape.range_ratio)) + 1
    return 2048  # vLLM's ShareGPT rule: prompt plus reference completion at most 2048 tokens


def concurrency_needed(spec: WorkloadSpec) -> int:
    if spec.closed_loop is not None:
        return spec.closed_loop.concurrency
    assert spec.open_loop is not None
    return spec.open_loop.max_concurrency or 1

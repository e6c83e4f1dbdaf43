"""Value classes: frozen, keyword-only, and they refuse impossible values."""

from __future__ import annotations

import attrs
import pytest

from arena_core import ClosedLoopShape, OpenLoopShape, QualityScore, WorkloadSpec
from arena_core.types import HardwareProfile


def closed(**changes):
    return ClosedLoopShape(**{"prompt_tokens": 16, "generated_tokens": 8, **changes})


def test_value_classes_are_frozen_and_keyword_only():
    shape = closed()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        shape.concurrency = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        ClosedLoopShape(16, 8)  # type: ignore[misc]


@pytest.mark.parametrize("changes", [{"concurrency": 0}, {"concurrency": -1}, {"runs": 0}, {"depth": -1}, {"prompt_tokens": 1.5}, {"latency_mode": "fast"}])
def test_closed_loop_shape_refuses_impossible_values(changes):
    with pytest.raises((ValueError, TypeError)):
        closed(**changes)


def test_open_loop_random_needs_lengths_and_valid_ratio():
    with pytest.raises(ValueError, match="input_tokens and output_tokens"):
        OpenLoopShape(dataset="random", request_rate=1, num_prompts=5)
    with pytest.raises(ValueError):
        OpenLoopShape(dataset="random", request_rate=1, num_prompts=5, input_tokens=4, output_tokens=4, range_ratio=1.0)
    with pytest.raises(ValueError):
        OpenLoopShape(dataset="sharegpt", request_rate=0, num_prompts=5)


def test_workload_needs_exactly_one_shape_and_a_cli_friendly_name():
    open_shape = OpenLoopShape(dataset="sharegpt", request_rate=1, num_prompts=5)
    with pytest.raises(TypeError, match="shape"):
        WorkloadSpec(name="w", title="W", description="", runner="r")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="shape"):
        WorkloadSpec(name="w", title="W", description="", runner="r", shape=(closed(), open_shape))  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        WorkloadSpec(name="Bad Name", title="W", description="", runner="r", shape=closed())
    assert WorkloadSpec(name="w", title="W", description="", runner="r", shape=open_shape).loop == "open"


def test_a_shape_owns_its_scaling_and_what_it_needs_from_a_server():
    talk = closed(prompt_tokens=2048, generated_tokens=512, turns=5, concurrency=10, runs=3)
    assert talk.scaled(0.001) == closed(prompt_tokens=16, generated_tokens=16, turns=5, concurrency=10, runs=1)
    assert (talk.context_needed(), talk.concurrency_needed(), talk.decode_shape()) == (5 * (2560 + 32), 10, (10, 2048))
    peak = OpenLoopShape(dataset="random", request_rate=1.5, num_prompts=300, input_tokens=4000, output_tokens=500, range_ratio=0.9, max_concurrency=25)
    assert peak.scaled(0.05).num_prompts == 15 and peak.scaled(0.05).request_rate == 1.5
    assert (peak.context_needed(), peak.concurrency_needed(), peak.decode_shape()) == (int(4500 * 1.9) + 1, 25, (1, 4000))


def test_quality_score_is_a_percentage_or_not_published():
    assert QualityScore(benchmark="MMLU-Pro", value=None, source="x").value is None
    with pytest.raises(ValueError):
        QualityScore(benchmark="MMLU-Pro", value=101, source="x")


def test_hardware_profile_memory_must_be_positive_when_known():
    assert HardwareProfile(name="h", title="H", description="", memory_gb=None, unified_memory=True).memory_gb is None
    with pytest.raises(ValueError):
        HardwareProfile(name="h", title="H", description="", memory_gb=0, unified_memory=True)

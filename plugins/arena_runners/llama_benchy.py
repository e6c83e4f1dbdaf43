"""The ``llama-benchy`` runner: closed-loop load in llama-benchy 0.4.0's style.

``native`` (default) is Arena's own engine with llama-benchy's semantics and a lighter,
more exact client; ``external`` runs the real ``llama-benchy`` program offline and parses its
JSON. Both write ``llama-benchy.json`` in llama-benchy's schema beside the Arena result.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import attrs

from arena_core import (
    ClosedLoopShape,
    RunContext,
    RunnerSpec,
    ToolAvailability,
    UsageError,
    WorkloadResult,
    WorkloadSpec,
)
from arena_core.loadgen.loop import run as run_loop
from arena_core.store import write_json_atomic
from arena_core.loadgen import (
    ChatClient,
    ClosedLoopDriver,
    ClosedLoopPlan,
    PromptBuilder,
    RecordWriter,
    choose_codec,
    closed_loop_result,
    llama_benchy_report,
    load_corpus,
    median,
    verdict_for,
)

NAME = "llama-benchy"
EXECUTABLE = "llama-benchy"
INSTALL_HINT = "pip install llama-benchy==0.4.0"
CHARS_PER_TOKEN_GUESS = 5  # generous: the corpus must hold every slice several times over


def depths(shape: ClosedLoopShape) -> list[int]:
    """The ``--depth`` values: one per conversation turn, or the workload's single depth."""
    if shape.turns > 1:
        return [turn * (shape.prompt_tokens + shape.generated_tokens) for turn in range(shape.turns)]
    return [shape.depth]


def command_line(shape: ClosedLoopShape, *, base_url: str, model: str, extra: list[str] | None = None) -> list[str]:
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


def check_external() -> ToolAvailability:
    return ToolAvailability.of_executable(EXECUTABLE, INSTALL_HINT)


def _plan(workload: WorkloadSpec, context: RunContext) -> ClosedLoopPlan:
    shape = workload.closed_loop
    if shape is None:
        raise UsageError(f"workload {workload.name!r} is open-loop; the {NAME} runner drives closed-loop workloads")
    return ClosedLoopPlan(
        workload=workload.name,
        model=context.endpoint.model,
        prompt_tokens=shape.prompt_tokens,
        generated_tokens=shape.generated_tokens,
        depth=shape.depth,
        turns=shape.turns,
        concurrency=shape.concurrency,
        runs=shape.runs,
        latency_mode=shape.latency_mode,
        exact_output=context.options.exact_output,
        check_coherence=context.options.check_coherence,
        seed=workload.seed,
    )


def _corpus_chars(plan: ClosedLoopPlan) -> int:
    return max(4 * (plan.prompt_tokens + plan.depth), 20_000) * CHARS_PER_TOKEN_GUESS


class NativeEngine:
    """Arena's own closed-loop engine."""

    def run(self, workload: WorkloadSpec, context: RunContext) -> WorkloadResult:
        return run_loop(self._run(workload, context))

    async def _run(self, workload: WorkloadSpec, context: RunContext) -> WorkloadResult:
        plan = _plan(workload, context)
        options = context.options
        context.output_dir.mkdir(parents=True, exist_ok=True)
        corpus = load_corpus(options.corpus, _corpus_chars(plan))
        client = ChatClient(context.endpoint, request_timeout=options.request_timeout_s)
        try:
            codec = await choose_codec(client, options.tokenizer, corpus.text)
            prompts = PromptBuilder(await codec.encode(corpus.text), codec, workload.seed)
            writer = RecordWriter(context.output_dir / "records.jsonl")

            async def count_and_store(records: list[Any]) -> list[Any]:
                if codec.exact:  # the client's own count, the cross-check of the server's usage
                    records = [
                        attrs.evolve(r, completion_tokens_client=len(await codec.encode(r.content + r.reasoning))) if r.ok else r
                        for r in records
                    ]
                writer.append(records)
                return records

            driver = ClosedLoopDriver(client, plan, prompts, codec, count_and_store, context.progress)
            driver.on_request = context.on_request
            driver.on_interrupt = writer.append
            facts, records = await driver.run()
        finally:
            await client.close()
        report = llama_benchy_report(records, plan, facts, context.endpoint.model)
        write_json_atomic(context.output_dir / "llama-benchy.json", report)
        write_json_atomic(
            context.output_dir / "session.json",
            {**attrs.asdict(facts), "tokenizer": codec.description, "corpus": corpus.source, "engine": "native"},
        )
        return closed_loop_result(records, plan, facts, report, runner=NAME, engine="native", scale=context.scale)


class ExternalEngine:
    """The real ``llama-benchy``, run offline: local tokenizer, corpus pre-seeded in its cache."""

    def run(self, workload: WorkloadSpec, context: RunContext) -> WorkloadResult:
        plan = _plan(workload, context)
        availability = check_external()
        if not availability.available:
            raise UsageError(availability.detail)
        if context.options.tokenizer is None:
            raise UsageError(
                "the external llama-benchy needs a local tokenizer.json (--tokenizer FILE); "
                "offline it cannot use the server's tokenizer"
            )
        shape = workload.closed_loop
        assert shape is not None
        context.output_dir.mkdir(parents=True, exist_ok=True)
        corpus = load_corpus(context.options.corpus, _corpus_chars(plan))
        result_file = context.output_dir / "llama-benchy.json"
        with tempfile.TemporaryDirectory(prefix="arena-llama-benchy-") as home:
            book_url = "arena-corpus"  # llama-benchy only hashes it to find the cached text
            cache = Path(home) / ".cache" / "llama-benchy" / f"{hashlib.md5(book_url.encode()).hexdigest()}.txt"
            cache.parent.mkdir(parents=True)
            cache.write_text(corpus.text, encoding="utf-8")
            extra = ["--tokenizer", str(context.options.tokenizer), "--book-url", book_url]
            extra += ["--format", "json", "--save-result", str(result_file)]
            if not context.options.check_coherence:
                extra.append("--skip-coherence")
            if context.options.exact_output:
                extra.append("--exact-tg")
            line = command_line(shape, base_url=context.endpoint.base_url, model=context.endpoint.model, extra=extra)
            secret = ["--api-key", context.endpoint.api_key] if context.endpoint.api_key else []
            env = {**os.environ, "HOME": home, "HF_HUB_OFFLINE": "1", "NO_PROXY": "127.0.0.1,localhost"}
            if context.progress:
                context.progress(f"{workload.name}: running {' '.join(line)}")
            with open(context.output_dir / "llama-benchy.log", "w", encoding="utf-8") as log:
                completed = subprocess.run(line + secret, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=24 * 3600)
        if completed.returncode != 0 or not result_file.exists():
            raise UsageError(
                f"llama-benchy exited with status {completed.returncode}; see {context.output_dir / 'llama-benchy.log'}"
            )
        report = json.loads(result_file.read_text(encoding="utf-8"))
        write_json_atomic(context.output_dir / "session.json", {"engine": "external", "command": line, "corpus": corpus.source})
        return result_from_report(report, plan, scale=context.scale, log=context.output_dir / "llama-benchy.log")


def result_from_report(report: dict[str, Any], plan: ClosedLoopPlan, *, scale: float, log: Path | None = None) -> WorkloadResult:
    """The Arena result of a llama-benchy JSON report (which has no request records)."""
    entries = [e for e in report.get("benchmarks", []) if not e.get("is_context_prefill_phase")]
    expected = plan.concurrency * plan.runs * max(1, len(entries))
    ttfts = [v / 1000 for e in entries if e.get("e2e_ttft") for v in e["e2e_ttft"]["values"]]
    decode = [v for e in entries if e.get("tg_req_throughput") for v in e["tg_req_throughput"]["values"]]
    totals = [e["tg_throughput"]["mean"] for e in entries if e.get("tg_throughput")]
    reasons = []
    failures = 0
    if log is not None and log.exists():
        failures = sum(1 for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.startswith(("HTTP ", "Error during run:")))
    if failures:
        reasons.append(f"llama-benchy printed {failures} request errors (it drops failed requests from every metric)")
    if len(ttfts) < expected:
        reasons.append(f"only {len(ttfts)} of {expected} requests produced a first token")
    verdict = verdict_for((), exact_output=False, scale=scale, extra_reasons=reasons)
    return WorkloadResult(
        workload=plan.workload,
        runner=NAME,
        engine="external",
        scale=scale,
        requests=expected,
        failed=max(failures, expected - len(ttfts)),
        tokens_per_second=sum(decode) / len(decode) if decode else None,
        ttft_p50_s=median(ttfts) if ttfts else None,
        metrics={
            "decode_tps_per_user": sum(decode) / len(decode) if decode else None,
            "decode_tps_total": sum(totals) / len(totals) if totals else None,
            "latency_s": report.get("latency_ms", 0) / 1000,
        },
        verdict=verdict,
    )


def _create(engine: str) -> NativeEngine | ExternalEngine:
    return {"native": NativeEngine, "external": ExternalEngine}[engine]()


def workload_command(workload: WorkloadSpec, base_url: str, model: str) -> list[str]:
    assert workload.closed_loop is not None
    return command_line(workload.closed_loop, base_url=base_url, model=model)


SPEC = RunnerSpec(
    name=NAME,
    description="Closed-loop load in llama-benchy 0.4.0's style: runs of c simultaneous requests.",
    loop="closed",
    engines=("native", "external"),
    create=_create,
    check_external=check_external,
    command=workload_command,
)

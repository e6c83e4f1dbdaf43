"""``arena import``: results measured by the reference tools, or published cards, into the store.

Three formats, told apart by their keys: a llama-benchy ``--save-result`` JSON (``benchmarks``),
a ``vllm bench serve`` result JSON (``output_throughput``), and Arena's own ``arena-cards/1``
(the seed cards ship as one: ``arena import --seeds``). Each becomes a run directory like a
measured run's, marked with where it came from, so it is ranked and rendered beside native runs.
"""

from __future__ import annotations

import json
import statistics
import time
from importlib import resources
from pathlib import Path
from typing import Any

from arena_core import __version__
from arena_core.config import CONVERTER
from arena_core.errors import UsageError
from arena_core.integrity import seal
from arena_core.registry import Registry
from arena_core.store import index_run, new_run_dir, store_result
from arena_core.types import Verdict, WorkloadResult

SEEDS = "seed-cards.json"


def seed_cards_path() -> Path:
    return Path(str(resources.files("arena_core") / "data" / SEEDS))


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read it ({exc})") from None
    except ValueError as exc:
        raise UsageError(f"{path}: not JSON ({exc})") from None


def _stats_mean(entry: dict[str, Any], key: str) -> float | None:
    value = entry.get(key)
    return float(value["mean"]) if isinstance(value, dict) and value.get("mean") is not None else None


def from_llama_benchy(data: dict[str, Any], workload: str, source: str) -> WorkloadResult:
    entries = [e for e in data["benchmarks"] if not e.get("is_context_prefill_phase")]
    if not entries:
        raise UsageError(f"{source}: $.benchmarks: no measured (non-prefill) entry")
    per_user = [v for e in entries if (v := _stats_mean(e, "tg_req_throughput")) is not None]
    totals = [v for e in entries if (v := _stats_mean(e, "tg_throughput")) is not None]
    ttfts = [v / 1000 for e in entries for v in ((e.get("e2e_ttft") or {}).get("values") or [])]
    metrics = {
        "decode_tps_per_user": statistics.fmean(per_user) if per_user else None,
        "decode_tps_total": statistics.fmean(totals) if totals else None,
        "ttft_p50_s": statistics.median(ttfts) if ttfts else None,
        "concurrency": float(entries[0].get("concurrency", 1)),
    }
    return WorkloadResult(
        workload=workload, runner="llama-benchy", engine="imported", scale=1.0, requests=len(ttfts), failed=0,
        tokens_per_second=metrics["decode_tps_per_user"], ttft_p50_s=metrics["ttft_p50_s"], metrics=metrics,
        verdict=Verdict(valid=True, labels=(f"imported from llama-benchy {data.get('version', '?')} (failed requests are not recorded in its JSON)",)),
    )


def from_vllm(data: dict[str, Any], workload: str, source: str) -> WorkloadResult:
    failed = int(data.get("failed", 0))
    completed = int(data.get("completed", 0))
    metrics = {
        "output_tps": float(data["output_throughput"]),
        "total_tps": float(data.get("total_token_throughput", 0.0)),
        "request_throughput": float(data.get("request_throughput", 0.0)),
        "ttft_p50_s": data["median_ttft_ms"] / 1000 if data.get("median_ttft_ms") is not None else None,
        "tpot_median_s": data["median_tpot_ms"] / 1000 if data.get("median_tpot_ms") is not None else None,
        "requested_rate": float(data["request_rate"]) if isinstance(data.get("request_rate"), (int, float)) else None,
    }
    reasons = (f"{failed} of {completed + failed} requests failed",) if failed else ()
    return WorkloadResult(
        workload=workload, runner="vllm-bench", engine="imported", scale=1.0, requests=completed + failed, failed=failed,
        tokens_per_second=metrics["output_tps"], ttft_p50_s=metrics["ttft_p50_s"], metrics=metrics,
        verdict=Verdict(valid=not failed, reasons=reasons, labels=("imported from vllm bench serve",)),
    )


def _store(output: Path, *, model: str, hardware: str, backend: str, engine: str, source: str, measured_at: str, results: list[WorkloadResult], registry: Registry, memory_gb: float | None = None) -> str:
    run_id, run_dir = new_run_dir(output)
    profile = registry.hardware.get(hardware)
    commands = {}
    for result in results:
        runner = registry.runners.get(result.runner)
        workload = registry.workloads.get(result.workload)
        if runner is not None and workload is not None and runner.item.command is not None:
            commands[result.workload] = " ".join(runner.item.command(workload.item, "http://localhost:8000", model))
    for result in results:
        store_result(run_dir, result)
    manifest = {
        "run_id": run_id, "arena_version": __version__, "status": "completed", "started_at": measured_at, "finished_at": measured_at,
        "imported_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "source": source, "model": model, "backend": backend, "hardware": hardware,
        "hardware_profile": CONVERTER.unstructure(profile.item) if profile else {}, "hardware_reason": "named at import",
        "engine": "imported", "engine_description": engine, "scale": 1.0, "workloads": [r.workload for r in results], "commands": commands,
        "model_memory": {"gb": memory_gb, "source": source} if memory_gb is not None else None,
    }
    seal(run_dir, manifest)
    index_run(output, manifest)
    return run_id


def _check_names(registry: Registry, source: str, **names: str) -> None:
    for kind, name in names.items():
        if name not in getattr(registry, kind):
            known = ", ".join(registry.names(kind))
            raise UsageError(f"{source}: unknown {kind.rstrip('s')} {name!r} (known: {known})")


def import_cards(path: Path, output: Path, registry: Registry) -> list[str]:
    data = read_json(path)
    run_ids = []
    for index, card in enumerate(data.get("cards", [])):
        where = f"{path}: $.cards[{index}]"
        try:
            _check_names(registry, where, models=card["model"], hardware=card["hardware"], backends=card["backend"])
            results = []
            for name, figures in card["workloads"].items():
                _check_names(registry, f"{where}.workloads", workloads=name)
                if figures is None:
                    continue  # did not complete: shown "—"
                workload = registry.workloads[name].item
                metrics = {k: float(v) for k, v in figures.items()}
                results.append(
                    WorkloadResult(
                        workload=name, runner=workload.runner, engine="imported", scale=1.0, requests=0, failed=0,
                        tokens_per_second=metrics.get("tokens_per_second"), ttft_p50_s=metrics.get("ttft_p50_s"), metrics=metrics,
                        verdict=Verdict(valid=True, labels=(f"imported: {card['source']}",)),
                    )
                )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UsageError(f"{where}: malformed card ({type(exc).__name__}: {exc})") from None
        run_ids.append(
            _store(
                output, model=card["model"], hardware=card["hardware"], backend=card["backend"], engine=card.get("engine", ""),
                source=card["source"], measured_at=card.get("measured_at", ""), results=results, registry=registry, memory_gb=card.get("model_memory_gb"),
            )
        )
    return run_ids


def import_file(path: Path, output: Path, registry: Registry, *, workload: str | None, model: str | None, hardware: str | None, backend: str) -> list[str]:
    """Import ``path``; the run ids it created."""
    data = read_json(path)
    if isinstance(data, dict) and data.get("format") == "arena-cards/1":
        return import_cards(path, output, registry)
    if not isinstance(data, dict) or not ("benchmarks" in data or "output_throughput" in data):
        raise UsageError(f"{path}: neither a llama-benchy result (benchmarks) nor a vllm bench serve result (output_throughput)")
    for flag, value in (("--workload", workload), ("--model", model), ("--hardware", hardware)):
        if not value:
            raise UsageError(f"{flag} is required to import {path.name}: the file does not say which it measured")
    assert workload and model and hardware
    _check_names(registry, "arena import", workloads=workload, models=model, hardware=hardware, backends=backend)
    try:
        result = from_llama_benchy(data, workload, str(path)) if "benchmarks" in data else from_vllm(data, workload, str(path))
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{path}: malformed result ({type(exc).__name__}: {exc})") from None
    tool = "llama-benchy" if "benchmarks" in data else "vllm bench serve"
    measured = str(data.get("timestamp") or data.get("date") or "")[:10]
    return [_store(output, model=model, hardware=hardware, backend=backend, engine=f"{tool} (imported)", source=f"imported from {path.name} ({tool})", measured_at=measured, results=[result], registry=registry)]

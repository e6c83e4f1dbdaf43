"""``arena import``: results measured by the reference tools, or published cards, into the store.

A reference tool's JSON is read by the runner that knows the tool (its
:class:`~arena_core.types.ReportReader`: llama-benchy's ``--save-result`` JSON, ``vllm bench
serve``'s result JSON); Arena's own ``arena-cards/1`` is read here (the seed cards ship as one:
``arena import --seeds``). Each becomes a run directory like a measured run's, marked with
where it came from, so it is ranked and rendered beside native runs.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

from arena_core import __version__
from arena_core.errors import UnknownNameError, UsageError
from arena_core.files import parse_json, unreadable
from arena_core.registry import KINDS, Registry
from arena_core.run.integrity import sealed
from arena_core.run.manifest import Manifest, ModelMemory, write_manifest
from arena_core.run.roofline import KV_BYTES_PER_ELEMENT, KV_CACHE_BYTES, apply_ceiling
from arena_core.run.store import index_run, new_run_dir, store_result
from arena_core.types import (
    NAME_PATTERN,
    SERVER_COUNTS,
    ClosedLoopShape,
    ModelFacts,
    ModelSpec,
    QualityScore,
    ReportReader,
    Verdict,
    WorkloadResult,
    WorkloadSpec,
)

SEEDS = "seed-cards.json"
#: Reference commands of imported runs name a placeholder server: the real one is not known.
PLACEHOLDER_URL = "http://localhost:8000"


def seed_cards_path() -> Path:
    return Path(str(resources.files("arena_core") / "data" / SEEDS))


#: The largest file ``arena import`` reads (a detailed vllm bench serve result is tens of MB).
MAX_IMPORT_BYTES = 512 * 2**20


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is not a finite number")
    return number


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number")


def read_json(path: Path) -> Any:
    """The JSON in ``path``; NaN, Infinity and numbers too large for a float are refused where
    they stand, so no figure of an imported file is one."""
    if problem := unreadable(path, MAX_IMPORT_BYTES):
        raise UsageError(f"{path}: {problem}")
    try:
        return parse_json(path.read_text(encoding="utf-8"), max_bytes=MAX_IMPORT_BYTES, parse_float=_finite, parse_constant=_no_constant)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read it ({exc})") from None
    except ValueError as exc:
        raise UsageError(f"{path}: not JSON ({exc})") from None


def _store(output: Path, results: list[WorkloadResult], registry: Registry, **origin: Any) -> str:
    """Store ``results`` as a run of their own; ``origin`` is what the imported file says about
    itself, as the manifest's fields (model, hardware, backend, source, measured_with,
    started_at, model_memory)."""
    run_id, run_dir = new_run_dir(output)
    profile, model = registry.hardware.get(origin["hardware"]), registry.models.get(origin["model"])
    commands = {}
    facts = origin.get("model_facts") or {}
    described = model.item if model is not None else _described(origin, facts)  # what physics is checked against
    config = origin.get("config") or {}
    kv_bytes = KV_CACHE_BYTES.get(str(config.get("server_settings", {}).get("kv_cache_dtype", "")), KV_BYTES_PER_ELEMENT)
    served = str(facts.get("served_name") or facts.get("hf_model") or origin["model"])  # the id the publisher's server answered to
    for result in results:
        runner, workload = registry.runners.get(result.runner), registry.workloads.get(result.workload)
        if runner is not None and workload is not None and (line := runner.item.command_for(workload.item, PLACEHOLDER_URL, served)):
            commands[result.workload] = line
        if described is not None and profile is not None:  # an imported figure meets physics like a measured one
            ran = _as_it_ran(workload.item, config.get("measured_shapes", {}).get(result.workload)) if workload else None
            result = apply_ceiling(result, described, profile.item, ran, kv_bytes)
        store_result(run_dir, result)
    imported_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    manifest = Manifest(
        run_id=run_id,
        arena_version=__version__,
        status="completed",
        finished_at=origin["started_at"],
        imported_at=imported_at,
        hardware_profile=profile.item if profile else None,
        hardware_reason="named at import",
        instrument="imported",
        workloads=tuple(r.workload for r in results),
        commands=commands,
        **origin,
    )
    write_manifest(run_dir, sealed(run_dir, manifest))
    index_run(output, manifest)
    return run_id


def _as_it_ran(workload: WorkloadSpec, measured: Mapping[str, int] | None) -> WorkloadSpec:
    """``workload`` in the shape the file says its run had (checked at import), so the ceiling is
    the one of the batch and context that really decoded (a run at one user is held to one user's)."""
    return attrs.evolve(workload, shape=attrs.evolve(workload.shape, **measured)) if measured else workload


def _described(origin: Mapping[str, Any], facts: Mapping[str, Any]) -> ModelSpec | None:
    """A model outside the catalog as its card describes it, for the physical ceiling; None when
    the card does not say enough (without its active parameters a mixture of experts would be held
    to a ceiling several times too low)."""
    stated = ModelFacts.of(facts)
    return stated.spec(origin["model"], str(origin.get("model_title") or origin["model"])) if stated.params_active_b is not None else None


def _check_names(registry: Registry, source: str, **names: str) -> None:
    for kind, name in names.items():
        if name not in registry.by_kind[kind]:
            raise UnknownNameError(KINDS[kind].singular, name, registry.names(kind), source=source)


def _figure(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UsageError(f"{where}: expected a finite number, got {type(value).__name__} {str(value)[:40]!r}")
    return float(value)


def _card(card: Any, where: str, registry: Registry) -> tuple[list[WorkloadResult], dict[str, Any]]:
    """One card of an ``arena-cards/1`` file as results and the manifest fields of its origin. A
    model outside the catalog is accepted when the card names its title."""
    if not isinstance(card, dict) or not isinstance(card.get("workloads"), dict):
        raise UsageError(f"{where}: expected a card (an object with its workloads)")
    for key in ("model", "hardware", "backend"):  # names: text of the registered names' form
        if not isinstance(card.get(key), str) or not re.fullmatch(NAME_PATTERN, card[key]) or len(card[key]) > MAX_TEXT:
            raise UsageError(f"{where}.{key}: expected a name (lowercase words joined by dashes, at most {MAX_TEXT} characters)")
    card = {**card, "source": _text(card.get("source"), f"{where}.source")}
    for key in ("engine", "measured_at"):  # optional texts: a type and a length, or absent
        if card.get(key) is not None:
            _text(card[key], f"{where}.{key}")
    if card.get("model_title") is None or card["model"] in registry.models:
        _check_names(registry, where, models=card["model"])
    _check_names(registry, where, hardware=card["hardware"], backends=card["backend"])
    results = []
    for name, figures in card["workloads"].items():
        _check_names(registry, f"{where}.workloads", workloads=name)
        if figures is None:
            continue  # did not complete: shown "—"
        if not isinstance(figures, dict):
            raise UsageError(f"{where}.workloads.{name}: expected the workload's figures (an object) or null")
        metrics = {key: _figure(value, f"{where}.workloads.{name}.{key}") for key, value in figures.items()}
        result = WorkloadResult(
            workload=name,
            runner=registry.workloads[name].item.runner,
            instrument="imported",
            requests=0,
            failed=0,
            tokens_per_second=metrics.get("tokens_per_second"),
            ttft_p50_s=metrics.get("ttft_p50_s"),
            metrics=metrics,
            verdict=Verdict(valid=True, labels=(f"imported: {card['source']}",)),
        )
        results.append(result)
    memory = card.get("model_memory_gb")
    origin = {"model": card["model"], "hardware": card["hardware"], "backend": card["backend"], "source": card["source"]}
    origin |= {"measured_with": card.get("engine", ""), "started_at": card.get("measured_at", "")}
    origin["model_memory"] = ModelMemory(gb=_figure(memory, f"{where}.model_memory_gb"), source=card["source"]) if memory is not None else None
    origin |= _model_part(card, where)
    return results, origin


#: Longest text an imported card may give for its model's title, a fact or a quality source.
MAX_TEXT = 200


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= MAX_TEXT:
        raise UsageError(f"{where}: expected a text of 1 to {MAX_TEXT} characters")
    return value


def _model_part(card: Mapping[str, Any], where: str) -> dict[str, Any]:
    """What a card says of its model: title, quality scores with provenance, facts (texts and
    finite numbers only), the publisher's own scores (0-100)."""
    part: dict[str, Any] = {}
    if (title := card.get("model_title")) is not None:
        part["model_title"] = _text(title, f"{where}.model_title")
    quality = []
    for index, entry in enumerate(card.get("quality") or []):
        at = f"{where}.quality[{index}]"
        value = entry.get("value")
        if value is not None and not 0 <= _figure(value, f"{at}.value") <= 100:
            raise UsageError(f"{at}.value: a quality score is 0 to 100, not {value}")
        quality.append(QualityScore(benchmark=_text(entry["benchmark"], f"{at}.benchmark"), value=value, source=_text(entry["source"], f"{at}.source")))
    part["quality"] = tuple(quality)
    facts: dict[str, Any] = {}
    for key, value in (card.get("model_facts") or {}).items():
        if value is not None:
            facts[_text(key, f"{where}.model_facts")] = (
                _text(value, f"{where}.model_facts.{key}") if isinstance(value, str) else _figure(value, f"{where}.model_facts.{key}")
            )
    published = {}
    for key, value in (card.get("published_scores") or {}).items():
        if not 0 <= _figure(value, f"{where}.published_scores.{key}") <= 100:
            raise UsageError(f"{where}.published_scores.{key}: a score is 0 to 100, not {value}")
        published[_text(key, f"{where}.published_scores")] = float(value)
    if published:
        facts["published_scores"] = published
    part["model_facts"] = facts
    return part


def import_cards(path: Path, output: Path, registry: Registry) -> list[str]:
    """Every card of an ``arena-cards/1`` file, each a run; all are checked before any is stored."""
    data = read_json(path)
    cards = data.get("cards", [])
    if not isinstance(cards, list):
        raise UsageError(f"{path}: $.cards: expected a list of cards")
    shapes = _measured_shapes(data.get("measured_shapes", {}), f"{path}: $.measured_shapes", registry)
    server = _server_settings(data.get("server_settings", {}), f"{path}: $.server_settings")
    checked = []
    for index, card in enumerate(cards):
        where = f"{path}: $.cards[{index}]"
        try:
            results, origin = _card(card, where, registry)
            # a card's own settings (its server's budget, say) over the file's, and its own measured shapes field by field
            settings = server | _server_settings(card.get("server_settings", {}), f"{where}.server_settings")
            own = _measured_shapes(card.get("measured_shapes", {}), f"{where}.measured_shapes", registry)
            ran = _measured_shapes(shapes | {name: shapes.get(name, {}) | fields for name, fields in own.items()}, f"{where}.measured_shapes", registry)
        except UsageError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UsageError(f"{where}: malformed card ({type(exc).__name__}: {exc})") from None
        checked.append((results, origin, ({"measured_shapes": ran} if ran else {}) | ({"server_settings": settings} if settings else {})))
    return [_store(output, results, registry, config=config, **origin) for results, origin, config in checked]


def _server_settings(value: Any, where: str) -> dict[str, Any]:
    """What a cards file (or one card) says of the servers its runs measured, which the
    prediction reads: the KV cache's type (one of :data:`KV_CACHE_BYTES`), the counts of
    :data:`~arena_core.types.SERVER_COUNTS` (a step's token budget, the slots, the draft tokens of
    speculative decoding), whether its low-precision GEMMs computed in 16 bits and whether it kept
    a conversation's turns in its prefix cache."""
    if not isinstance(value, dict):
        raise UsageError(f"{where}: expected a mapping of settings")
    for key, setting in value.items():
        if key == "kv_cache_dtype":
            if not isinstance(setting, str) or setting not in KV_CACHE_BYTES:
                raise UsageError(f"{where}.kv_cache_dtype: expected one of {', '.join(KV_CACHE_BYTES)}")
        elif key in ("sixteen_bit_compute", "prefix_caching"):
            if not isinstance(setting, bool):
                raise UsageError(f"{where}.{key}: expected true or false")
        elif key in SERVER_COUNTS:
            if problem := SERVER_COUNTS[key].problem(setting):
                raise UsageError(f"{where}.{key}: {problem[:MAX_TEXT]}")  # the value it got, cut short
        else:
            raise UsageError(f"{where}.{str(key)[:40]}: not a known setting (kv_cache_dtype, {', '.join(SERVER_COUNTS)}, sixteen_bit_compute, prefix_caching)")
    return dict(value)


#: The fields of a closed-loop shape a card may say it measured differently.
MEASURED_SHAPE_FIELDS = ("prompt_tokens", "generated_tokens", "depth", "turns", "concurrency")


def _measured_shapes(value: Any, where: str, registry: Registry) -> dict[str, dict[str, int]]:
    """``{workload: {field: value}}``: where the publisher's runs measured another shape than
    Arena's workload of that name (the seed's multi-turn ran four tokens of history, not a
    conversation). Checked as the shape itself checks them; prediction simulates what ran."""
    if not isinstance(value, dict):
        raise UsageError(f"{where}: expected a mapping of workload names to shape fields")
    found = {}
    for name, fields in value.items():
        _check_names(registry, where, workloads=name)
        shape = registry.workloads[name].item.shape
        if not isinstance(shape, ClosedLoopShape) or not isinstance(fields, dict) or not set(fields) <= set(MEASURED_SHAPE_FIELDS):
            raise UsageError(f"{where}.{name}: expected a closed-loop workload and some of {', '.join(MEASURED_SHAPE_FIELDS)}")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in fields.values()):
            raise UsageError(f"{where}.{name}: expected whole numbers")
        try:
            attrs.evolve(shape, **fields)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{where}.{name}: {exc}") from None
        found[name] = dict(fields)
    return found


def _reader_for(data: Mapping[str, Any], registry: Registry) -> ReportReader | None:
    """The reader of the first runner that recognises ``data`` as its tool's report."""
    for registration in registry.registrations("runners"):
        reader = registration.item.report
        if reader is not None and reader.recognises(data):
            return reader
    return None


def import_file(path: Path, output: Path, registry: Registry, *, workload: str | None, model: str | None, hardware: str | None, backend: str) -> list[str]:
    """Import ``path``; the run ids it created."""
    data = read_json(path)
    if isinstance(data, dict) and data.get("format") == "arena-cards/1":
        return import_cards(path, output, registry)
    reader = _reader_for(data, registry) if isinstance(data, dict) else None
    if reader is None:
        tools = [r.item.report.tool for r in registry.registrations("runners") if r.item.report is not None]
        raise UsageError(f"{path}: not a result of a known tool ({', '.join(tools) or 'no runner reads reports'}) nor an arena-cards/1 file")
    for flag, value in (("--workload", workload), ("--model", model), ("--hardware", hardware)):
        if not value:
            raise UsageError(f"{flag} is required to import {path.name}: the file does not say which it measured")
    assert workload and model and hardware
    _check_names(registry, "arena import", workloads=workload, hardware=hardware, backends=backend)
    if model not in registry.models and (
        not re.fullmatch(NAME_PATTERN, model) or len(model) > MAX_TEXT
    ):  # a model outside the catalog, as an attached run names it
        raise UsageError(f"--model: {model[:80]!r} is neither a catalog model (arena list models) nor a name (lowercase words joined by dashes)")
    try:
        result = reader.read(data, workload, None)
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{path}: malformed result ({type(exc).__name__}: {exc})") from None
    except UsageError as exc:
        raise UsageError(f"{path}: {exc}") from None
    label = f"imported from {reader.tool}" + (f" ({reader.caveat})" if reader.caveat else "")
    result = attrs.evolve(result, instrument="imported", verdict=attrs.evolve(result.verdict, labels=(*result.verdict.labels, label)))
    measured = str(data.get("timestamp") or data.get("date") or "")[:10]
    origin = {"model": model, "hardware": hardware, "backend": backend, "source": f"imported from {path.name} ({reader.tool})"}
    if model not in registry.models:
        origin["model_title"] = model
    return [_store(output, [result], registry, **origin, measured_with=f"{reader.tool} (imported)", started_at=measured)]

"""Model cards from stored runs, and their scores.

A card is built from a run directory alone (manifest plus each workload's ``result.json``) and
the registry (the model's quality scores, the suite's workload names), so stored runs can be
rescored and re-rendered by a later version.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arena_core.converter import CONVERTER
from arena_core.errors import UsageError
from arena_core.hooks import ArenaHooks
from arena_core.manifest import MANIFEST, read_manifest
from arena_core.registry import Registry
from arena_core.store import find_run, list_runs, load_result
from arena_core.types import CardWorkload, ModelCard, Score, ScorerSpec, WorkloadResult


def card_line(result: WorkloadResult, command: str | None) -> CardWorkload:
    metrics = result.metrics
    return CardWorkload(
        name=result.workload,
        tokens_per_second=result.tokens_per_second,
        ttft_p50_s=result.ttft_p50_s,
        valid=result.verdict.valid,
        scale=result.scale,
        custom=result.custom,
        tokens_per_second_low=metrics.get("decode_tps_per_user_ci_low"),
        tokens_per_second_high=metrics.get("decode_tps_per_user_ci_high"),
        ttft_p50_low_s=metrics.get("ttft_p50_ci_low_s"),
        ttft_p50_high_s=metrics.get("ttft_p50_ci_high_s"),
        reasons=result.verdict.reasons,
        labels=result.verdict.labels,
        command=command,
        metrics=dict(metrics),
    )


def card_from_run(run_dir: Path, registry: Registry) -> ModelCard:
    """The card of the run stored in ``run_dir``; a corrupt file is a one-line error naming it."""
    manifest = read_manifest(run_dir)
    lines = [card_line(result, manifest.commands.get(name)) for name in manifest.workloads if (result := load_result(run_dir, name)) is not None]
    model = registry.models.get(manifest.model)
    profile = manifest.hardware_profile
    memory = manifest.model_memory
    return ModelCard(
        run_id=manifest.run_id,
        model=manifest.model,
        model_title=model.item.title if model else manifest.model,
        hardware=manifest.hardware,
        hardware_title=profile.title if profile else manifest.hardware,
        backend=manifest.backend,
        engine=manifest.engine_description or manifest.engine,
        measured_at=manifest.measured_at,
        source=manifest.source,
        expected=tuple(registry.names("workloads")),
        workloads=tuple(lines),
        quality=model.item.quality if model else (),
        model_memory_gb=memory.gb if memory else None,
        model_memory_source=memory.source if memory else None,
        facts={"status": manifest.status, "backend_facts": dict(manifest.backend_facts), "hardware_reason": manifest.hardware_reason},
    )


def load_cards(output: Path, registry: Registry) -> tuple[list[ModelCard], list[str]]:
    """Every stored run with at least one result, and a line for each run that could not be read."""
    cards, problems = [], []
    for row in list_runs(output):
        run_dir = output / row["run_id"]
        if not (run_dir / MANIFEST).is_file():
            problems.append(f"{run_dir}: listed in the index but gone")
            continue
        try:
            card = card_from_run(run_dir, registry)
        except UsageError as exc:
            problems.append(str(exc))
            continue
        if card.workloads:
            cards.append(card)
    return cards, problems


def load_card(output: Path, run_id: str, registry: Registry) -> ModelCard:
    return card_from_run(find_run(output, run_id, "arena card"), registry)


def default_scorer(registry: Registry) -> ScorerSpec:
    """The scorer cards and the leaderboard rank by: the first registered as ``default``, else
    the first registered."""
    specs = [registration.item for registration in registry.registrations("scorers")]
    if not specs:
        raise UsageError("no scorer is registered (the arena_scoring plugin is disabled?)")
    return next((spec for spec in specs if spec.default), specs[0])


def scores_for(card: ModelCard, hooks: ArenaHooks, custom_profiles: Mapping[str, Any] | None = None) -> dict[str, Score]:
    """The card's score under every profile of the default scorer (built-in and from the config)."""
    spec = default_scorer(hooks.registry)
    names = list(dict.fromkeys([*spec.profiles, *(custom_profiles or {})]))
    return {name: spec.create(name, custom_profiles or {}).score(card) for name in names}


def card_json(card: ModelCard, scores: Mapping[str, Score], findings: list[str]) -> dict[str, Any]:

    return {
        "format": "arena-card/1",
        "card": CONVERTER.unstructure(card),
        "scores": {k: CONVERTER.unstructure(v) for k, v in scores.items()},
        "findings": findings,
    }

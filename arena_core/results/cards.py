"""Model cards from stored runs, and their scores.

A card is built from a run directory alone (manifest plus each workload's ``result.json``) and
the registry (the model's quality scores, the suite's workload names), so stored runs can be
rescored and re-rendered by a later version.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs

from arena_core import bounds
from arena_core.errors import UsageError
from arena_core.hooks import ArenaHooks
from arena_core.loadgen.goodput import NAMED_SLOS, Slo, goodput, parse_slo
from arena_core.loadgen.records_io import read_records
from arena_core.registry import Registry
from arena_core.run.capacity import SearchSettings
from arena_core.run.identity import UNNAMED
from arena_core.run.integrity import signed_by
from arena_core.run.manifest import MANIFEST, Manifest, read_manifest
from arena_core.run.roofline import KV_CACHE_BYTES, bytes_per_param
from arena_core.run.session import default_workloads
from arena_core.run.store import find_run, list_runs, load_result, workload_dir
from arena_core.types import (
    SERVER_COUNTS,
    AgentShape,
    CardLayout,
    CardSlo,
    CardWorkload,
    ClosedLoopShape,
    HardwareProfile,
    HardwareRoofs,
    ModelCard,
    ModelFacts,
    ModelSpec,
    Score,
    ScorerSpec,
    ServerSettings,
    WorkloadLegend,
    WorkloadResult,
    WorkloadSpec,
)


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
        metrics={"requests": float(result.requests), "failed": float(result.failed), **metrics},  # an imported file's own counts win
    )


def suite(registry: Registry) -> tuple[str, ...]:
    """The workloads a card expects: those the default scorer scores, else every standard one."""
    specs = [r.item for r in registry.registrations("scorers")]
    declared = next((s.workloads for s in specs if s.default), specs[0].workloads if specs else ())
    return declared or default_workloads(registry)


def with_goodput(line: CardWorkload, records: Path, slo: Slo) -> CardWorkload:
    """The line with its SLO figures recomputed from the stored request records (when kept)."""
    if not records.is_file():
        return line
    try:
        found = goodput(read_records(records), slo)
    except (OSError, ValueError, UsageError):
        return line  # a damaged records file: the line keeps the figures measured at the time
    return attrs.evolve(line, metrics={**line.metrics, **found})


def _recorded_objective(manifest: Manifest) -> tuple[str, Slo] | None:
    """The SLO a run was judged by when it recorded one (a capacity search does), as it was given
    ("interactive", "ttft=2s,tps=10") and parsed."""
    recorded = (manifest.config.get("slo") or {}).get("objective") if isinstance(manifest.config, Mapping) else None
    try:
        return (recorded, parse_slo(recorded, "the run's recorded SLO")) if isinstance(recorded, str) else None
    except UsageError:
        return None


def card_from_run(run_dir: Path, registry: Registry, slo: Slo | None = None, *, slo_figures: bool = True) -> ModelCard:
    """The card of the run stored in ``run_dir``; a corrupt file is a one-line error naming it.
    With ``slo_figures``, goodput and SLO attainment are recomputed from the stored records under
    ``slo`` (default: the run's own, else interactive); without, no records file is read, except
    for a capacity search, whose probes are judged by them."""
    manifest = read_manifest(run_dir)
    recorded = _recorded_objective(manifest) if slo is None else None
    objective = slo or (recorded[1] if recorded else NAMED_SLOS["interactive"])
    lines = [card_line(result, manifest.commands.get(name)) for name in manifest.workloads if (result := load_result(run_dir, name)) is not None]
    if slo_figures or SearchSettings.recorded(manifest.config):
        lines = [with_goodput(line, workload_dir(run_dir, line.name) / "records.jsonl", objective) for line in lines]
    model = registry.models.get(manifest.model)
    profile = manifest.hardware_profile
    facts = _model_facts(manifest.model_facts, model.item if model else None)
    memory_gb, memory_source = (manifest.model_memory.gb, manifest.model_memory.source) if manifest.model_memory else estimated_memory(facts)
    expected = suite(registry)
    return ModelCard(
        layout=card_layout(registry, manifest.backend),
        run_id=manifest.run_id,
        model=manifest.model,
        model_title=model.item.title if model else (manifest.model_title or _untitled(manifest.model)),  # the catalog's, as on a measured run
        hardware=manifest.hardware,
        hardware_title=profile.title if profile else manifest.hardware,
        backend=manifest.backend,
        measured_with=manifest.measured_with or manifest.instrument,
        measured_at=manifest.measured_at,
        source=manifest.source,
        signed_by=signed_by(run_dir),
        expected=expected,
        workloads=tuple(lines),
        quality=manifest.quality or (model.item.quality if model else ()),
        measured_quality=manifest.measured_quality,
        quality_under_load=manifest.quality_under_load,
        quality_load=manifest.quality_load,
        model_memory_gb=memory_gb,
        model_memory_source=memory_source,
        model_memory_estimated=manifest.model_memory is None and memory_gb is not None,
        budget_s=manifest.budget_s,
        budget_changes=manifest.budget_changes,
        telemetry_notes=manifest.telemetry.notes if manifest.telemetry else (),
        expected_s=manifest.expected_s,
        took_s=_took(manifest),
        status=manifest.status,
        server=manifest.base_url or "",
        backend_facts=dict(manifest.backend_facts),
        hardware_reason=manifest.hardware_reason or "",
        hardware_memory=_memory(profile),
        hardware_roofs=HardwareRoofs(memory_bandwidth_gbs=profile.memory_bandwidth_gbs, dense_tflops=dict(profile.dense_tflops)) if profile else None,
        model_facts=facts,
        measured_shapes=_measured_shapes(manifest.config.get("measured_shapes")),
        server_settings=_server_settings(manifest, registry, lines),
        slo=CardSlo(objective=objective.describe(), name=recorded[0] if recorded else "", target=objective.target, ttft_s=objective.ttft_s),
        legend={
            name: _legend(registry.workloads[name].item)
            for name in (*(expected if set(expected) & set(manifest.workloads) else ()), *manifest.workloads)
            if name in registry.workloads
        },
    )


def card_layout(registry: Registry, backend: str = "") -> CardLayout:
    """Which workloads a card's headline, totals row and findings read, from the roles and labels
    the workload plugins declared, and which server facts it shows, as ``backend`` declares them."""
    workloads = [r.item for r in registry.workloads.values()]
    short, long = registry.with_role("short-context"), registry.with_role("long-context")
    compared = [w for w in workloads if "compared" in w.roles]
    return CardLayout(
        headline=registry.with_role("headline"),
        totals=tuple((w.total_label, w.name) for w in sorted((w for w in workloads if w.total_column), key=lambda w: w.total_column)),
        prefill_wall=(short, long) if short and long else None,
        compared=tuple(w.name for w in sorted(compared, key=lambda w: w.loop != "open")),  # open loop first
        backend_facts=registry.backends[backend].item.card_facts if backend in registry.backends else (),
    )


def _untitled(name: str) -> str:
    """The title of a run stored without one: a run from before Arena named served models says so."""
    return "an unnamed served model (stored before Arena named models)" if name == UNNAMED else name


def _model_facts(recorded: Mapping[str, Any], model: ModelSpec | None) -> ModelFacts:
    """A run's model facts: what its manifest recorded (an import's card, what the server said),
    with the catalog's Hugging Face id and precision where the manifest has none. Where the
    catalog's precision differs from the recorded one (the seed labels its Ministral 3 runs BF16,
    which their decode speed rules out), the catalog's is shown, as the title and the prediction
    use it, beside what the source said; a weights estimate reads the catalog's."""
    facts = ModelFacts.of(recorded) if recorded else ModelFacts()
    if model is None:
        return facts
    precision = facts.precision or model.precision
    if bytes_per_param(precision) != bytes_per_param(model.precision):
        precision = f"{model.precision.upper()} (Arena's catalog; the source says {facts.precision})"
    return attrs.evolve(facts, hf_model=facts.hf_model or model.hf_id, precision=precision)


def _took(manifest: Manifest) -> float | None:
    """Seconds from a measured run's start to its end (an import's times say nothing of it)."""
    if manifest.imported_at or not manifest.finished_at:
        return None
    try:
        return (datetime.fromisoformat(manifest.finished_at) - datetime.fromisoformat(manifest.started_at)).total_seconds()
    except (ValueError, TypeError):  # a manifest edited by hand (a time without its zone beside one with): no time, rather than a wrong one
        return None


def estimated_memory(facts: ModelFacts) -> tuple[float | None, str | None]:
    """A model's memory where the run states none: the size of its weights (the weights file's
    where the server named one, else parameters × bytes per weight of its precision), said to
    be an estimate -- KV cache and activations come on top of it."""
    if facts.file_gb:
        return facts.file_gb, f"estimated: the weights file's size ({facts.file_gb:g} GB; KV cache not included)"
    precision = facts.quantisation or facts.precision
    per_weight = bytes_per_param(precision)  # the roofline's one table
    if facts.params_total_b is None or per_weight is None:
        return None, None
    gb = round(facts.params_total_b * per_weight, 1)
    shown = precision.split()[0]
    return gb, f"estimated: weight size, {facts.params_total_b:g}B parameters × {per_weight:g} bytes ({shown}; KV cache not included)"


def _measured_shapes(stated: Any) -> dict[str, dict[str, int]]:
    """What a manifest says its workloads ran as, where it is of the right shape (checked at import;
    a manifest edited since is outside data): workload name -> shape fields and whole numbers."""
    if not isinstance(stated, Mapping):
        return {}
    return {
        name: dict(fields)
        for name, fields in stated.items()
        if isinstance(name, str) and isinstance(fields, Mapping) and all(isinstance(k, str) and type(v) is int for k, v in fields.items())
    }


def _draft_tokens(lines: Sequence[CardWorkload], registry: Registry) -> int | None:
    """The draft tokens a step of speculative decoding, from the server's own counters over the
    run's workloads (draft tokens over drafts: an MTP or draft-model proposer proposes that
    many each time; an n-gram proposer that finds no match proposes fewer, so this is the least
    it ran); None where it proposed none, or where a page's figures are no count Arena can
    believe (each workload's pair both present and in :data:`~arena_core.bounds.DRAFTED`: no NaN, no infinity)."""
    counters = next(
        (
            (d.grown(d.spec_decode_drafts), d.grown(d.spec_decode_draft_tokens))
            for d in registry.metrics_dialects()
            if d.spec_decode_drafts and any(d.grown(d.spec_decode_drafts) in line.metrics for line in lines)
        ),
        None,
    )
    if counters is None:  # no registered engine's speculative-decoding counters in its telemetry
        return None
    pairs = [tuple(line.metrics.get(name) for name in counters) for line in lines]
    counted = [pair for pair in pairs if not any(bounds.DRAFTED.problem(v) for v in pair)]
    drafts, tokens = sum(pair[0] for pair in counted), sum(pair[1] for pair in counted)
    if not (drafts >= 1 and tokens >= drafts):
        return None
    found = round(tokens / drafts)
    return None if SERVER_COUNTS["speculative_tokens"].problem(found) else found


def _server_settings(manifest: Manifest, registry: Registry, lines: Sequence[CardWorkload] = ()) -> ServerSettings:
    """The server settings a run's prediction simulates, the one place they are read: an imported
    cards file's (its KV cache type, else the one the backend recorded; a step's token budget, the
    slots, speculative decoding's draft tokens, a 16-bit compute path and its prefix cache where
    it says them), else the prefix cache and slots the server
    ran with: those of a server Arena started, where its backend records them (the fact its
    ``slots_fact`` names), or those an attached server reported (``slots``, from what it answers);
    and speculative decoding where the
    server's own counters say it drafted tokens during the run's ``lines``, started or attached."""
    stated = manifest.config.get("server_settings") or {}
    if not isinstance(stated, Mapping):  # a manifest is outside data too: a setting of the wrong shape states nothing
        stated = {}
    kv = stated.get("kv_cache_dtype") if "kv_cache_dtype" in stated else manifest.backend_facts.get("kv_cache_dtype")
    cached = stated.get("prefix_caching") if "prefix_caching" in stated else manifest.backend_facts.get("prefix_caching")
    counts = {key: value for key, bound in SERVER_COUNTS.items() if not bound.problem(value := stated.get(key))}
    backend = registry.backends.get(manifest.backend)
    fact = ""
    if backend is not None and backend.item.slots_fact:  # a server Arena started: its own flag
        fact = backend.item.slots_fact
    elif backend is not None and backend.item.scheduling is None:  # one it attached to: what the server reported
        fact = "slots"
    if "slots" not in counts and fact and not SERVER_COUNTS["slots"].problem(ran := manifest.backend_facts.get(fact)):
        counts["slots"] = ran
    if "speculative_tokens" not in counts and (drafted := _draft_tokens(lines, registry)):
        counts["speculative_tokens"] = drafted
    return ServerSettings(
        kv_cache_dtype=kv if isinstance(kv, str) and kv in KV_CACHE_BYTES else "",  # a type Arena knows, or none
        sixteen_bit_compute=stated.get("sixteen_bit_compute") is True,  # said plainly, or not said
        prefix_caching=cached if isinstance(cached, bool) else None,
        **counts,
    )


def _legend(workload: WorkloadSpec) -> WorkloadLegend:
    """A workload as a card explains it: title, what it measures, its parameters (standard size)."""
    shape = workload.shape
    if isinstance(shape, ClosedLoopShape):
        parameters = f"{shape.prompt_tokens} in / {shape.generated_tokens} out, c={shape.concurrency}, {shape.runs} runs"
        parameters += (f", depth {shape.depth}" if shape.depth else "") + (f", {shape.turns} turns" if shape.turns > 1 else "")
    elif isinstance(shape, AgentShape):
        parameters = (
            f"{shape.agents} agents, up to {shape.turns} turns, shared prefix {shape.shared_prefix_tokens}, own context {shape.session_context_tokens},"
            f" tool outputs {shape.tool_output_tokens[0]}–{shape.tool_output_tokens[1]} after {shape.tool_delay_s[0]:g}–{shape.tool_delay_s[1]:g} s,"
            f" answers {shape.answer_tokens}, context cap {shape.context_cap_tokens}"
        )
    else:
        tokens = f"{shape.input_tokens} in / {shape.output_tokens} out" if shape.dataset == "random" else "natural lengths"
        parameters = f"{shape.dataset} ({tokens}), {shape.num_prompts} prompts at {shape.request_rate:g} req/s, burstiness {shape.burstiness:g}"
        parameters += f", at most {shape.max_concurrency} in flight" if shape.max_concurrency else ""
    return WorkloadLegend(title=workload.title, description=workload.description, parameters=f"{parameters}, seed {workload.seed}")


def _memory(profile: HardwareProfile | None) -> str | None:
    if profile is None or profile.memory_gb is None:
        return None
    return f"{profile.memory_gb:g} GB" + (" unified" if profile.unified_memory else "")


def load_cards(output: Path, registry: Registry, slo: Slo | None = None, *, slo_figures: bool = False) -> tuple[list[ModelCard], list[str]]:
    """Every stored run with at least one result (a workload's, or quality measured), and a line
    for each run that could not be read.
    SLO figures (every records file read again) only when asked: a leaderboard needs none."""
    cards, problems = [], []
    for row in list_runs(output):
        run_dir = output / row["run_id"]
        if not (run_dir / MANIFEST).is_file():
            problems.append(f"{run_dir}: listed in the index but gone")
            continue
        try:
            card = card_from_run(run_dir, registry, slo, slo_figures=slo_figures)
        except UsageError as exc:
            problems.append(str(exc))
            continue
        if card.workloads or card.measured_quality:
            cards.append(card)
    return cards, problems


def load_card(output: Path, run_id: str, registry: Registry, slo: Slo | None = None) -> ModelCard:
    return card_from_run(find_run(output, run_id, "arena card"), registry, slo)


def scorer_specs(registry: Registry) -> list[ScorerSpec]:
    """Every registered scorer, the one cards, leaderboard and site rank by first: the first
    registered as ``default``, else the first registered."""
    specs = [registration.item for registration in registry.registrations("scorers")]
    if not specs:
        raise UsageError("no scorer is registered (the arena_scoring plugin is disabled?)")
    first = next((spec for spec in specs if spec.default), specs[0])
    return [first, *(spec for spec in specs if spec is not first)]


def profiles_of(spec: ScorerSpec, custom_profiles: Mapping[str, Any] | None) -> list[str]:
    """A scorer's profiles: its own, and the config file's where they are this scorer's."""
    return list(dict.fromkeys([*spec.profiles, *((custom_profiles or {}) if spec.custom_profiles else ())]))


def score_cohort(spec: ScorerSpec, profile: str, cards: Sequence[ModelCard], custom_profiles: Mapping[str, Any] | None = None) -> dict[str, Score]:
    """Every card's score under one profile, by run id; a relative scorer ranks ``cards`` as one cohort."""
    scorer = spec.create(profile, (custom_profiles or {}) if spec.custom_profiles else {})
    if spec.relative:
        return scorer.score_cohort(cards)
    return {card.run_id: scorer.score(card) for card in cards}


def cohort_of(card: ModelCard, cards: Sequence[ModelCard]) -> list[ModelCard]:
    """The runs ``card`` is scored among outside a leaderboard: itself and the standard-suite runs
    (full size, standard shapes) on the same hardware."""
    return [card, *(c for c in cards if c.run_id != card.run_id and c.hardware == card.hardware and c.scale == 1 and not c.custom)]


def scores_for(card: ModelCard, hooks: ArenaHooks, custom_profiles: Mapping[str, Any] | None = None, cards: Sequence[ModelCard] = ()) -> dict[str, Score]:
    """The card's scores: each profile of the default scorer by its name, then every other
    scorer's profiles as ``"<profile> (<version>)"``; relative scorers score it in :func:`cohort_of`."""
    cohort = cohort_of(card, cards)
    scores: dict[str, Score] = {}
    for index, spec in enumerate(scorer_specs(hooks.registry)):
        for profile in profiles_of(spec, custom_profiles):
            score = score_cohort(spec, profile, cohort if spec.relative else [card], custom_profiles)[card.run_id]
            scores[profile if index == 0 else f"{profile} ({score.version})"] = score
    return scores


def scores_for_all(cards: Sequence[ModelCard], hooks: ArenaHooks, custom_profiles: Mapping[str, Any] | None = None) -> dict[str, dict[str, Score]]:
    """:func:`scores_for` of every card, each shared cohort scored once: the standard-suite runs of
    one hardware are one cohort; a scaled or custom run is scored in its own (itself and them)."""
    found: dict[str, dict[str, Score]] = {card.run_id: {} for card in cards}
    for index, spec in enumerate(scorer_specs(hooks.registry)):
        for profile in profiles_of(spec, custom_profiles):
            scores: dict[str, Score] = {}
            if spec.relative:
                for hardware in {card.hardware for card in cards}:
                    standard = [c for c in cards if c.hardware == hardware and c.scale == 1 and not c.custom]
                    scores |= score_cohort(spec, profile, standard, custom_profiles)
                    for other in (c for c in cards if c.hardware == hardware and c.run_id not in scores):
                        scores[other.run_id] = score_cohort(spec, profile, cohort_of(other, standard), custom_profiles)[other.run_id]
            else:
                scores = score_cohort(spec, profile, cards, custom_profiles)
            for run_id, score in scores.items():
                found[run_id][profile if index == 0 else f"{profile} ({score.version})"] = score
    return found

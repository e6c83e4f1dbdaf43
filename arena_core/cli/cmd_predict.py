"""``arena predict``: what each workload will do for a model on a machine, before anyone downloads
it, each figure with an interval: the default predictor's answer (``arena list predictors``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import click

from arena_core import bounds
from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.cli.params import OUTPUT, Within, renderer_named, results_dir
from arena_core.config import ArenaConfig, apply_override, check_config
from arena_core.errors import UsageError
from arena_core.hooks import ArenaHooks
from arena_core.hookspecs import hookimpl
from arena_core.loadgen.goodput import SEED_TTFT_P95_LIMITS_S, Slo, parse_slo
from arena_core.loadgen.plausible import TEMPLATE_TOKENS
from arena_core.registry import Registry
from arena_core.results.predicted_capacity import PredictedCapacity, rate_capacity, users_capacity
from arena_core.results.predictions import load_calibration, predicting_backend, require_predictor
from arena_core.run.roofline import KV_CACHE_BYTES, known_precision
from arena_core.run.session import default_workloads
from arena_core.types import (
    BackendSpec,
    Calibration,
    ClosedLoopShape,
    ModelQuery,
    ModelSpec,
    PredictionSetup,
    PredictionView,
    Predictor,
    WorkloadSpec,
    slug,
    version_numbers,
)


@attrs.frozen(kw_only=True)
class PredictQuery:
    """What ``arena predict`` was asked, as its options give it: the model (a catalog name, or a
    config.json and the sizes that override it), the machine, the server's settings, the
    workloads, the capacity's SLO and how to show the answer."""

    model: str | None
    config_path: str | None
    params_b: float | None
    active_params_b: float | None
    precision: str | None
    template_tokens: int | None
    hardware: str
    kv_cache: str | None
    engine_version: str | None
    slots: int | None
    token_budget: int | None
    draft_tokens: int | None
    prefix_caching: bool | None
    sixteen_bit_compute: bool
    calibration_given: str | None
    backend: str | None
    workloads: str | None
    with_capacity: bool
    slo: str
    fmt: str
    as_json: bool
    wide: bool
    output: Path | None


@click.command("predict")
@click.argument("model", required=False)
@click.option(
    "--model-config",
    "config_path",
    help="A Hugging Face config.json describing a model the catalog lacks: a file, a folder holding one, or a model id in the local Hugging Face cache "
    "(--config is Arena's own arena.toml).",
)
@click.option(
    "--params", "params_b", type=Within(bounds.FIGURE), help="Total parameters, in billions (overrides the config's count, or describes a model alone)."
)
@click.option("--active-params", "active_params_b", type=Within(bounds.FIGURE), help="Parameters active per token, in billions (a mixture of experts).")
@click.option("--precision", help="The weights' precision: bf16, fp8, nvfp4, mxfp4, int4, q4_k_m, ... (a catalog model at another precision, too).")
@click.option(
    "--template-tokens",
    type=click.IntRange(0, TEMPLATE_TOKENS),
    help="Tokens the model's chat template adds to a request without a system message of its own (a default system prompt: "
    f"Mistral Small 3.2's adds 634; at most {TEMPLATE_TOKENS:,}, as a run's warm-up believes); default: the catalog's, else none counted.",
)
@click.option("--hardware", required=True, help="The hardware profile to predict for (arena list hardware).")
@click.option("--kv-cache", type=click.Choice(sorted(KV_CACHE_BYTES)), help="The KV cache's type on the server (default: 16-bit, the engines' own default).")
@click.option(
    "--engine-version",
    callback=lambda _ctx, _param, value: _engine_version(value),
    help="The engine's version, such as 0.20.1: some versions compute some precisions in 16 bits on some GPUs, as the backend declares.",
)
@click.option(
    "--slots", type=click.IntRange(1, 4096), help="Sequences the server serves at once (vLLM --max-num-seqs, llama.cpp --parallel; default: the backend's)."
)
@click.option("--token-budget", type=click.IntRange(16, 1 << 20), help="Tokens one engine step takes (vLLM --max-num-batched-tokens; default: the backend's).")
@click.option(
    "--speculative-tokens",
    "draft_tokens",
    type=click.IntRange(1, int(bounds.DRAFT_TOKENS.most)),
    help="Draft tokens a step of speculative decoding (vLLM's num_speculative_tokens with an MTP head or EAGLE; a separate draft model costs more), "
    "at an assumed acceptance (default: none).",
)
@click.option(
    "--prefix-caching/--no-prefix-caching",
    default=None,
    help="Whether the server keeps a conversation's earlier turns in its prefix cache, so a turn prefills only its new tokens "
    "(vLLM --no-enable-prefix-caching turns it off; default: the backend's, on).",
)
@click.option(
    "--sixteen-bit-compute",
    is_flag=True,
    help="The server computes the checkpoint's low-precision GEMMs in 16 bits, through a weight-only kernel "
    "(vLLM's Marlin: VLLM_NVFP4_GEMM_BACKEND=marlin, --moe-backend marlin); default: as the backend declares for --engine-version.",
)
@click.option(
    "--calibration",
    "calibration_given",
    help="The fit to predict with: a calibration file, or none (tier 0: the specs and the engine's priors); default: the store's for this hardware and engine.",
)
@click.option("--backend", help="The backend whose scheduling is simulated (default: the first registered that declares it; arena list backends).")
@click.option("--workloads", help="Comma-separated workload names (default: the nine).")
@click.option(
    "--capacity",
    "with_capacity",
    is_flag=True,
    help="Also predict the capacity both ways, each with its interval: the chat users served within --slo, and the request rate served with TTFT p95 within 2, 5 and 10 s.",
)
@click.option("--slo", default="interactive", show_default=True, help="The SLO of --capacity: interactive, relaxed, batch, or limits such as ttft=2s,tps=10.")
@click.option(
    "--format", "fmt", default="text", show_default=True, help="A registered renderer of predictions: text, json, and any a plugin adds (arena list renderers)."
)
@click.option("--json", "as_json", is_flag=True, help="The same as --format json.")
@click.option("--wide", is_flag=True, help="One line per workload, with what bounds it (wider than 80 columns).")
@OUTPUT
@click.pass_obj
def predict_command(app: CliApp, **given: Any) -> None:
    """Predict MODEL's figures on every workload (tokens/s per user and in total, TTFT p50, the
    seed site's G), each with an interval, and what bounds each: tier 1 with the efficiencies
    ``arena calibrate`` stored for HARDWARE and the backend, else tier 0 (the specs and the
    engine's priors)."""
    query = PredictQuery(**given)
    render = renderer_named(app, "json" if query.as_json else query.fmt, "prediction", "--json" if query.as_json else "--format")
    registry = app.hooks.registry
    chosen_predictor = require_predictor(registry).predictor
    spec, assumptions = _described(app.hooks, query.model, query.config_path, query.params_b, query.active_params_b, query.precision)
    if query.template_tokens is not None:
        spec = attrs.evolve(spec, template_tokens=query.template_tokens)
    model = spec.name
    profile = registry.get("hardware", query.hardware)
    if profile.measure is not None:
        profile = profile.measured()  # a CPU host's bandwidth is measured here, not known ahead
    served_by = predicting_backend(registry, query.backend)
    objective = parse_slo(query.slo, "--slo")
    names = [n.strip() for n in query.workloads.split(",") if n.strip()] if query.workloads else list(app.config.run.workloads or default_workloads(registry))
    chosen, shaped = _configured(registry, app.config, names)
    conversations = any(isinstance(w.shape, ClosedLoopShape) and w.shape.turns > 1 for w in chosen)
    served_by, settings = _served_as(served_by, query.slots, query.token_budget, query.draft_tokens, query.prefix_caching, conversations=conversations)
    calibration = _calibration(query.calibration_given, results_dir(app, query.output), query.hardware, served_by)
    kv_bytes = KV_CACHE_BYTES[query.kv_cache] if query.kv_cache else 2.0
    assumptions = (*assumptions, *settings, *shaped, *([] if query.kv_cache else ["a 16-bit KV cache (--kv-cache fp8 for an FP8 one)"]))
    setup = PredictionSetup(
        model=spec,
        hardware=profile,
        backend=served_by,
        calibration=calibration,
        kv_bytes_per_element=kv_bytes,
        engine_version=query.engine_version or "",
        sixteen_bit_compute=query.sixteen_bit_compute,
    )
    if (why := chosen_predictor.coverage(setup)) is not None:
        raise UsageError(f"cannot predict {model} on {query.hardware} with --backend {served_by.name}: {why}")
    try:
        found = [chosen_predictor.predict(workload, setup) for workload in chosen]
        capacity = _capacities(chosen_predictor, setup, registry, objective) if query.with_capacity else []
    except ValueError as exc:
        raise UsageError(f"cannot predict {model} on {query.hardware}: {exc}") from None
    view = PredictionView(
        spec=spec,
        hardware=profile,
        backend=served_by.name,
        tier=chosen_predictor.basis(setup),
        workloads=tuple(found),
        assumptions=tuple(assumptions),
        capacity=tuple(capacity) if query.with_capacity else None,
        wide=query.wide,
    )
    echo(render(view), nl=False)


#: How a catalog entry's fact that a flag changed is said: its label, and how a value is shown.
_CHANGED = {"precision": ("precision ", "{}"), "params_total_b": ("", "{:g}B parameters"), "params_active_b": ("", "{:g}B active")}


def _said(key: str, value: Any) -> str:
    label, shown = _CHANGED[key]
    return label + shown.format(value)


def _described(
    hooks: ArenaHooks, model: str | None, config_path: str | None, params_b: float | None, active_params_b: float | None, precision: str | None
) -> tuple[ModelSpec, tuple[str, ...]]:
    """The model to predict and what had to be assumed of it: a config.json's (as a model
    source reads it), a catalog entry (at another precision or size where one is given), or the
    facts given alone."""
    registry = hooks.registry
    if active_params_b is not None and params_b is not None and active_params_b > params_b:
        raise UsageError(f"--active-params {active_params_b:g} is more than --params {params_b:g}")
    if config_path:
        query = ModelQuery(source=config_path, named_by="--model-config", name=model, precision=precision, params_b=params_b, active_params_b=active_params_b)
        if (described := hooks.describe_model(query)) is None:
            raise UsageError(
                f"--model-config: no model source reads {config_path!r} (the arena_models plugin reads a config.json, a folder holding one, or a cached Hugging Face id)"
            )
        return described.spec, described.assumptions
    if model is not None and model in registry.models:
        spec = registry.get("models", model)
        dense = spec.params_active_b is None or spec.params_active_b == spec.params_total_b
        if params_b and active_params_b is None and dense:
            active_params_b = params_b  # a dense model resized stays dense, not a mixture of experts of unknown layout
        changed = {key: value for key, value in (("precision", precision), ("params_total_b", params_b), ("params_active_b", active_params_b)) if value}
        if precision is not None:
            known_precision(precision)
        said = tuple(f"{_said(key, value)} instead of the catalog's {_CHANGED[key][1].format(getattr(spec, key))}" for key, value in changed.items())
        # the catalog's title names its own precision ("(FP8)"): a prediction at another says what it predicts
        title = f"{spec.title} with {', '.join(_said(key, value) for key, value in changed.items())}" if changed else spec.title
        return attrs.evolve(spec, title=title, **changed), said
    if params_b is None:
        if model is None:
            raise UsageError("arena predict: name a catalog MODEL (arena list models), or describe one with --model-config config.json or --params")
        registry.get("models", model)  # the one-line error that names the catalog's models
    said = ["no layout (layers, heads, KV cache) known: the KV cache and attention are left out; --model-config gives them"]
    if precision is None:
        said.append("no --precision: BF16 assumed")
    if active_params_b is None:
        said.append("no --active-params: dense (every parameter active for each token)")
    spec = ModelSpec(
        name=slug(model or "") or "described-model",
        title=model or f"a {params_b:g}B model",
        description="described by flags",
        hf_id="",
        precision=precision or "BF16",
        params_total_b=params_b,
        params_active_b=active_params_b,
    )
    known_precision(spec.precision)
    return spec, tuple(said)


def _engine_version(value: str | None) -> str | None:
    """``--engine-version``: a dotted version of at most 40 characters."""
    if value is not None and (len(value) > 40 or version_numbers(value) is None):
        raise click.BadParameter(f"{value[:40]!r} is not a version such as 0.20.1", param_hint="--engine-version")
    return value


def _configured(registry: Registry, config: ArenaConfig, names: Sequence[str]) -> tuple[list[WorkloadSpec], list[str]]:
    """The workloads ``names`` as the config file shapes them (its ``[workloads.NAME]`` and its
    ``[run] scale``), as ``arena run`` would measure them, and what it changed, said."""
    check_config(config, registry)
    chosen, said = [], []
    for name in names:
        spec = registry.get("workloads", name)
        if name in config.workloads:
            spec = apply_override(spec, config.workloads[name], source=config.source)
            said.append(f"{name} as {config.source} shapes it ({spec.custom or 'unchanged'})")
        chosen.append(spec)
    if config.run.scale != 1.0:
        chosen = [spec.scaled(config.run.scale) for spec in chosen]
        said.append(f"every workload at x{config.run.scale:g}, the scale {config.source} sets")
    return chosen, said


def _served_as(
    backend: BackendSpec,
    slots: int | None,
    token_budget: int | None,
    draft_tokens: int | None = None,
    prefix_caching: bool | None = None,
    *,
    conversations: bool = False,
) -> tuple[BackendSpec, list[str]]:
    """The backend with the server's settings given, and the defaults taken, said (its prefix
    cache's where ``conversations``: a workload whose turns it would keep is predicted)."""
    scheduling = backend.scheduling
    if scheduling is None:
        return backend, []
    changed = attrs.evolve(
        scheduling,
        slots=slots or scheduling.slots,
        token_budget=token_budget or scheduling.token_budget,
        draft_tokens=draft_tokens or scheduling.draft_tokens,
        prefix_caching=scheduling.prefix_caching if prefix_caching is None else prefix_caching,
    )
    said = []
    if slots is None:
        said.append(f"{backend.name}'s default slots: " + (f"{scheduling.slots}" if scheduling.slots else "one per concurrent request") + " (--slots)")
    if token_budget is None:
        said.append(f"{backend.name}'s default step budget: {scheduling.token_budget} tokens (--token-budget)")
    if prefix_caching is None and conversations:
        kept = "kept in its prefix cache (--no-prefix-caching)" if scheduling.prefix_caching else "prefilled again each turn (--prefix-caching)"
        said.append(f"{backend.name}'s default: a conversation's earlier turns {kept}")
    return attrs.evolve(backend, scheduling=changed), said


def _calibration(given: str | None, store: Path, hardware: str, backend: BackendSpec) -> Calibration | None:
    """The fit named by ``--calibration``: none, a file, else the store's own."""
    if given is not None and given.strip().lower() == "none":
        return None
    if given is None:
        return load_calibration(store, hardware, backend)
    found = load_calibration(store, hardware, backend, path=Path(given))
    if found is None:
        raise UsageError(f"--calibration: {given}: not a readable calibration (arena calibrate writes one into the store's calibrations/)")
    return found


def _headline(registry: Registry) -> WorkloadSpec:
    """The workload a predicted capacity repeats: the headline one (a chat user)."""
    name = registry.with_role("headline")
    if name is None:
        raise UsageError("--capacity: no registered workload has the role 'headline'")
    return registry.get("workloads", name)


def _capacities(predictor: Predictor, setup: PredictionSetup, registry: Registry, objective: Slo) -> list[PredictedCapacity]:
    """The capacity both ways: chat users within ``objective`` (the headline workload), and the
    request rate within each of the seed's TTFT p95 limits (the rate-capacity workload's shape)."""
    found = [users_capacity(predictor, setup, _headline(registry), objective)]
    if name := registry.with_role("rate-capacity"):
        found += [rate_capacity(predictor, setup, registry.get("workloads", name), limit) for limit in SEED_TTFT_P95_LIMITS_S]
    return found


@hookimpl
def arena_register_commands(cli: click.Group) -> None:
    cli.add_command(predict_command)

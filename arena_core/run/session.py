"""The Python API of a run: resolve names, start the backend, run the workloads, store results.

``plan_run`` turns what the user asked (command line over config file over the defaults that
plugins register) into a :class:`RunPlan` of registered objects; ``execute`` carries it out in
three steps -- start the backend, run each workload, finish -- recording everything in the
run's :class:`~arena_core.run.manifest.Manifest`. A run interrupted by Ctrl-C (or killed) resumes
with ``--resume RUN_ID``: finished workloads are kept, the unfinished one starts again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs
from attrs import frozen

from arena_core import __version__
from arena_core.config import ArenaConfig, apply_override, check_config
from arena_core.converter import CONVERTER
from arena_core.errors import ConfigError, Interrupted, ServerLost, UsageError
from arena_core.hooks import ArenaHooks
from arena_core.loadgen.http import HttpError
from arena_core.redaction import remember
from arena_core.registry import Registry
from arena_core.report.expected import expected_work
from arena_core.run import budget
from arena_core.run.attach import UNNAMED_SERVER, ask_about_its_machine
from arena_core.run.budget import DEFAULT_BUDGET_S, FINISH_S, LEAST_QUALITY_S, BudgetKeeper, Expected, Timing, minutes, scale_for
from arena_core.run.identity import CATALOG_IDENTITY, UNNAMED, ask_the_server, identify, served_facts, unique_name
from arena_core.run.integrity import sealed
from arena_core.run.manifest import Manifest, TelemetrySetup, read_manifest, write_manifest
from arena_core.run.precision_plan import PRECISION_CAP_S, parse_margin, until_precise
from arena_core.run.probes import probes_for
from arena_core.run.pulse import Counts, Pulse
from arena_core.run.roofline import KV_BYTES_PER_ELEMENT, KV_CACHE_BYTES, apply_ceiling
from arena_core.run.sanity import DEADLINE_S, check_the_server_answers
from arena_core.run.store import RunLock, find_run, index_run, load_result, new_run_dir, remove_run, store_result, stored_manifests, workload_dir
from arena_core.run.telemetry import TelemetrySampler, memory_in_use, memory_now, model_memory, sample_now, stop_like_ctrl_c, summarise, watchdog_margin_bytes
from arena_core.types import (
    Backend,
    BackendRequest,
    BackendSpec,
    EmbeddedRun,
    Endpoint,
    EndpointSettings,
    HardwareProfile,
    ModelQuery,
    ModelSpec,
    QualityRequest,
    QualitySuiteSpec,
    RunContext,
    RunInfo,
    RunOptions,
    RunResult,
    WorkloadResult,
    WorkloadSpec,
)
from arena_core.types.runners import server_is_here

#: The model name a run starts with when no model is named; the server's own facts replace it
#: (:mod:`arena_core.run.identity`). Runs stored before Arena named models keep it.
UNCATALOGUED_MODEL = UNNAMED
#: Said in the manifest and the progress when the server runs on another machine.
REMOTE_NOTE = "the server runs on another machine: its memory and power are not read from here (its /metrics are)"
#: The files a run was given, recorded by name so that a resumed run reads them again.
RECORDED_PATHS = ("tokenizer", "dataset", "corpus")
#: The quality requests a run keeps in flight (fewer where the server Arena starts has fewer slots).
QUALITY_CONCURRENCY = budget.QUALITY_CONCURRENCY
#: The context a server Arena starts only for quality needs: a prompt and its answer.
QUALITY_CONTEXT_TOKENS = 4096

Progress = Callable[[str], None]
#: (workload or "quality SUITE", done, total, tokens so far: None for a suite's items)
LiveUpdate = Callable[[str, int, int, int | None], None]


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
    instrument: str | None = None
    output: Path | None = None
    tokenizer: Path | None = None
    api_key_env: str | None = None
    api_key_file: str | None = None
    exact_output: bool | None = None
    request_timeout: float | None = None
    dataset: Path | None = None
    corpus: Path | None = None
    #: The parallel slots of a server Arena starts (llama.cpp ``-np``, vLLM ``--max-num-seqs``);
    #: None: as many as the workloads' most concurrent requests.
    slots: int | None = None
    #: Arguments for the command line of a server Arena starts (``--server-arg``), after its own.
    server_args: tuple[str, ...] = ()
    #: The model's title (and so its name) where the server's own facts are not what to call it.
    model_title: str | None = None
    #: Measure quality after the workloads; None: for a run of the standard suite, not for a run
    #: that names its workloads (a quick check).
    quality: bool | None = None
    quality_full: bool = False
    quality_suites: tuple[str, ...] = ()
    #: Quality items asked at once; None: :data:`QUALITY_CONCURRENCY`.
    quality_concurrency: int | None = None
    #: Measure quality only, no workload (``arena quality``).
    quality_only: bool = False
    #: Choose the scale so the run fits this many seconds (0: no budget); None: 10 minutes for
    #: the embedded server when no scale is given, else none.
    budget_s: float | None = None
    #: Measure each closed-loop workload until its headline figures are within this relative
    #: margin at 95 % (``--precision``), for at most ``precision_cap_s`` seconds of runs each.
    precision: float | None = None
    precision_cap_s: float | None = None

    @classmethod
    def resuming(cls, manifest: Manifest, **given: object) -> RunRequest:
        """The request that carries on the run ``manifest`` records; ``given`` (the API key's
        source, the output folder, a request timeout) is what a manifest never holds."""
        kept = {
            name: getattr(manifest, name)
            for name in ("backend", "hardware", "base_url", "workloads", "scale", "instrument", "exact_output", "server_args", "precision", "precision_cap_s")
        }
        paths = {name: Path(value) for name in RECORDED_PATHS if (value := getattr(manifest, name))}
        settings = {key: value for key, value in given.items() if value is not None}
        # a model the catalog lacks was named from what its server said: it is asked again
        named = manifest.model_facts.get("identity", CATALOG_IDENTITY) == CATALOG_IDENTITY
        model = manifest.model if manifest.model != UNCATALOGUED_MODEL and named else None
        quality = {
            "quality": bool(manifest.quality_suites),
            "quality_suites": manifest.quality_suites,
            "quality_full": manifest.quality_full,
            "quality_concurrency": manifest.quality_concurrency,
        }
        title = {"model_title": manifest.model_title} if model is None and manifest.model_title else {}
        return cls(model=model, request_timeout=manifest.request_timeout_s, **{**kept, **paths, **quality, **title, **settings})  # type: ignore[arg-type]


@frozen(kw_only=True)
class RunPlan:
    model: ModelSpec
    backend: BackendSpec
    hardware: HardwareProfile
    hardware_reason: str
    workloads: tuple[WorkloadSpec, ...]
    instrument: str
    scale: float
    output: Path
    options: RunOptions
    endpoint: EndpointSettings
    config: ArenaConfig
    slots: int | None = None
    server_args: tuple[str, ...] = ()
    quality: tuple[QualitySuiteSpec, ...] = ()
    quality_full: bool = False
    #: quality items asked at once, where the server has as many slots (else its slots)
    quality_concurrency: int = QUALITY_CONCURRENCY
    model_title: str | None = None
    #: the time budget (``--budget``) the scale was chosen to fit, and the run's expected time
    budget_s: float | None = None
    expected: Expected | None = None
    #: ``--precision`` and its cap, as the closed-loop workloads' shapes carry them
    precision: float | None = None
    precision_cap_s: float | None = None
    #: what the estimate rests on, and the workloads before scaling: a run that falls behind its
    #: budget shrinks the workloads still to run (:class:`~arena_core.run.budget.BudgetKeeper`)
    timing: Timing | None = None
    unscaled: tuple[WorkloadSpec, ...] = ()


def default_workloads(registry: Registry) -> tuple[str, ...]:
    """What a run that names no workloads measures: every registered one not marked optional."""
    return tuple(r.item.name for r in registry.registrations("workloads") if not r.item.optional)


def plan_run(request: RunRequest, config: ArenaConfig, hooks: ArenaHooks) -> RunPlan:
    """Resolve every name of ``request`` (over ``config``) against what the plugins registered."""
    registry = hooks.registry
    check_config(config, registry)  # a wrong name in the file is an error even where a flag overrides it
    run = config.run
    endpoint = _endpoint_settings(request, config.endpoint, config.source)
    backend, embedded = _choose_backend(request, config, registry, attach=bool(endpoint.base_url))
    model = _model_of(request, run.model, backend, hooks)
    hardware, reason = _choose_hardware(request.hardware or run.hardware, config, hooks, here=server_is_here(endpoint.base_url))
    chosen_scale = request.scale or (run.scale if run.scale != 1.0 else None)
    # a budget by default only where Arena chose the scale for its own embedded server
    budget = request.budget_s if request.budget_s is not None else (DEFAULT_BUDGET_S if embedded and chosen_scale is None and not request.workloads else None)
    scale = chosen_scale or (embedded.scale if embedded else 1.0)
    precision = _precision_asked(request, config)
    budget = None if precision else budget  # each workload's length is found as it runs: no budget fits it, none is claimed
    unscaled = _asked_workloads(request, config, registry)
    quality = _quality_suites(request, registry)
    asked_at_once = request.quality_concurrency or QUALITY_CONCURRENCY
    timing, untimed = _timing(hooks, model, hardware, backend, request.output or Path(run.output), quality, request.quality_full, asked_at_once)
    if budget and timing is None and request.budget_s:
        # a budget asked for that nothing can honour is refused, never ignored while the card says it was kept
        raise UsageError(
            f"--budget {minutes(budget)}: Arena cannot estimate how long this run takes ({_why_untimed(model, backend, untimed)}); give --scale instead"
        )
    if budget and timing is not None:
        scale = scale_for(budget - FINISH_S, scale, lambda s: timing.expected(_scaled(unscaled, s)))
    elif timing is None:
        budget = None  # the embedded default's budget, where its time cannot be estimated: not claimed
    workloads = _scaled(unscaled, scale)
    if precision:
        workloads, timing = until_precise(workloads, precision, request.precision_cap_s or PRECISION_CAP_S), None
    instrument = request.instrument or run.instrument
    _check_instrument(instrument, workloads, registry)
    exact = request.exact_output if request.exact_output is not None else bool(embedded and embedded.exact_output)
    timeout = request.request_timeout or RunOptions().request_timeout_s
    options = RunOptions(tokenizer=request.tokenizer, exact_output=exact, request_timeout_s=timeout, dataset=request.dataset, corpus=request.corpus)
    return RunPlan(
        model=model,
        backend=backend,
        hardware=hardware,
        hardware_reason=reason,
        workloads=tuple(workloads),
        instrument=instrument,
        scale=scale,
        output=request.output or Path(run.output),
        options=options,
        endpoint=endpoint,
        config=config,
        **_for_a_started_server(request, backend, endpoint),
        quality=quality,
        quality_full=request.quality_full,
        quality_concurrency=asked_at_once,
        model_title=request.model_title or run.model_title,
        budget_s=budget or None,
        expected=(timing.expected(workloads).within(budget - FINISH_S) if budget else timing.expected(workloads)) if timing is not None else None,
        timing=timing,
        unscaled=tuple(unscaled),
        precision=precision or None,
        precision_cap_s=(request.precision_cap_s or PRECISION_CAP_S) if precision else None,
    )


def _asked_workloads(request: RunRequest, config: ArenaConfig, registry: Registry) -> list[WorkloadSpec]:
    """The workloads the run measures, each as the config's ``[workloads.NAME]`` changes it, unscaled."""
    unscaled = []
    for name in () if request.quality_only else request.workloads or config.run.workloads or default_workloads(registry):
        spec = registry.get("workloads", name)
        unscaled.append(apply_override(spec, config.workloads[name], source=config.source) if name in config.workloads else spec)
    return unscaled


def _precision_asked(request: RunRequest, config: ArenaConfig) -> float | None:
    """``--precision``, else the config's ``[run] precision``; refused beside ``--budget``."""
    said = config.run.precision
    precision = request.precision or (parse_margin(said, f"{config.source}: $.run.precision") if said else None)
    if precision and request.budget_s:
        raise UsageError(
            f"--budget {minutes(request.budget_s)} and --precision: a budget fits a fixed count of runs; with --precision each workload runs until precise, for at most --precision-cap"
        )
    if precision and (request.instrument or config.run.instrument) == "external":
        raise UsageError("--precision: the reference tools run a fixed count of requests; measuring until precise needs Arena's native instrument")
    return precision


def _timing(
    hooks: ArenaHooks,
    model: ModelSpec,
    hardware: HardwareProfile,
    backend: BackendSpec,
    output: Path,
    quality: tuple[QualitySuiteSpec, ...],
    full: bool,
    concurrency: int,
) -> tuple[Timing | None, str]:
    """What the run's expected time is computed from, or None and why it cannot be: a time
    estimate never stops a run by itself (it is then not said)."""
    try:
        return Timing.of(hooks, model, hardware, backend, output, quality, full=full, concurrency=concurrency), ""
    except (ValueError, ArithmeticError, UsageError) as exc:
        return None, str(exc)


def _model_of(request: RunRequest, configured: str | None, backend: BackendSpec, hooks: ArenaHooks) -> ModelSpec:
    """The model a run measures: the one named (a catalog entry, or weights in a folder or the
    Hugging Face cache, as a model source describes them), else the backend's embedded one,
    else the served model, uncatalogued."""
    registry = hooks.registry
    name = request.model or configured or (backend.embedded.model if backend.embedded and not backend.attaches else None)
    if name is None:
        title = request.served_model or "the served model"
        return ModelSpec(name=UNCATALOGUED_MODEL, title=title, description="not in the catalog", hf_id="", precision="unknown")
    if name not in registry.by_kind["models"] and (described := hooks.describe_model(ModelQuery(source=name, named_by=f"model {name}", serve=True))):
        return described.spec  # a folder or a cached Hugging Face id, for a backend that serves one
    return registry.get("models", name)


def _why_untimed(model: ModelSpec, backend: BackendSpec, untimed: str) -> str:
    """Why a run's time cannot be estimated (its budget then cannot be kept)."""
    if model.name == UNCATALOGUED_MODEL:
        return "the served model is none Arena's catalog describes: its size is unknown"
    if model.params_total_b is None:
        return f"{model.name!r} has no parameter count Arena knows"
    if backend.attaches:
        return "the engine of a server Arena attaches to is known only once the run asks it"
    return untimed or f"the predictor does not cover backend {backend.name!r}"


def _scaled(workloads: Sequence[WorkloadSpec], scale: float) -> list[WorkloadSpec]:
    try:
        return [spec.scaled(scale) for spec in workloads]
    except ValueError as exc:  # a shape at its bounds, grown past them
        raise UsageError(f"--scale {scale:g}: a workload would be out of range ({exc})") from None


def _quality_suites(request: RunRequest, registry: Registry) -> tuple[QualitySuiteSpec, ...]:
    """The suites named, else every default one, when the run measures quality at all."""
    if request.quality_suites:
        return tuple(registry.get("quality-suites", name) for name in request.quality_suites)
    wanted = request.quality_only or (request.quality if request.quality is not None else not request.workloads)
    return tuple(r.item for r in registry.registrations("quality-suites") if r.item.default) if wanted else ()


def _for_a_started_server(request: RunRequest, backend: BackendSpec, endpoint: EndpointSettings) -> dict[str, Any]:
    """The slots and the server arguments the user gave, refused for a server Arena does not
    start (it was started with its own)."""
    if backend.attaches:
        where = f" at {endpoint.base_url}" if endpoint.base_url else ""
        if request.slots is not None:
            raise UsageError(f"--slots sizes a server Arena starts; the server{where} was started with its own (llama.cpp -np, vLLM --max-num-seqs)")
        if request.server_args:
            raise UsageError(f"--server-arg passes arguments to a server Arena starts; the server{where} was started with its own")
    return {"slots": request.slots, "server_args": request.server_args}


def _endpoint_settings(request: RunRequest, section: EndpointSettings, source: str) -> EndpointSettings:
    """The command line's endpoint flags over the config file's ``[endpoint]``; a base URL is
    http(s) and carries no credentials (they would be stored with the run and printed)."""
    url = request.base_url or section.base_url
    if url:
        where = {"source": "--base-url", "path": None} if request.base_url else {"source": source, "path": "$.endpoint.base_url"}
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError("expected an http:// or https:// address of a server", **where)
        if parts.username or parts.password:
            raise ConfigError(
                "credentials in the URL are not accepted (they would be stored with the run and printed): use --api-key-env or --api-key-file", **where
            )
    return EndpointSettings(
        base_url=request.base_url or section.base_url,
        model=request.served_model or section.model,
        api_key_env=request.api_key_env or section.api_key_env,
        api_key_file=request.api_key_file or section.api_key_file,
    )


def _choose_backend(request: RunRequest, config: ArenaConfig, registry: Registry, *, attach: bool) -> tuple[BackendSpec, EmbeddedRun | None]:
    """The backend named, else the one that attaches (with a base URL), else the first that
    offers an embedded run; and that embedded run when nothing at all was named."""
    named = request.backend or config.run.backend
    nothing_named = not (request.model or config.run.model)
    if named:
        spec = registry.get("backends", named)
        # a backend named without a model serves its own embedded run, when it offers one
        return spec, (spec.embedded if nothing_named and not spec.attaches else None)
    specs = [registration.item for registration in registry.registrations("backends")]
    if attach:
        found = next((spec for spec in specs if spec.attaches), None)
        if found is None:
            raise UsageError("--base-url: no registered backend attaches to a running server")
        return found, None
    found = next((spec for spec in specs if spec.embedded is not None and spec.embedded.default), None)
    if found is None:
        raise UsageError("no registered backend offers a default run; name a model and --backend, or --base-url")
    return found, (found.embedded if nothing_named else None)


def _choose_hardware(name: str | None, config: ArenaConfig, hooks: ArenaHooks, *, here: bool) -> tuple[HardwareProfile, str]:
    """The profile named, else this machine's when the server runs here, else the unnamed one."""
    if name == UNNAMED_SERVER.name or (not name and not here):
        return UNNAMED_SERVER, "the server runs on another machine, not named with --hardware"
    if name:
        profile, reason = hooks.registry.get("hardware", name), "named on the command line or in the config"
    else:
        detected = hooks.detect_hardware(config)
        if detected is None:
            raise UsageError("no hardware profile recognised this machine; name one with --hardware")
        profile, reason = detected.profile, detected.reason
    return profile.measured(), reason


def _check_instrument(instrument: str, workloads: list[WorkloadSpec], registry: Registry) -> None:
    for runner in {w.runner: registry.get("runners", w.runner) for w in workloads}.values():
        if instrument not in runner.instruments:
            raise UsageError(f"--instrument {instrument}: runner {runner.name!r} has instruments {', '.join(runner.instruments)}")
        if instrument == "external" and runner.check_external is not None and not (available := runner.check_external()).available:
            raise UsageError(f"--instrument external: {available.detail}")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def new_manifest(plan: RunPlan, run_id: str) -> Manifest:
    options = plan.options
    return Manifest(
        run_id=run_id,
        arena_version=__version__,
        status="running",
        started_at=_now(),
        model=plan.model.name,
        backend=plan.backend.name,
        hardware=plan.hardware.name,
        hardware_reason=plan.hardware_reason,
        hardware_profile=plan.hardware,
        instrument=plan.instrument,
        scale=plan.scale,
        workloads=tuple(w.name for w in plan.workloads),
        config_source=plan.config.source,
        precision=plan.precision,
        precision_cap_s=plan.precision_cap_s,
        # the configuration as used, flags applied (names of key variables and files only, never a key)
        config=CONVERTER.unstructure(attrs.evolve(plan.config, endpoint=plan.endpoint)),
        quality_suites=tuple(suite.name for suite in plan.quality),
        quality_full=plan.quality_full,
        quality_concurrency=plan.quality_concurrency,
        model_title=plan.model_title,
        budget_s=plan.budget_s,
        expected_s=round(plan.expected.total_s) if plan.expected is not None else None,
        exact_output=options.exact_output,
        server_args=plan.server_args,
        request_timeout_s=options.request_timeout_s,
        **{name: str(value) for name in RECORDED_PATHS if (value := getattr(options, name))},
    )


class RunSession:
    """One run being carried out: its folder, its manifest, the backend and what was measured."""

    def __init__(
        self,
        plan: RunPlan,
        hooks: ArenaHooks,
        progress: Progress,
        *,
        resume: str | None,
        live: LiveUpdate | None,
        resume_command: str = "arena run",
        keeper: BudgetKeeper | None = None,
    ) -> None:
        self.plan, self.hooks, self.live, self.resuming, self.keeper = plan, hooks, live, resume is not None, keeper
        self.pulse = Pulse(progress, live=live is not None)
        self.progress = self.pulse.say
        self.resume_command = resume_command
        if resume:
            self.run_dir = find_run(plan.output, resume)
            self.lock = RunLock(self.run_dir)  # before reading: a second resumer stops here
            self.manifest = read_manifest(self.run_dir)
            # files given again (a tokenizer the first attempt lacked) are what the rest of the run reads
            self._record(**{name: str(value) for name in RECORDED_PATHS if (value := getattr(plan.options, name))})
        else:
            run_id, self.run_dir = new_run_dir(plan.output)
            self.lock = RunLock(self.run_dir)
            self.manifest = new_manifest(plan, run_id)
            self._record()
        self.results: list[WorkloadResult] = []
        self.measuring = False
        #: a run that failed before measuring is removed, unless its server left a log to read
        self.keep_failed = False
        #: the scale of each workload the budget shrank while the run ran (others: the plan's)
        self.scales: dict[str, float] = {}
        self.sampler: TelemetrySampler | None = None
        self.margin = watchdog_margin_bytes()
        self.backend: Backend = plan.backend.create(
            BackendRequest(
                model=plan.model,
                endpoint=plan.endpoint,
                run_dir=self.run_dir,
                hardware=plan.hardware,
                max_context_tokens=max((w.shape.context_needed() for w in plan.workloads), default=QUALITY_CONTEXT_TOKENS),
                max_concurrency=max((w.shape.concurrency_needed() for w in plan.workloads), default=plan.quality_concurrency),
                slots=plan.slots,
                server_args=plan.server_args,
            )
        )
        # what observers are told: the run's identity as its manifest records it
        self.info = RunInfo(**{name: getattr(self.manifest, name) for name in attrs.fields_dict(RunInfo)})

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    def _record(self, **changes: object) -> None:
        self.manifest = attrs.evolve(self.manifest, **changes)
        write_manifest(self.run_dir, self.manifest)
        index_run(self.plan.output, self.manifest)

    def resume_hint(self) -> str:
        return f"resume with: {self.resume_command} --resume {self.run_id} --output {self.plan.output}"

    def start_backend(self) -> Endpoint:
        """Start the server (or attach to it), measure what loading the model took, and record
        the server's facts and every workload's reference command in the manifest."""
        plan, unified = self.plan, self.plan.hardware.unified_memory
        self.progress(f"starting the {plan.backend.name} server...")
        server_pid: dict[str, int | None] = {"pid": None}
        here = server_is_here(plan.endpoint.base_url)
        probe_names = plan.hardware.probes if here else ()  # this machine's memory says nothing of a server elsewhere
        self.probes, notes = probes_for(probe_names, server_pid=lambda: server_pid["pid"]) if here else ([], [REMOTE_NOTE])
        before = memory_now(self.probes, unified)
        log = f" (its log: {self.backend.log_path})" if self.backend.log_path else ""
        self.pulse.start()
        with self.pulse.phase(f"still starting the {plan.backend.name} server{log}"):
            try:
                endpoint = self.backend.start()
            except BaseException:
                # a server that died while starting leaves its log in the run folder, kept: the
                # error names it (arena_core.launch_kit), and it is what the user reads next
                log = self.backend.log_path
                self.keep_failed = log is not None and log.is_file() and log.stat().st_size > 0
                raise
        if endpoint.api_key:
            remember(endpoint.api_key)  # whatever backend read it, it never leaves Arena but in its header
        facts = dict(self.backend.facts)
        server_pid["pid"] = facts.get("pid")  # type: ignore[assignment]
        for note in notes:
            self.progress(f"telemetry: {note}")
        runners = self.hooks.registry
        commands = {
            w.name: line for w in plan.workloads if (line := runners.get("runners", w.runner).command_for(w, endpoint.base_url, endpoint.model, plan.options))
        }
        loaded = sample_now(self.probes)
        self._record(
            backend_facts=facts,
            # what a server Arena attached to already held is not what loading took: only its own figure counts
            model_memory=model_memory(
                facts,
                *((None, None) if plan.backend.attaches else (before, memory_in_use(loaded, unified))),
                unified=unified,
                server_rss=None if plan.backend.attaches else loaded.get("server_rss_bytes"),
                cpu_only=not any(name.startswith("nvml") for name in probe_names),
            ),
            telemetry=TelemetrySetup(probes=probe_names, notes=tuple(notes)),
            commands=commands,
            base_url=endpoint.base_url if plan.backend.attaches else None,
        )
        self.name_the_model(endpoint, here)
        return endpoint

    def name_the_model(self, endpoint: Endpoint, here: bool) -> None:
        """Record what the server says it serves; a model the catalog lacks is named from it.
        A resumed run whose server now serves other weights stops: its results would mix two
        models under one name."""
        dialects = self.hooks.registry.server_dialects()
        facts = served_facts(ask_the_server(endpoint, dialects, here=here, describe=self.hooks.describe_model), dialects)
        plan, recorded = self.plan, self.manifest.model_facts
        if plan.model.name != UNCATALOGUED_MODEL:
            self._record(model_facts={**recorded, **facts, "identity": CATALOG_IDENTITY})
            return
        catalog = {r.item.name: r.item for r in self.hooks.registry.registrations("models")}
        served = identify(facts, catalog, title=plan.model_title)
        if self.resuming and recorded.get("fingerprint") and served.fingerprint and recorded.get("fingerprint") != served.fingerprint:
            raise UsageError(
                f"--resume {self.run_id}: the server at {endpoint.base_url} now serves {_said(served.facts)!r}, not the run's {_said(recorded)!r} "
                "(other weights); start a new run for it"
            )
        if self.resuming:
            return
        name = unique_name(served, _fingerprints(plan.output, served.name, self.run_id))
        self._record(model=name, model_title=served.title, model_facts=dict(served.facts))
        self.info = attrs.evolve(self.info, model=name)
        self.progress(f"model: {name} ({served.title}; named from {served.facts['identity']})")

    def measure_quality(self, endpoint: Endpoint, *, under_load: int | None = None) -> None:
        """Measure each quality suite of the plan (a resumed run keeps those it has), storing its
        records under ``quality/SUITE/`` and its figure in the manifest as soon as it is known.
        ``under_load``: ask each that many at once, a capacity search's quality under load
        (``quality/SUITE-under-load/``, the manifest's ``quality_under_load``)."""
        kept = self.manifest.quality_under_load if under_load else self.manifest.measured_quality
        done = {measured.suite for measured in kept}
        if under_load:
            self._record(quality_load=under_load)
        for at, suite in enumerate(self.plan.quality):
            if suite.name in done:
                self.progress(f"quality: {suite.name}: already measured, kept")
                continue
            limit = self.keeper.quality_limit(suite, self.plan.quality[at:], self.plan.quality_full) if self.keeper else None
            if limit is not None and limit < LEAST_QUALITY_S:
                self._budget_changed(f"quality {suite.name} not measured: {limit:.0f} s of the budget were left")
                continue
            folder = _fresh_folder(self.run_dir / "quality" / (f"{suite.name}-under-load" if under_load else suite.name))
            self.measuring = True
            counts = Counts("items")

            def on_item(answered: int, total: int, name: str = suite.name, counts: Counts = counts) -> None:
                counts.update(answered, total)
                if self.live:
                    self.live(f"quality {name}", answered, total, None)

            request = QualityRequest(
                endpoint=endpoint,
                output_dir=folder,
                full=self.plan.quality_full,
                request_timeout_s=self.plan.options.request_timeout_s,
                concurrency=under_load or min(self.plan.quality_concurrency, self.plan.slots or self.plan.quality_concurrency),
                progress=self.progress,
                time_limit_s=limit,
                on_item=on_item,
            )
            try:
                with self.pulse.phase(f"quality: {suite.name}", counts, has_live_line=True):
                    measured = suite.run(request)
            except HttpError as exc:
                raise ServerLost(f"quality {suite.name}: the server stopped answering ({exc}); what was measured is kept; {self.resume_hint()}") from None
            except Exception as exc:  # a suite's own fault (a plugin's bug, a sandbox the OS refused) loses no other figure
                self.progress(f"quality: {suite.name} could not be measured ({type(exc).__name__}: {str(exc)[:200]}); the run goes on")
                continue
            if under_load:
                self._record(quality_under_load=(*self.manifest.quality_under_load, measured))
            else:
                self._record(measured_quality=(*self.manifest.measured_quality, measured))
            chosen = suite.full_size if self.plan.quality_full else suite.subset_size
            if limit is not None and measured.items < chosen:
                self._budget_changed(f"quality {suite.name} on {measured.items} of its {chosen} items, in the {limit:.0f} s the budget left it")
            self.progress(
                f"quality: {suite.name}{f' under load ({under_load} at once)' if under_load else ''}: {measured.metric} {measured.value:.1f} %"
                f" [{measured.low:.1f}, {measured.high:.1f}] on {measured.size}, {measured.seconds:.0f} s"
            )

    def _budget_changed(self, change: str) -> None:
        """Keep (in the manifest, for the card) and say what the budget changed."""
        self._record(budget_changes=(*self.manifest.budget_changes, change))
        self.progress(f"to keep the budget: {change}")

    def keep_to_budget(self, index: int, endpoint: Endpoint) -> None:
        """After the ``index``-th workload: where the run has fallen behind its budget, the
        workloads still to run shrink (their reference commands with them)."""
        plan = self.plan
        if self.keeper is None or not plan.unscaled or len(plan.unscaled) != len(plan.workloads):
            return
        done = [(spec, result.metrics.get("wall_s")) for spec, result in zip(plan.workloads[:index], self.results)]
        remaining = plan.unscaled[index:]
        scale = min((self.scales.get(spec.name, plan.scale) for spec in plan.workloads[index:]), default=plan.scale)
        smaller = self.keeper.rescale(done, remaining, scale)
        if smaller is None:
            return
        shrunk = tuple(spec.scaled(smaller) for spec in remaining)
        self.plan = attrs.evolve(plan, workloads=(*plan.workloads[:index], *shrunk))
        self.scales.update({spec.name: smaller for spec in shrunk})
        runners = self.hooks.registry
        commands = {w.name: line for w in shrunk if (line := runners.get("runners", w.runner).command_for(w, endpoint.base_url, endpoint.model, plan.options))}
        self._record(commands={**self.manifest.commands, **commands})
        self._budget_changed(self.keeper.changes[-1])

    def preflight(self, endpoint: Endpoint) -> None:
        """Before the first measured request: ask an unnamed server what it says of its machine,
        check that the server answers a question with text (:mod:`arena_core.run.sanity`), and ask
        each runner whether its workloads can run here."""
        if self.plan.hardware.name == UNNAMED_SERVER.name:
            self.progress(ask_about_its_machine(endpoint, self.hooks.registry.hardware_elsewhere(), self.hooks.registry.server_dialects()))
        check_the_server_answers(endpoint, min(DEADLINE_S, self.plan.options.request_timeout_s))
        context = RunContext(endpoint=endpoint, output_dir=self.run_dir, options=self.plan.options, progress=self.progress)
        for workload in self.plan.workloads:
            runner = self.hooks.registry.get("runners", workload.runner)
            if runner.preflight is not None and not (self.resuming and load_result(self.run_dir, workload.name)):
                runner.preflight(workload, self.plan.instrument, context)

    def run_probe(self, workload: WorkloadSpec, endpoint: Endpoint) -> WorkloadResult:
        """Measure a workload the plan did not list (a capacity search chooses each probe from the
        last): it joins the plan and the manifest's workloads, with its reference command, and
        its result joins the session's."""
        runner = self.hooks.registry.get("runners", workload.runner)
        command = runner.command_for(workload, endpoint.base_url, endpoint.model, self.plan.options)
        done = [spec for spec in self.plan.workloads if spec.name in {r.workload for r in self.results}]
        self.plan = attrs.evolve(self.plan, workloads=(*done, workload))
        self._record(workloads=tuple(w.name for w in self.plan.workloads), commands={**self.manifest.commands, **({workload.name: command} if command else {})})
        self.results.append(result := self.run_workload(len(self.plan.workloads), workload, endpoint))
        return result

    def record_search(self, slo: str, search: Mapping[str, object]) -> None:
        """Keep the SLO a capacity search judges by, and what it was asked, with the run's
        configuration: its card judges by that SLO, and ``--resume`` carries on the same search."""
        self._record(config={**self.manifest.config, "slo": {"objective": slo}, "capacity": dict(search)})

    def run_workload(self, index: int, workload: WorkloadSpec, endpoint: Endpoint) -> WorkloadResult:
        """Measure one workload (or keep it, when a resumed run already has it) and store it."""
        plan, count = self.plan, len(self.plan.workloads)
        done = load_result(self.run_dir, workload.name) if self.resuming else None
        if done is not None:
            self.progress(f"[{index}/{count}] {workload.name}: already measured, kept")
            return done
        self.measuring = True
        folder = _fresh_folder(workload_dir(self.run_dir, workload.name))
        runner = self.hooks.registry.get("runners", workload.runner)
        self.progress(f"[{index}/{count}] {workload.name} ({runner.name}, {plan.instrument})")
        started = time.perf_counter()
        counts = Counts("requests")

        def on_request(done: int, total: int, tokens: int) -> None:
            counts.update(done, total)
            if self.live:
                self.live(workload.name, done, total, tokens)

        context = RunContext(endpoint=endpoint, output_dir=folder, options=plan.options, progress=self.progress, on_request=on_request)
        self.sampler = TelemetrySampler(
            folder / "telemetry.jsonl",
            metrics_url=f"{endpoint.base_url}/metrics",
            dialects=self.hooks.registry.metrics_dialects(),
            probes=self.probes,
            # the watchdog guards this machine (on unified memory running out freezes it): it reads
            # only this machine's memory, so a server on another machine never trips it
            on_low_memory=stop_like_ctrl_c,
            margin_bytes=self.margin,
        )
        self.sampler.start()  # (assigned first: the watchdog may already fire in the first sample)
        try:
            with self.pulse.phase(f"[{index}/{count}] {workload.name}", counts, has_live_line=True):
                result = runner.create(plan.instrument).run(workload, context)
        except HttpError as exc:
            raise ServerLost(
                f"{workload.name}: the server stopped answering ({exc}); {len(self.results)} finished workloads are kept; {self.resume_hint()}"
            ) from None
        finally:
            samples = self.sampler.stop()
        kv_bytes = KV_CACHE_BYTES.get(
            str(self.manifest.backend_facts.get("kv_cache_dtype", "")), KV_BYTES_PER_ELEMENT
        )  # the server's own, where its backend says
        scale = self.scales.get(workload.name, plan.scale)  # a workload the budget shrank has its own
        result = apply_ceiling(result.scaled(scale).customised(workload.custom), plan.model, plan.hardware, workload, kv_bytes)
        telemetry = summarise(
            samples, unified=plan.hardware.unified_memory, output_tokens=result.metrics.get("output_tokens"), dialects=self.hooks.registry.metrics_dialects()
        )
        # the workload's time on the wall: what a later run's time estimate learns from (run.budget)
        result = attrs.evolve(result, metrics={**result.metrics, **telemetry, "wall_s": round(time.perf_counter() - started, 1)})
        store_result(self.run_dir, result)
        self.progress(f"[{index}/{count}] {workload.name}: {_headline(result)} ({time.perf_counter() - started:.0f} s)")
        return result

    def finish(self, status: str) -> None:
        """Stop the server, seal every results file into the manifest, tell the observers. A new
        run that failed before its first workload measured nothing: it leaves no run behind, but
        for the log of a server that died while starting."""
        self.pulse.stop()
        self.backend.stop()
        try:
            if status == "failed" and not self.measuring and not self.resuming and not self.keep_failed:
                remove_run(self.plan.output, self.run_dir)
                return
            self._seal_and_tell(status)
        finally:
            self.lock.release()

    def _seal_and_tell(self, status: str) -> None:
        self.manifest = sealed(self.run_dir, attrs.evolve(self.manifest, status=status, finished_at=_now()))
        self._record()
        self.hooks.run_finished(self.info, RunResult(run_id=self.run_id, completed=status == "completed", results=tuple(self.results)))


def _said(facts: Mapping[str, object]) -> str:
    """What a server called its model, in a message."""
    return str(facts.get("gguf_name") or facts.get("served_root") or facts.get("served_name") or "an unnamed model")


def _fingerprints(output: Path, name: str, run_id: str) -> dict[str, set[str]]:
    """The fingerprints of the stored runs named ``name`` (but ``run_id``), by name."""
    # read from the run folders, not the index: another Arena process may hold the index, and a
    # run must not fail for that (the index is only a cache of the folders)
    found = {str(m.model_facts.get("fingerprint", "")) for m in stored_manifests(output) if m.model == name and m.run_id != run_id}
    return {name: found}


def _fresh_folder(folder: Path) -> Path:
    """A half-finished workload starts again cleanly; its records are kept aside, not lost."""
    if folder.exists():
        attempt = 1
        while folder.with_name(f"{folder.name}.interrupted-{attempt}").exists():
            attempt += 1
        folder.rename(folder.with_name(f"{folder.name}.interrupted-{attempt}"))
    return folder


def _headline(result: WorkloadResult) -> str:
    tps = f"{result.tokens_per_second:.1f} tok/s" if result.tokens_per_second is not None else "no tokens/s"
    ttft = f"TTFT p50 {result.ttft_p50_s * 1000:.0f} ms" if result.ttft_p50_s is not None else "no TTFT"
    return f"{tps}, {ttft}, {'valid' if result.verdict.valid else 'INVALID'}"


def execute(
    plan: RunPlan, hooks: ArenaHooks, progress: Progress, *, resume: str | None = None, live: LiveUpdate | None = None, started: float | None = None
) -> tuple[str, Path, list[WorkloadResult]]:
    """Run every workload of ``plan``; returns ``(run id, run directory, results)``. A plan with a
    budget is held to it from ``started`` (a ``time.monotonic()``; default: now), the time the
    command began."""
    keeper = None
    if plan.budget_s and plan.timing is not None:
        keeper = BudgetKeeper(plan.timing, (started if started is not None else time.monotonic()) + plan.budget_s, time.monotonic)
    session = RunSession(plan, hooks, progress, resume=resume, live=live, keeper=keeper)
    progress = session.progress
    scaled = f", scaled x{plan.scale:g}" if plan.scale != 1 else ""
    progress(f"run {session.run_id}: {len(plan.workloads)} workloads of {plan.model.name} on {plan.backend.name}, {plan.hardware.name}{scaled}")
    progress(expected_work(plan.workloads, closed_loop_guess=plan.expected is None))
    if plan.expected is not None:
        budget = f"; the budget is {minutes(plan.budget_s)} (--budget), the scale x{plan.scale:g} chosen to fit it" if plan.budget_s else ""
        progress(f"expected time: {plan.expected.describe()}{budget}")
    status = "failed"
    try:
        endpoint = session.start_backend()
        session.preflight(endpoint)
        hooks.run_started(session.info)
        for index in range(1, len(plan.workloads) + 1):
            session.results.append(session.run_workload(index, session.plan.workloads[index - 1], endpoint))
            session.keep_to_budget(index, endpoint)
        session.measure_quality(endpoint)
        status = "completed"
    except KeyboardInterrupt:
        status = "interrupted"
        if session.sampler is not None and session.sampler.tripped:
            raise Interrupted(
                f"stopped by the memory watchdog: less than {session.margin / 1e9:g} GB of memory stayed available; {session.resume_hint()}"
            ) from None
        raise Interrupted(f"interrupted: {len(session.results)} of {len(plan.workloads)} workloads kept; {session.resume_hint()}") from None
    finally:
        session.finish(status)
    return session.run_id, session.run_dir, session.results

"""Every hook Arena calls, typed and documented.

This module is the contract between the core and its plugins. A plugin is a module or object
with functions marked ``@arena_core.hookimpl`` whose names match the specs below; it may accept
any subset of a spec's parameters. The core calls each plugin's implementation on its own
(through :class:`arena_core.hooks.ArenaHooks`), so a plugin that raises is reported by name and
skipped instead of taking the others down.

Three kinds of hook:

* **collect** hooks receive a ``register`` callable; every call of it adds one item, and the core
  records which plugin registered what. Two plugins registering the same name is a conflict: the
  first registration (built-ins load before third parties) is kept, the second reported.
* **firstresult** hooks stop at the first implementation that returns something other than
  ``None``; ``tryfirst``/``trylast`` on the hookimpl decide the order.
* **notify** hooks tell observers what happened; their return values are ignored.

No hook is historic: plugins are all registered before the first call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    import click

    from arena_core.config import ArenaConfig
    from arena_core.types import (
        BackendSpec,
        BundleRequest,
        DescribedModel,
        HardwareDetection,
        HardwareProfile,
        ModelQuery,
        ModelSpec,
        OpenedBundle,
        PredictorSpec,
        QualitySuiteSpec,
        RendererSpec,
        RunInfo,
        RunnerSpec,
        RunResult,
        ScorerSpec,
        WorkloadSpec,
    )

PROJECT_NAME = "arena"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def arena_register_workloads(register: Callable[[WorkloadSpec], None]) -> None:
    """Register workloads: the traffic shapes Arena can measure.

    Kind: collect. Called once per plugin manager, the first time anything asks for the registry
    (``arena list``, ``arena run``, config validation).

    :param register: call it once per :class:`~arena_core.types.WorkloadSpec`. A workload is data
        (token lengths, concurrency, arrival process) plus the name of the runner that drives it.
    :return: nothing; anything returned is ignored.
    """


@hookspec
def arena_register_runners(register: Callable[[RunnerSpec], None]) -> None:
    """Register runners: load generators that turn a workload into request records.

    Kind: collect. Called once per plugin manager, the first time the registry is needed.

    :param register: call it once per :class:`~arena_core.types.RunnerSpec`. A runner names its
        instruments (``native`` and ``external``) and says through
        ``RunnerSpec.check_external`` whether its external tool is installed.
    :return: nothing; anything returned is ignored.
    """


@hookspec
def arena_register_backends(register: Callable[[BackendSpec], None]) -> None:
    """Register backends: lifecycles of inference servers (start, wait healthy, stop, logs).

    Kind: collect. Called once per plugin manager, the first time the registry is needed.

    :param register: call it once per :class:`~arena_core.types.BackendSpec`. A backend that
        measures a running server sets ``attaches`` (it is chosen for ``--base-url``); one that
        can serve a run with no model named offers an ``embedded`` run (the first registered with
        a ``default`` one is ``arena run``'s default; any is run by naming its backend alone).
    :return: nothing; anything returned is ignored.
    """


@hookspec
def arena_register_hardware(register: Callable[[HardwareProfile], None]) -> None:
    """Register hardware profiles: specifications with their sources, and which probes apply.

    Kind: collect. Called once per plugin manager, the first time the registry is needed.

    :param register: call it once per :class:`~arena_core.types.HardwareProfile`.
    :return: nothing; anything returned is ignored.
    """


@hookspec
def arena_register_models(register: Callable[[ModelSpec], None]) -> None:
    """Register model catalog entries: identity, size, precision and quality scores.

    Kind: collect. Called once per plugin manager, the first time the registry is needed.

    :param register: call it once per :class:`~arena_core.types.ModelSpec`. Every quality score
        carries its provenance; a score the vendor did not publish is ``None``, never ``0``.
    :return: nothing; anything returned is ignored.
    """


@hookspec
def arena_register_scorers(register: Callable[[ScorerSpec], None]) -> None:
    """Register scorers: functions from workload results and quality scores to a score.

    Kind: collect. Called once per plugin manager, the first time the registry is needed.

    :param register: call it once per :class:`~arena_core.types.ScorerSpec`. Cards and the
        leaderboard rank by the first registered with ``default``.
    :return: nothing; anything returned is ignored.
    """


@hookspec
def arena_register_predictors(register: Callable[[PredictorSpec], None]) -> None:
    """Register predictors: what a workload will do for a model on a machine and a backend,
    before it is measured, calibrated on stored runs, with the error ledger of its predictions.

    Kind: collect. Called once per plugin manager, the first time the registry is needed.

    :param register: call it once per :class:`~arena_core.types.PredictorSpec`. ``arena
        predict``, ``arena calibrate``, cards, the leaderboard and the site use the last
        registered with ``default`` (built-ins register first, so a third party's replaces the
        built-in one), else the first registered; with none registered they say so and show no
        prediction.
    :return: nothing; anything returned is ignored.
    """


@hookspec
def arena_register_quality_suites(register: Callable[[QualitySuiteSpec], None]) -> None:
    """Register quality suites: what the served model gets right, measured on the server after
    a run's workloads (``arena run``) or on its own (``arena quality``).

    Kind: collect. Called once per plugin manager, the first time the registry is needed.

    :param register: call it once per :class:`~arena_core.types.QualitySuiteSpec`. A run
        measures every suite registered with ``default`` unless ``--quality-suite`` names
        others; what each returns is stored with the run, shown on its card beside the vendor's
        published figure for the same benchmark, and scores a model that has no published one.
    :return: nothing; anything returned is ignored.
    """


@hookspec
def arena_register_renderers(register: Callable[[RendererSpec], None]) -> None:
    """Register renderers: output formats for one card (``arena card --format``) and for a whole
    store (``arena publish --format``).

    Kind: collect. Called once per plugin manager, the first time the registry is needed. The
    built-in ``text``, ``markdown``, ``json`` and ``site`` are registered through this hook too,
    by default plugins that can be disabled or replaced.

    :param register: call it once per :class:`~arena_core.types.RendererSpec`. Its callables
        receive a :class:`~arena_core.types.CardView` or a :class:`~arena_core.types.SiteView`:
        the figures the core computed, to lay out, not to recompute.
    :return: nothing; anything returned is ignored.
    """


@hookspec
def arena_register_commands(cli: click.Group) -> None:
    """Add commands to the ``arena`` command line.

    Kind: collect. Called once when the CLI is built, before arguments are parsed. The built-in
    commands (``plugins``, ``list``, ``show``, ``config``) are added through this hook too.

    :param cli: the top-level click group; call ``cli.add_command(...)``. A name that is already
        taken is a conflict and is reported against the later plugin.
    :return: nothing; anything returned is ignored.
    """


@hookspec(firstresult=True)
def arena_detect_hardware(config: ArenaConfig) -> HardwareDetection | None:
    """Say which hardware profile describes this machine.

    Kind: firstresult. Called when a run or ``arena hardware detect`` needs the profile and the
    configuration does not name one. Implementations are asked in order (``tryfirst`` first,
    ``trylast`` last) until one returns a result; the generic ``cpu-host`` detector is
    ``trylast``, so any plugin that recognises the machine wins over it.

    :param config: the loaded configuration (read-only).
    :return: a :class:`~arena_core.types.HardwareDetection` naming the profile and why, or
        ``None`` when this plugin does not recognise the machine.
    """


@hookspec(firstresult=True)
def arena_describe_model(query: ModelQuery) -> DescribedModel | None:
    """Describe a model Arena's catalog lacks from the files that describe it.

    Kind: firstresult. Called by ``arena predict --model-config SOURCE``, by ``arena run
    --backend vllm DIR`` (a folder or a cached Hugging Face id, with ``query.serve``), and when
    an attached server on this machine serves a folder. The built-in source (``arena_models``)
    reads a Hugging Face config.json.

    :param query: the source as the user gave it, and the facts they stated (precision,
        parameters, name), which take precedence over what the files say.
    :return: a :class:`~arena_core.types.DescribedModel` (its spec and what had to be assumed),
        or ``None`` when this plugin does not read such a source. A source it reads but finds
        wrong raises :class:`~arena_core.errors.UsageError` in one line starting with
        ``query.named_by``.
    """


@hookspec(firstresult=True)
def arena_open_bundle(request: BundleRequest) -> OpenedBundle | None:
    """Open and check a file that carries a run from elsewhere (a signed bundle).

    Kind: firstresult. Called by ``arena verify FILE`` and ``arena import FILE`` (and for each
    bundle of a folder given to ``arena import``). The built-in reader (``arena_bundles``) checks
    the signature, every file's digest, and every figure of the run recomputed from its records.

    :param request: the file, the empty folder to unpack it into, the registry (for the runners
        that recompute their results), the card renderer, and the keys the site trusts.
    :return: an :class:`~arena_core.types.OpenedBundle` once every check passes; ``None`` when
        this plugin does not read such a file. A bundle it reads that fails a check raises
        :class:`~arena_core.errors.UsageError` in one line naming what failed.
    """


@hookspec
def arena_run_started(run: RunInfo) -> None:
    """Observe the start of a run.

    Kind: notify. Called once per run, after the server answers and before the first workload.
    An observer that raises is reported and the run goes on.

    :param run: what is about to be measured: run id, model, hardware, backend, workloads, scale.
    :return: nothing; anything returned is ignored.
    """


@hookspec
def arena_run_finished(run: RunInfo, result: RunResult) -> None:
    """Observe the end of a run.

    Kind: notify. Called once per run, after every workload result is stored; called also when the run stopped early (``result.completed`` is then false), so
    exporters see partial results. An observer that raises is reported; the stored run is kept.

    :param run: the same object ``arena_run_started`` received.
    :param result: the workload results and the run's status.
    :return: nothing; anything returned is ignored.
    """

"""What the plugins registered: a frozen snapshot per plugin manager, and the ``register`` callable.

The collect hooks hand each plugin its own ``register``; :class:`RegistryBuilder` keeps what a
plugin registered apart until its hook returns, so a plugin that raises half-way contributes
nothing, and it records which plugin registered each name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

import attrs
from attrs import frozen

from arena_core.errors import UnknownNameError
from arena_core.types import (
    BackendSpec,
    HardwareProfile,
    MetricsDialect,
    ModelSpec,
    PredictorSpec,
    QualitySuiteSpec,
    RendererSpec,
    RunnerSpec,
    ScorerSpec,
    ServerDialect,
    WorkloadSpec,
)

T = TypeVar("T")


@frozen(kw_only=True)
class Kind:
    """One kind of registered thing: its plural (CLI) name, singular label, hook and class."""

    plural: str
    singular: str
    hook: str
    item_type: type


KINDS: Mapping[str, Kind] = MappingProxyType(
    {
        kind.plural: kind
        for kind in (
            Kind(plural="workloads", singular="workload", hook="arena_register_workloads", item_type=WorkloadSpec),
            Kind(plural="runners", singular="runner", hook="arena_register_runners", item_type=RunnerSpec),
            Kind(plural="backends", singular="backend", hook="arena_register_backends", item_type=BackendSpec),
            Kind(plural="hardware", singular="hardware", hook="arena_register_hardware", item_type=HardwareProfile),
            Kind(plural="models", singular="model", hook="arena_register_models", item_type=ModelSpec),
            Kind(plural="scorers", singular="scorer", hook="arena_register_scorers", item_type=ScorerSpec),
            Kind(plural="predictors", singular="predictor", hook="arena_register_predictors", item_type=PredictorSpec),
            Kind(plural="quality-suites", singular="quality-suite", hook="arena_register_quality_suites", item_type=QualitySuiteSpec),
            Kind(plural="renderers", singular="renderer", hook="arena_register_renderers", item_type=RendererSpec),
        )
    }
)


def find_kind(word: str) -> Kind | None:
    """The kind named by its plural or singular (``workloads`` or ``workload``)."""
    for kind in KINDS.values():
        if word in (kind.plural, kind.singular):
            return kind
    return None


@frozen(kw_only=True)
class Registration(Generic[T]):
    """One registered item and the plugin that registered it."""

    item: T
    plugin: str


@frozen
class Registry:
    """Everything registered, by kind and name, in registration order."""

    by_kind: Mapping[str, Mapping[str, Registration[Any]]]

    def names(self, kind: str) -> list[str]:
        return list(self.by_kind[kind])

    def registrations(self, kind: str) -> Iterator[Registration[Any]]:
        return iter(self.by_kind[kind].values())

    def lookup(self, kind: str, name: str) -> Registration[Any]:
        """The registration of ``name``; :class:`UnknownNameError` lists the known names."""
        found = self.by_kind[kind].get(name)
        if found is None:
            raise UnknownNameError(KINDS[kind].singular, name, self.names(kind))
        return found

    def get(self, kind: str, name: str) -> Any:
        return self.lookup(kind, name).item

    @property
    def workloads(self) -> Mapping[str, Registration[WorkloadSpec]]:
        return self.by_kind["workloads"]

    @property
    def hardware(self) -> Mapping[str, Registration[HardwareProfile]]:
        return self.by_kind["hardware"]

    @property
    def models(self) -> Mapping[str, Registration[ModelSpec]]:
        return self.by_kind["models"]

    @property
    def runners(self) -> Mapping[str, Registration[RunnerSpec]]:
        return self.by_kind["runners"]

    @property
    def backends(self) -> Mapping[str, Registration[BackendSpec]]:
        return self.by_kind["backends"]

    def serving_backend(self, name: str, facts: Mapping[str, Any]) -> BackendSpec | None:
        """The backend whose scheduling served a run of backend ``name`` with ``facts`` (its
        card's ``backend_facts``): that backend, or, where it attaches to a server and declares
        none, the registered backend of the engine its facts say answered (``engine``, which it
        identified from the server's own answers), at that engine's scheduling. The slots the
        server reported are the run's server settings, as a started server's are
        (``ModelCard.server_settings``). None where the backend is not registered here."""
        found = self.backends.get(name)
        if found is None:
            return None
        backend = found.item
        engine = self.backends.get(facts.get("engine", "")) if backend.scheduling is None and isinstance(facts.get("engine"), str) else None
        if engine is None or engine.item.scheduling is None:
            return backend
        return attrs.evolve(backend, scheduling=engine.item.scheduling)

    def metrics_dialects(self) -> tuple[MetricsDialect, ...]:
        """What every registered backend's server calls its ``/metrics`` figures: telemetry reads
        them all on any server, since an attached one may be any engine."""
        return tuple(r.item.metrics for r in self.backends.values() if r.item.metrics is not None)

    def server_dialects(self) -> tuple[ServerDialect, ...]:
        """What every registered backend's server says of its model and machine beyond the
        OpenAI API: identity reads them all on any server, as telemetry reads the metrics."""
        return tuple(r.item.dialect for r in self.backends.values() if r.item.dialect is not None)

    def with_role(self, role: str) -> str | None:
        """The first workload registered with ``role`` (:data:`~arena_core.types.ROLES`), or None."""
        return next((r.item.name for r in self.workloads.values() if role in r.item.roles), None)

    def hardware_elsewhere(self) -> list[str]:
        """The profiles that can name another machine (not one read off this machine)."""
        return [r.item.name for r in self.hardware.values() if not r.item.this_machine]


class RegistryBuilder:
    """Collects registrations hook by hook and plugin by plugin; ``build()`` freezes them."""

    def __init__(self, report: Callable[[str, str], None]) -> None:
        self._report = report
        self._items: dict[str, dict[str, Registration[Any]]] = {kind: {} for kind in KINDS}

    def collect(self, kind: Kind, plugin: str, call: Callable[..., None]) -> None:
        """Run ``call(register=...)`` for one plugin; keep its items only if it returns normally.

        ``call`` raising is left to the caller (which reports it); items of the wrong type and
        names already taken are reported against ``plugin`` and skipped one by one.
        """
        pending: list[Any] = []
        call(register=pending.append)
        taken = self._items[kind.plural]
        for item in pending:
            if not isinstance(item, kind.item_type):
                self._report(plugin, f"{kind.hook} registered a {type(item).__name__}, expected {kind.item_type.__name__}")
            elif item.name in taken:
                first = taken[item.name].plugin
                self._report(plugin, f"{kind.singular} {item.name!r} is already registered by plugin {first!r}; skipped")
            else:
                taken[item.name] = Registration(item=item, plugin=plugin)

    def build(self) -> Registry:
        return Registry(MappingProxyType({kind: MappingProxyType(dict(items)) for kind, items in self._items.items()}))

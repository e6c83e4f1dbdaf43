"""The default predictor as commands, cards, the leaderboard and the site reach it, and what the
store keeps for it: each hardware and engine's calibration, and the fits of the error ledger
(keyed by the runs each saw, so a card view reads them instead of fitting again)."""

from __future__ import annotations

import statistics
from collections.abc import Iterator, MutableMapping, Sequence
from pathlib import Path

from attrs import frozen
from cattrs.errors import BaseValidationError

from arena_core.converter import CONVERTER
from arena_core.errors import UsageError
from arena_core.files import read_json_file, write_json_atomic
from arena_core.loadgen.stats import nearest_rank
from arena_core.registry import Registry
from arena_core.types import BackendSpec, Calibration, HardwareProfile, LedgerLine, ModelCard, ModelSpec, PredictionSetup, Predictor, PredictorSpec

#: What every surface says where prediction would be and no predictor is registered.
NO_PREDICTOR = "no predictor is registered (the arena_prediction plugin is disabled?): predictions not shown"
#: The folder of the store that holds calibrations and the ledger's fits (not a run).
CALIBRATIONS = "calibrations"
#: A fits file larger than this is not read (a store is outside data too), and the fits kept
#: at most: each new set of runs adds a fit per fold, and the oldest go first.
MAX_FITS_BYTES = 64 * 1024 * 1024
MAX_FITS = 10_000
#: A calibration is a dozen figures: a file larger than this is not one.
MAX_CALIBRATION_BYTES = 64 * 1024


@frozen(kw_only=True)
class ChosenPredictor:
    """The predictor cards and commands use, and the spec it came from."""

    spec: PredictorSpec
    predictor: Predictor


def default_predictor(registry: Registry) -> ChosenPredictor | None:
    """The last predictor registered as ``default`` (built-ins register first, so a third party
    that says it is the default replaces the built-in one), else the first registered; ``None``
    when none is (prediction is then absent everywhere, and said so)."""
    specs = [registration.item for registration in registry.registrations("predictors")]
    if not specs:
        return None
    spec = next((s for s in reversed(specs) if s.default), specs[0])
    return ChosenPredictor(spec=spec, predictor=spec.create(registry))


def require_predictor(registry: Registry) -> ChosenPredictor:
    """:func:`default_predictor`, or a one-line :class:`UsageError` for a command that needs one."""
    chosen = default_predictor(registry)
    if chosen is None:
        raise UsageError(NO_PREDICTOR)
    return chosen


def predicting_backend(registry: Registry, name: str | None) -> BackendSpec:
    """The backend named, else the first registered that declares how it schedules."""
    if name:
        return registry.get("backends", name)
    found = next((r.item for r in registry.registrations("backends") if r.item.scheduling is not None), None)
    if found is None:
        raise UsageError("no registered backend declares its scheduling: give --backend")
    return found


def engine_name(backend: BackendSpec) -> str:
    """The name a backend's runs are calibrated under: its scheduling's engine, else its own."""
    return backend.scheduling.engine if backend.scheduling is not None else backend.name


def calibration_path(store: Path, hardware: str, engine: str) -> Path:
    return store / CALIBRATIONS / f"{hardware}--{engine}.json"


def save_calibration(store: Path, calibration: Calibration) -> Path:
    path = calibration_path(store, calibration.hardware, calibration.backend)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, CONVERTER.unstructure(calibration))
    return path


def load_calibration(store: Path, hardware: str, backend: BackendSpec, *, path: Path | None = None) -> Calibration | None:
    """The stored fit of ``hardware`` and ``backend``'s engine (or the one in ``path``), or None
    (none stored, or not readable)."""
    path = path or calibration_path(store, hardware, engine_name(backend))
    try:
        data = read_json_file(path, max_bytes=MAX_CALIBRATION_BYTES)
        # a file of another shape (a list, a number) is no calibration: the converter reads only objects
        return CONVERTER.structure(data, Calibration) if isinstance(data, dict) else None
    except (OSError, ValueError, TypeError, KeyError, BaseValidationError):  # a damaged file is no calibration, never a crash
        return None


class StoredFits(MutableMapping[str, dict]):
    """The ledger's fits of one predictor, kept in the store between commands. A file that is
    missing, too large or damaged is an empty cache (the predictor checks each value it reads);
    :meth:`save` writes it back when something was added, and a store that cannot be written
    keeps nothing, never fails the command."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fits: dict[str, dict] = {}
        self._changed = False
        self._used: set[str] = set()
        try:
            data = read_json_file(path, max_bytes=MAX_FITS_BYTES)
            if isinstance(data, dict):
                self._fits = {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, dict)}
        except (OSError, ValueError):
            self._fits = {}

    @classmethod
    def of(cls, store: Path, predictor: str) -> StoredFits:
        return cls(store / CALIBRATIONS / f"ledger-fits--{predictor}.json")

    def __getitem__(self, key: str) -> dict:
        found = self._fits[key]
        self._used.add(key)
        return found

    def __setitem__(self, key: str, value: dict) -> None:
        self._used.add(key)
        self._fits.pop(key, None)
        self._fits[key] = value
        while len(self._fits) > MAX_FITS:
            del self._fits[next(iter(self._fits))]
        self._changed = True

    def __delitem__(self, key: str) -> None:
        del self._fits[key]
        self._changed = True

    def __iter__(self) -> Iterator[str]:
        return iter(self._fits)

    def __len__(self) -> int:
        return len(self._fits)

    def save(self, *, prune: bool = False) -> None:
        """Write the fits back when something was added; ``prune``: keep only those read or made
        since they were loaded (after a ledger of the whole store: the rest were made of runs
        since added to or taken from it, and would never be read again)."""
        if prune and set(self._fits) - self._used:
            self._fits = {key: value for key, value in self._fits.items() if key in self._used}
            self._changed = True
        if not self._changed:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_json_atomic(self.path, self._fits)
            self._changed = False
        except OSError:  # a read-only store: the fits are made again next time
            pass


def why_not_predicted(card: ModelCard, registry: Registry) -> str:
    """Why the default predictor makes no prediction for ``card``'s run (its backend declares no
    scheduling, say), as the predictor says it; empty when it covers the run or none is registered."""
    chosen = default_predictor(registry)
    backend = registry.serving_backend(card.backend, card.backend_facts)  # an attached server: the engine that answered
    if chosen is None:
        return ""
    if backend is None:
        return f"backend {card.backend!r} is not registered here: not predicted"
    model, profile = registry.models.get(card.model), registry.hardware.get(card.hardware)
    try:
        spec = model.item if model else ModelSpec(name=card.model, title=card.model_title, description="", hf_id="", precision=card.model_facts.precision)
        # the predictor's own reason first: a run on an unnamed machine may not be covered anyway
        hardware = (
            profile.item if profile else HardwareProfile(name=card.hardware, title=card.hardware_title, description="", memory_gb=None, unified_memory=False)
        )
        why = chosen.predictor.coverage(PredictionSetup(model=spec, hardware=hardware, backend=backend))
    except (TypeError, ValueError):  # a name the catalog's rules refuse: nothing to predict it as
        return "the run's model cannot be described to the predictor: not predicted"
    if why:
        return why
    return "" if profile else f"hardware {card.hardware!r} is not registered here: not predicted"


def ledger_of(store: Path, cards: Sequence[ModelCard], registry: Registry, only: str | None = None, *, whole_store: bool = False) -> list[LedgerLine] | None:
    """The default predictor's error ledger of ``cards`` (or of run ``only``), with the fits the
    store keeps; ``None`` when no predictor is registered. ``whole_store``: ``cards`` are every run
    of the store, so the fits no ledger of it reads any more are dropped."""
    chosen = default_predictor(registry)
    if chosen is None:
        return None
    fits = StoredFits.of(store, chosen.spec.name)
    lines = chosen.predictor.ledger(cards, only=only, fits=fits)
    fits.save(prune=whole_store and only is None)
    return lines


def ledger_summary(lines: Sequence[LedgerLine]) -> list[tuple[str, str, int, float, float]]:
    """(workload, metric, count, median, p90) of the absolute % errors, per workload and metric:
    ``tps`` (per-user decode, closed loop), ``output_tps`` (open loop), ``ttft`` and ``site_tps``
    (the seed site's G)."""
    rows = []
    for workload in sorted({line.workload for line in lines}):
        mine = [line for line in lines if line.workload == workload]
        for metric in ("tps", "ttft", "site_tps"):
            errors = sorted(e for line in mine if (e := line.error(metric)) is not None)
            if errors:
                label = "output_tps" if metric == "tps" and all(line.open_loop for line in mine) else metric
                rows.append((workload, label, len(errors), statistics.median(errors), nearest_rank(errors, 90)))
    return rows


def interval_coverage(lines: Sequence[LedgerLine], metric: str, *, open_loop: bool | None = None) -> tuple[int, int]:
    """(inside, of): how many of the ledger's measured ``tps`` or ``ttft`` figures fall inside the
    interval predicted for them without their own run, of those with an interval; ``open_loop``:
    of that kind of result only (an open-loop result's tokens/s is its output throughput)."""
    judged = [inside for line in lines if open_loop in (None, line.open_loop) and (inside := line.inside(metric)) is not None]
    return sum(judged), len(judged)

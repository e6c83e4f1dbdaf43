"""Predictors: what a workload will do for a model on a machine and a backend, before anyone
measures it, and how far such predictions were off on the runs that were measured.

A predictor is the scorer's sibling: a plugin registers a :class:`PredictorSpec`, whose factory
returns a :class:`Predictor`. The built-in one simulates the engine step by step
(``plugins/arena_prediction``); another may be a lookup table or a vendor's model. Cards, the
leaderboard, the site and ``arena predict`` call the default predictor and show what it says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from attrs import field, frozen

from arena_core.types.backends import BackendSpec
from arena_core.types.cards import ModelCard
from arena_core.types.hardware import HardwareProfile
from arena_core.types.models import ModelSpec
from arena_core.types.names import valid_name
from arena_core.types.results import RequestRecord
from arena_core.types.workloads import WorkloadSpec

if TYPE_CHECKING:
    from arena_core.registry import Registry


@frozen(kw_only=True)
class Figures:
    """A workload's predicted figures, as its runner reports them. ``site_tps`` is the seed
    site's G (scoring.md): closed loop, llama-benchy's batch decode t/s (tokens after each
    request's first ÷ from the first first token to the last token, a mean over rounds); open
    loop, total (input + output) token throughput ÷ peak concurrent requests."""

    per_user_tps: float | None
    total_tps: float | None
    ttft_p50_s: float | None
    bound: str
    site_tps: float | None = None


@frozen(kw_only=True)
class WorkloadPrediction:
    """One workload's central figures and their interval: ``low`` the slow end, ``high`` the fast."""

    workload: str
    central: Figures
    low: Figures
    high: Figures
    notes: tuple[str, ...] = ()


@frozen(kw_only=True)
class Calibration:
    """A stored fit of a predictor to the runs of one hardware profile and engine (the engine
    its backend's :class:`~arena_core.types.Scheduling` names): its parameters, from how many
    results, and its in-sample median errors."""

    hardware: str
    backend: str
    #: the predictor's fitted parameters (the built-in simulator's efficiencies), by name
    efficiency: Mapping[str, float]
    runs: int
    results: int
    fitted_at: str
    median_error_tps: float | None = None
    median_error_ttft: float | None = None
    #: the predictor that fitted it; empty in a calibration stored before predictors had names
    #: (the built-in step simulator's, which reads it as its own)
    predictor: str = ""
    #: how the fit does where a prediction is used, by situation (the predictor's own leave-out
    #: kinds: a run, a family, an engine version...): its figures there, by name
    situations: Mapping[str, Mapping[str, float]] = field(factory=dict)
    #: what the fit learnt from, by what a situation is judged on ("models", "families", ...)
    fitted_to: Mapping[str, tuple[str, ...]] = field(factory=dict)


@frozen(kw_only=True)
class CalibrationReport:
    """What ``calibrate`` found: the fit to store, and lines saying how well it fits."""

    calibration: Calibration
    lines: tuple[str, ...] = ()


@frozen(kw_only=True)
class LedgerLine:
    """One measured result beside its prediction made without its own run (tier 1: fitted to
    other runs; tier 0: the predictor's priors)."""

    run_id: str
    workload: str
    tier: int
    predicted_tps: float | None
    measured_tps: float | None
    predicted_ttft_s: float | None
    measured_ttft_s: float | None
    #: an open-loop result: its tokens/s is the output throughput, not one user's decode speed
    open_loop: bool = False
    #: the seed site's G (scoring.md), predicted and measured
    predicted_site_tps: float | None = None
    measured_site_tps: float | None = None
    #: the prediction's interval (its slow and fast ends) of tokens/s and TTFT, where the simulator
    #: could finish both ends; what the interval's coverage is measured on
    predicted_tps_interval: tuple[float, float] | None = None
    predicted_ttft_interval_s: tuple[float, float] | None = None

    def inside(self, metric: str) -> bool | None:
        """Whether the measured ``tps`` or ``ttft`` falls inside the predicted interval (None:
        no interval or no measurement)."""
        interval, actual = {"tps": (self.predicted_tps_interval, self.measured_tps), "ttft": (self.predicted_ttft_interval_s, self.measured_ttft_s)}[metric]
        if interval is None or actual is None:
            return None
        return min(interval) <= actual <= max(interval)

    def error(self, metric: str) -> float | None:
        """Absolute % error of ``tps``, ``ttft`` or ``site_tps`` (the seed's G)."""
        predicted, actual = {
            "tps": (self.predicted_tps, self.measured_tps),
            "ttft": (self.predicted_ttft_s, self.measured_ttft_s),
            "site_tps": (self.predicted_site_tps, self.measured_site_tps),
        }[metric]
        return abs(predicted - actual) / actual * 100 if predicted and actual else None


@frozen(kw_only=True)
class PredictionSetup:
    """What a prediction is for: a model, a hardware profile (its run-time figures measured) and
    the backend whose scheduling is simulated, with the stored calibration of that hardware and
    engine when there is one."""

    model: ModelSpec
    hardware: HardwareProfile
    backend: BackendSpec
    calibration: Calibration | None = None
    #: bytes per element of the KV cache the server keeps (2: 16 bits, the engines' default;
    #: 1: an FP8 cache, as ``--kv-cache-dtype fp8`` makes it)
    kv_bytes_per_element: float = 2.0
    #: the engine's version, where known ("0.20.1"): the precision paths the backend declares
    #: per version (``Scheduling.precision_paths``) hold for some versions only
    engine_version: str = ""
    #: the server was told to compute its low-precision checkpoint's GEMMs in 16 bits, through a
    #: weight-only kernel (vLLM's Marlin), whatever its version: as a card's
    #: ``ServerSettings.sixteen_bit_compute`` says of a run
    sixteen_bit_compute: bool = False


#: What a predictor keeps in the store between commands (fits of sets of stored runs, the ledger
#: lines made with them): a key that names what a value was made from, and the value as JSON
#: (objects, lists, numbers, strings). The store may hand back anything: a predictor checks each
#: value it reads.
FitCache = MutableMapping[str, Any]


class Predictor(Protocol):
    """What a predictor's factory returns."""

    def coverage(self, setup: PredictionSetup) -> str | None:
        """Why ``setup`` cannot be predicted (a backend that declares no scheduling, a model
        with no size); ``None`` when it can."""
        ...

    def basis(self, setup: PredictionSetup) -> str:
        """One line saying what the figures rest on (tier 0: specs and priors; tier 1: a calibration)."""
        ...

    def predict(self, workload: WorkloadSpec, setup: PredictionSetup) -> WorkloadPrediction:
        """``workload``'s figures with their interval; ``ValueError`` when it cannot be served."""
        ...

    def serve(self, workload: WorkloadSpec, setup: PredictionSetup, *, at: str = "central") -> tuple[RequestRecord, ...]:
        """``workload``'s requests as the prediction serves them, as request records (one run of
        a closed-loop workload), so that the SLO rule that judges measured requests judges
        predicted ones too; ``at``: "central", or an end of the prediction's interval, "slow" or
        "fast" (a predicted capacity's interval)."""
        ...

    def calibrate(self, cards: Sequence[ModelCard], hardware: str, backend: BackendSpec, *, fits: FitCache | None = None) -> CalibrationReport:
        """A fit to the stored ``cards`` of ``hardware`` served by ``backend``'s engine;
        :class:`~arena_core.errors.UsageError` when none can be fitted. ``fits``: the fits the
        store keeps (its ledger's), to read and add to (``arena calibrate`` passes it only to a
        predictor whose ``calibrate`` takes it)."""
        ...

    def ledger(self, cards: Sequence[ModelCard], *, only: str | None = None, fits: FitCache | None = None) -> list[LedgerLine]:
        """Each result of ``cards`` (or of run ``only``) beside its prediction made without its
        own run; ``fits`` keeps fits between calls, keyed by the runs each saw."""
        ...


@frozen(kw_only=True)
class PredictorSpec:
    """A predictor. ``create(registry)`` returns a :class:`Predictor` that reads the registered
    workloads, models, hardware and backends. Cards, the leaderboard, the site and ``arena
    predict`` use the last registered with ``default`` (so a third party's replaces the
    built-in one), else the first registered."""

    name: str = field(validator=valid_name)
    description: str
    create: Callable[[Registry], Predictor]
    default: bool = False

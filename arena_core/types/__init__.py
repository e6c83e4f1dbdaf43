"""Value classes that cross a plugin boundary: frozen, keyword-only, validated on construction.

Plugins build these and hand them to ``register``; the core never accepts dicts in their place.
Config files and stored JSON are turned into them by the one converter in :mod:`arena_core.converter`.
One module per hook kind; every name is importable from here.
"""

from arena_core.types.backends import (
    Backend,
    BackendRequest,
    BackendSpec,
    EmbeddedRun,
    EndpointSettings,
    MetricsDialect,
    PrecisionPath,
    Scheduling,
    ServerAnswers,
    ServerDialect,
    version_numbers,
)
from arena_core.types.cards import (
    SERVER_COUNTS,
    CardLayout,
    CardSlo,
    CardWorkload,
    HardwareRoofs,
    ModelCard,
    ModelFacts,
    ServerSettings,
    WorkloadLegend,
    benches_count,
)
from arena_core.types.hardware import HardwareDetection, HardwareProfile
from arena_core.types.models import DescribedModel, ModelArchitecture, ModelQuery, ModelSpec, QualityScore
from arena_core.types.names import NAME_PATTERN, LatencyMode, LoopKind, slug
from arena_core.types.prediction import (
    Calibration,
    CalibrationReport,
    Figures,
    FitCache,
    LedgerLine,
    PredictionSetup,
    Predictor,
    PredictorSpec,
    WorkloadPrediction,
)
from arena_core.types.quality import MeasuredQuality, QualityRequest, QualitySuiteSpec
from arena_core.types.renderers import CardView, CostLine, PredictionView, Progress, RendererSpec, SiteView
from arena_core.types.results import RequestRecord, RunInfo, RunResult, Verdict, WorkloadResult
from arena_core.types.runners import Endpoint, ReportReader, RunContext, Runner, RunnerSpec, RunOptions, ToolAvailability
from arena_core.types.scoring import CohortScorer, Score, Scorer, ScorerSpec, publishable
from arena_core.types.workloads import MIN_SCALED_TOKENS, ROLES, SHAREGPT_TYPICAL_TOKENS, ClosedLoopShape, OpenLoopShape, WorkloadShape, WorkloadSpec

__all__ = [
    "MeasuredQuality",
    "QualityRequest",
    "QualitySuiteSpec",
    "MIN_SCALED_TOKENS",
    "NAME_PATTERN",
    "slug",
    "ROLES",
    "Backend",
    "BackendRequest",
    "BackendSpec",
    "Calibration",
    "CalibrationReport",
    "CardLayout",
    "CardView",
    "CostLine",
    "Progress",
    "RendererSpec",
    "SiteView",
    "PredictionView",
    "CardSlo",
    "CardWorkload",
    "ClosedLoopShape",
    "CohortScorer",
    "EmbeddedRun",
    "Endpoint",
    "EndpointSettings",
    "Figures",
    "FitCache",
    "HardwareDetection",
    "HardwareProfile",
    "HardwareRoofs",
    "LatencyMode",
    "LedgerLine",
    "LoopKind",
    "MetricsDialect",
    "ServerAnswers",
    "ServerDialect",
    "ModelArchitecture",
    "ModelCard",
    "ModelFacts",
    "ModelSpec",
    "ModelQuery",
    "DescribedModel",
    "OpenLoopShape",
    "PredictionSetup",
    "Predictor",
    "PredictorSpec",
    "QualityScore",
    "ReportReader",
    "RequestRecord",
    "RunContext",
    "RunInfo",
    "RunOptions",
    "RunResult",
    "Runner",
    "RunnerSpec",
    "PrecisionPath",
    "version_numbers",
    "Scheduling",
    "Score",
    "Scorer",
    "ScorerSpec",
    "publishable",
    "SERVER_COUNTS",
    "SHAREGPT_TYPICAL_TOKENS",
    "ServerSettings",
    "ToolAvailability",
    "Verdict",
    "WorkloadLegend",
    "benches_count",
    "WorkloadPrediction",
    "WorkloadResult",
    "WorkloadShape",
    "WorkloadSpec",
]

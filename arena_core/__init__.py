"""Arena: an open benchmark arena for LLM inference servers.

This package is the small core: hook specifications, the plugin manager, value classes,
configuration and the CLI. Plugins import what they need from here and from nowhere else in
``arena_core``.
"""

__version__ = "0.1.0"

from arena_core.errors import ArenaError, ConfigError, PluginError, UnknownNameError, UsageError
from arena_core.hooks import ArenaHooks
from arena_core.hookspecs import hookimpl, hookspec
from arena_core.plugins import BUILTIN_PLUGINS, ENTRY_POINT_GROUP, PluginInfo, PluginProblem, make_plugin_manager
from arena_core.registry import Registration, Registry
from arena_core.types import (
    Backend,
    BackendRequest,
    BackendSpec,
    CardWorkload,
    ClosedLoopShape,
    Endpoint,
    HardwareDetection,
    HardwareProfile,
    ModelArchitecture,
    ModelCard,
    ModelSpec,
    OpenLoopShape,
    QualityScore,
    RequestRecord,
    RunContext,
    Runner,
    RunnerSpec,
    RunInfo,
    RunOptions,
    RunResult,
    Score,
    ScorerSpec,
    ToolAvailability,
    Verdict,
    WorkloadResult,
    WorkloadSpec,
)

__all__ = [
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "ArenaError",
    "ArenaHooks",
    "Backend",
    "BackendRequest",
    "BackendSpec",
    "CardWorkload",
    "ClosedLoopShape",
    "ConfigError",
    "Endpoint",
    "HardwareDetection",
    "HardwareProfile",
    "ModelArchitecture",
    "ModelCard",
    "ModelSpec",
    "OpenLoopShape",
    "PluginError",
    "PluginInfo",
    "PluginProblem",
    "QualityScore",
    "Registration",
    "Registry",
    "RequestRecord",
    "RunContext",
    "RunInfo",
    "RunOptions",
    "RunResult",
    "Score",
    "Runner",
    "RunnerSpec",
    "ScorerSpec",
    "ToolAvailability",
    "UnknownNameError",
    "UsageError",
    "Verdict",
    "WorkloadResult",
    "WorkloadSpec",
    "__version__",
    "hookimpl",
    "hookspec",
    "make_plugin_manager",
]

"""Arena: an open benchmark arena for LLM inference servers.

This package is the small core. Its public names -- ``__all__`` below, and nothing else --
are the contract with plugins: hookspec markers, the plugin manager, value classes, errors,
the runner kit (the measuring instrument of :mod:`arena_core.loadgen`, re-exported here), the
model cards of stored runs (``load_cards``), for scorers and predictors used from plain Python,
the tables of bytes per weight and per KV element and the ``bounds`` on outside figures (for a
predictor), and what a command plugin needs (``CliApp``, ``render_table``, ``CONVERTER`` for its own TOML, and the
store: ``read_manifest``, ``verify_run``, ``adopt_run`` for a run measured on another box,
``unpack_folder``, the one door an archive from outside comes in by), and
the memory watchdog's margin (``watchdog_margin_bytes``) for a backend that sizes its server,
``Pulse``, which keeps a long command from going silent, ``card_kit``, the rows the built-in
renderers lay a card out from (for a renderer of another format), and ``launch_kit``, what a
backend that starts a server on this machine shares (``LocalServer``).
Plugins import from ``arena_core`` and from nowhere else in it; a test walks ``plugins/`` and
``examples/`` and fails on any other import.
"""

__version__ = "0.1.0"

from arena_core import bounds
from arena_core.archives import is_packed, unpack_folder
from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.converter import CONVERTER
from arena_core.errors import ArenaError, ConfigError, PluginError, ToolFailed, UnknownNameError, UsageError
from arena_core.files import parse_json, read_file_bytes, read_json_file, write_json_atomic
from arena_core.hooks import ArenaHooks
from arena_core.hookspecs import hookimpl, hookspec
from arena_core.loadgen import *  # noqa: F403 -- the runner kit; its names are loadgen.__all__
from arena_core.loadgen import __all__ as _RUNNER_KIT
from arena_core.plugins import BUILTIN_PLUGINS, ENTRY_POINT_GROUP, PluginInfo, PluginProblem, make_plugin_manager
from arena_core.redaction import holds_secret
from arena_core.redaction import remember as remember_secret
from arena_core.registry import Registration, Registry
from arena_core.report import kit as card_kit
from arena_core.report import render_table
from arena_core.results.cards import load_card, load_cards
from arena_core.results.views import standalone_card
from arena_core.run import launch as launch_kit
from arena_core.run.integrity import sha256_of
from arena_core.run.integrity import verify as verify_run
from arena_core.run.manifest import read_manifest
from arena_core.run.pulse import Pulse
from arena_core.run.roofline import BYTES_PER_PARAM, GGUF_TYPES, KV_CACHE_BYTES, bytes_per_param, known_precision
from arena_core.run.store import adopt_run, find_run, load_result, workload_dir
from arena_core.run.telemetry import watchdog_margin_bytes
from arena_core.secrets import check_key, read_api_key, read_secret
from arena_core.types import *  # noqa: F403 -- the value classes; their names are types.__all__
from arena_core.types import __all__ as _TYPES

__all__ = [
    "BUILTIN_PLUGINS",
    "BYTES_PER_PARAM",
    "CONVERTER",
    "GGUF_TYPES",
    "KV_CACHE_BYTES",
    "CliApp",
    "ENTRY_POINT_GROUP",
    "ArenaError",
    "ArenaHooks",
    "ConfigError",
    "PluginError",
    "PluginInfo",
    "PluginProblem",
    "Pulse",
    "Registration",
    "Registry",
    "ToolFailed",
    "UnknownNameError",
    "UsageError",
    "__version__",
    "adopt_run",
    "load_result",
    "find_run",
    "workload_dir",
    "unpack_folder",
    "is_packed",
    "bounds",
    "bytes_per_param",
    "known_precision",
    "card_kit",
    "launch_kit",
    "hookimpl",
    "check_key",
    "echo",
    "hookspec",
    "load_card",
    "load_cards",
    "standalone_card",
    "make_plugin_manager",
    "parse_json",
    "read_json_file",
    "read_file_bytes",
    "read_api_key",
    "read_secret",
    "holds_secret",
    "remember_secret",
    "read_manifest",
    "render_table",
    "sha256_of",
    "verify_run",
    "watchdog_margin_bytes",
    "write_json_atomic",
    *_RUNNER_KIT,
    *_TYPES,
]

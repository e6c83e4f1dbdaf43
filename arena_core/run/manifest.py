"""The run record: ``RUN/manifest.json`` as a frozen :class:`Manifest`.

It says what was measured and how (model, hardware profile, backend, instrument, scale, options),
what the server was (its facts, its memory), how far the run got (``status``), and, once the run
ends, the SHA-256 of every results file (``files``). :func:`write_manifest` is the one function
that writes it; :func:`read_manifest` reads it back, manifests written by earlier versions too.
Nothing secret is in it: the endpoint's key never is, a base URL carries no credentials.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from attrs import field, frozen
from attrs.validators import deep_iterable

from arena_core import bounds
from arena_core.converter import CONVERTER, structure_problems, with_todays_names
from arena_core.errors import UsageError
from arena_core.files import read_json_file, write_json_atomic
from arena_core.redaction import redact
from arena_core.types import HardwareProfile, MeasuredQuality, QualityScore
from arena_core.types.names import valid_name

MANIFEST = "manifest.json"
#: A manifest is tens of kilobytes (its commands, facts and file hashes); a file past this is not one.
MAX_MANIFEST_BYTES = 16 * 2**20
MEASURED_BY_ARENA = "measured by Arena"

RunStatus = Literal["running", "completed", "interrupted", "failed"]


@frozen(kw_only=True)
class ModelMemory:
    """The memory the model takes ("VRAM" on the card) and where the figure comes from."""

    gb: float = field(validator=bounds.Bound(0, 1_000_000))
    source: str


@frozen(kw_only=True)
class TelemetrySetup:
    """Which probes sampled the run, and why any could not (NVML missing, say)."""

    probes: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@frozen(kw_only=True)
class Manifest:
    """One stored run. Measured runs fill the options; imported ones say where they came from
    (``source``, ``imported_at``, ``measured_with``)."""

    run_id: str
    arena_version: str
    status: RunStatus
    started_at: str
    finished_at: str | None = None
    model: str
    backend: str
    hardware: str
    hardware_reason: str = ""
    hardware_profile: HardwareProfile | None = None
    instrument: str
    scale: float = 1.0
    #: Names (no path): each is a folder of the run (``workloads/NAME``), so a manifest from
    #: outside cannot point a reader at a file elsewhere.
    workloads: tuple[str, ...] = field(default=(), validator=deep_iterable(valid_name))
    #: The server measured, when Arena attached to one (resume attaches to it again).
    base_url: str | None = None
    config_source: str | None = None
    #: The configuration as read (names of key variables and files only, never a key).
    config: Mapping[str, Any] = field(factory=dict)
    exact_output: bool = False
    #: Arguments the user gave for the command line of the server Arena started (``--server-arg``).
    server_args: tuple[str, ...] = ()
    request_timeout_s: float | None = None
    tokenizer: str | None = None
    dataset: str | None = None
    corpus: str | None = None
    backend_facts: Mapping[str, Any] = field(factory=dict)
    model_memory: ModelMemory | None = None
    telemetry: TelemetrySetup | None = None
    #: Each workload's reference-tool command line, computed once when the run starts.
    commands: Mapping[str, str] = field(factory=dict)
    #: SHA-256 of every results file, recorded when the run ends (``arena verify``).
    files: Mapping[str, str] | None = None
    #: SHA-256 of the manifest's own content (all but this field), written with ``files``: an
    #: edit of the manifest itself -- a figure, a hash -- is caught by ``arena verify`` too.
    seal: str | None = None
    source: str = MEASURED_BY_ARENA
    imported_at: str | None = None
    measured_with: str | None = None
    #: What an imported card says of its model, for a model Arena's catalog may not know: its
    #: title, quality scores (with their provenance) and facts (vendor, parameters, architecture,
    #: the publisher's own scores); the catalog's entry is used where these are empty.
    model_title: str | None = None
    #: the time budget the run's scale was chosen to fit (``--budget``), and the time it was
    #: expected to take, said before it started (:mod:`arena_core.run.budget`); None: no budget
    budget_s: float | None = None
    #: ``--precision`` (a relative margin) and its cap in seconds per workload; None: not asked
    precision: float | None = None
    precision_cap_s: float | None = None
    expected_s: float | None = None
    #: what holding the run to its budget changed while it ran (a smaller scale for the last
    #: workloads, fewer quality items), in words (:class:`~arena_core.run.budget.BudgetKeeper`)
    budget_changes: tuple[str, ...] = ()
    quality: tuple[QualityScore, ...] = ()
    model_facts: Mapping[str, Any] = field(factory=dict)
    #: The quality suites the run measures after its workloads (on their full sets with
    #: ``quality_full``), and what each measured, in the order measured.
    quality_suites: tuple[str, ...] = ()
    quality_full: bool = False
    #: the quality items asked at once (``--quality-concurrency``; the server's slots where
    #: fewer); None: the default of the Arena that ran it
    quality_concurrency: int | None = None
    measured_quality: tuple[MeasuredQuality, ...] = ()
    #: A capacity search's quality under load: each suite asked again at the capacity it found,
    #: ``quality_load`` at once (``measured_quality`` holds the same suites asked one at a time).
    quality_under_load: tuple[MeasuredQuality, ...] = ()
    quality_load: int | None = None

    @property
    def measured_at(self) -> str:
        return str(self.started_at or "")[:10]


def _upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """A manifest of an earlier shape in today's: the attached server's URL lived only among the
    backend's facts; empty profiles and absent memory were written as ``{}`` and ``null``; the
    instrument was called ``engine`` (and an imported card's text ``engine_description``)."""
    data = with_todays_names(data)
    facts = data.get("backend_facts") or {}
    if "base_url" not in data and isinstance(facts, dict) and facts.get("base_url"):  # only an attaching backend recorded one
        data["base_url"] = facts.get("base_url")
    if not data.get("hardware_profile"):
        data["hardware_profile"] = None
    for key in ("config", "backend_facts", "commands"):
        if data.get(key) is None:
            data.pop(key, None)
    return data


def read_manifest(run_dir: Path) -> Manifest:
    """The manifest of the run in ``run_dir``; an unreadable one is a one-line error naming it."""
    path = run_dir / MANIFEST
    try:
        data = read_json_file(path, max_bytes=MAX_MANIFEST_BYTES)
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: unreadable manifest ({exc})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: unreadable manifest (not a JSON object)")
    try:
        return CONVERTER.structure(_upgrade(data), Manifest)
    except Exception as exc:  # cattrs raises its own validation group, not a ValueError
        where, problem = next(iter(structure_problems(exc, "$")), ("$", type(exc).__name__))
        raise UsageError(f"{path}: not an Arena manifest ({where}: {problem[:160]})") from None


def write_manifest(run_dir: Path, manifest: Manifest) -> None:
    """The one writer of ``manifest.json`` (atomic: a crash leaves the old one whole); once the
    run's files are sealed, the manifest's own content is sealed with them."""
    data = manifest_data(manifest)
    if manifest.files is not None:
        data = json.loads(redact(json.dumps(data, default=str)))  # exactly what will be on disk
        data["seal"] = content_seal(data)
    write_json_atomic(run_dir / MANIFEST, data)


def content_seal(data: Mapping[str, Any]) -> str:
    """SHA-256 of a manifest's content as stored, its ``seal`` left out, in a canonical form."""
    body = {key: value for key, value in data.items() if key != "seal"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def manifest_data(manifest: Manifest) -> dict[str, Any]:
    """The manifest as plain JSON data (``arena show run --json``)."""
    return CONVERTER.unstructure(manifest)

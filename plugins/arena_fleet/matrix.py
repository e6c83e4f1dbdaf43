"""A matrix of runs (``shared/spec/fleet.md``): models x backends x the hardware each backend is
on x workload sets x repeats, declared in TOML, and which of its cells still need running.

Every cell has a *natural key*: model and precision, backend and its declared version, hardware,
workload set, scale, Arena's version and a hash of the cell's settings. The store keeps a ledger
(``matrix-cells.json``) from each finished cell's key to its run. A cell whose key has a
completed run there that still verifies is done and skipped; changing one setting changes the
keys of the cells it touches, and only those run again.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import attrs
from attrs import field, frozen
from attrs.validators import max_len, optional
from cattrs.errors import BaseValidationError

from arena_core import CONVERTER, ConfigError, Registry, UsageError, __version__, read_json_file, read_manifest, verify_run, write_json_atomic

LEDGER = "matrix-cells.json"
#: The longest text a matrix file may give (a URL, a path, a version): typed by the converter,
#: bounded here, checked before anything is planned or written.
MAX_TEXT = 1024
MAX_MATRIX_BYTES = 2**20
#: The most cells a matrix may expand to (checked before it is expanded).
MAX_CELLS = 10_000
#: A ledger of every cell of the largest matrix is well under this.
MAX_LEDGER_BYTES = 16 * 2**20
#: How long a cell waits for a box with its hardware before it fails (fleet.md: 10 minutes).
DEFAULT_WAIT_S = 600.0


def _at_least_one(instance: object, attribute: attrs.Attribute, value: tuple) -> None:
    if not value:
        raise ValueError(f"{attribute.name} must name at least one")


@frozen(kw_only=True)
class BackendEntry:
    """``[[backends]]``: a backend and the hardware it runs on. With ``base_url``, a server that is
    already running on every box of that hardware (the attach path); without, Arena starts the
    backend's own server on the box."""

    name: str = field(validator=max_len(MAX_TEXT))
    hardware: tuple[str, ...] = field(validator=_at_least_one)
    #: What the natural key calls this backend's version ("vllm 0.33", "llama.cpp b7000"):
    #: bump it when the engine changes, and the cells on it run again.
    version: str = field(default="", validator=max_len(MAX_TEXT))
    base_url: str | None = field(default=None, validator=optional(max_len(MAX_TEXT)))
    served_model: str | None = field(default=None, validator=optional(max_len(MAX_TEXT)))
    tokenizer: str | None = field(default=None, validator=optional(max_len(MAX_TEXT)))
    #: The name of the environment variable holding the key, on the box (never the key).
    api_key_env: str | None = field(default=None, validator=optional(max_len(MAX_TEXT)))
    instrument: Literal["native", "external"] = "native"


@frozen(kw_only=True)
class MatrixSpec:
    """A matrix file: what to run where."""

    models: tuple[str, ...] = field(validator=_at_least_one)
    backends: tuple[BackendEntry, ...] = field(validator=_at_least_one)
    #: Each set is one cell's workloads; ``[[]]`` (the default): every workload in one cell.
    workload_sets: tuple[tuple[str, ...], ...] = ((),)
    scale: float | None = field(default=None)
    repeats: int = field(default=1)
    wait_for_hardware_s: float = field(default=DEFAULT_WAIT_S)

    @scale.validator
    def _scale(self, attribute: object, value: float | None) -> None:
        if value is not None and not 0 < value <= 100:
            raise ValueError("scale must be above 0 and at most 100")

    @repeats.validator
    def _repeats(self, attribute: object, value: int) -> None:
        if not 1 <= value <= 100:
            raise ValueError("repeats must be 1 to 100")

    @wait_for_hardware_s.validator
    def _wait(self, attribute: object, value: float) -> None:
        if not 0 < value <= 7 * 24 * 3600:
            raise ValueError("wait_for_hardware_s must be above 0 and at most a week")


@frozen(kw_only=True)
class Cell:
    """One run of the matrix: one model on one backend on one kind of box, one workload set."""

    model: str
    precision: str
    backend: BackendEntry
    hardware: str
    workloads: tuple[str, ...]
    scale: float | None
    repeat: int
    #: what tells this cell from another of the same label (two entries of one backend on one
    #: box): the backend settings in which they differ, set by :func:`cells_of`; "" when unique
    distinct: str = ""

    @property
    def resource(self) -> str:
        """The Ray custom resource a box of this cell's hardware advertises."""
        return f"hw:{self.hardware}"

    def label(self) -> str:
        sets = ",".join(self.workloads) or "all workloads"
        again = f" #{self.repeat + 1}" if self.repeat else ""
        return f"{self.model} · {self.backend.name} · {self.hardware} · {sets}{again}" + (f" ({self.distinct})" if self.distinct else "")

    def natural_key(self) -> str:
        """The cell's identity across matrix files and runs of ``arena matrix``."""
        settings = {k: v for k, v in CONVERTER.unstructure(self.backend).items() if k not in ("hardware", "name", "version")}
        key = {
            "model": self.model,
            "precision": self.precision,
            "backend": f"{self.backend.name} {self.backend.version}".strip(),
            "hardware": self.hardware,
            "workloads": list(self.workloads),
            "scale": self.scale,
            "arena": __version__,
            "config": hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16],
            "repeat": self.repeat,
        }
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]

    def run_argv(self) -> list[str]:
        """``arena run`` for this cell, less ``--output`` (the box chooses); no key on the
        command line, only its variable's name."""
        argv = ["run", self.model, "--backend", self.backend.name, "--hardware", self.hardware, "--instrument", self.backend.instrument]
        if self.workloads:
            argv += ["--workloads", ",".join(self.workloads)]
        if self.scale is not None:
            argv += ["--scale", f"{self.scale:g}"]
        for flag, value in (
            ("--base-url", self.backend.base_url),
            ("--served-model", self.backend.served_model),
            ("--tokenizer", self.backend.tokenizer),
            ("--api-key-env", self.backend.api_key_env),
        ):
            if value:
                argv += [flag, value]
        return argv


def load_matrix(path: Path, registry: Registry) -> MatrixSpec:
    """The matrix in ``path``, checked against what the plugins registered; one-line errors
    naming the file and the key."""
    try:
        if not path.is_file():
            raise ConfigError("not a regular file", source=str(path), path=None)
        if path.stat().st_size > MAX_MATRIX_BYTES:
            raise ConfigError(f"over {MAX_MATRIX_BYTES // 1024} KiB, not a matrix file", source=str(path), path=None)
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the matrix ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"not TOML ({exc})", source=str(path), path=None) from None
    try:
        spec = CONVERTER.structure(data, MatrixSpec)
    except BaseValidationError as exc:
        raise ConfigError(_first_problem(exc), source=str(path), path=None) from None
    for model in spec.models:
        if model not in registry.models:
            raise ConfigError(f"unknown model {model!r} (arena list models)", source=str(path), path="$.models")
    for index, backend in enumerate(spec.backends):
        if backend.name not in registry.backends:
            raise ConfigError(f"unknown backend {backend.name!r} (arena list backends)", source=str(path), path=f"$.backends[{index}].name")
        for hardware in backend.hardware:
            if hardware not in registry.hardware:
                raise ConfigError(f"unknown hardware profile {hardware!r} (arena list hardware)", source=str(path), path=f"$.backends[{index}].hardware")
    for workloads in spec.workload_sets:
        for name in workloads:
            if name not in registry.workloads:
                raise ConfigError(f"unknown workload {name!r} (arena list workloads)", source=str(path), path="$.workload_sets")
    return spec


def _first_problem(exc: BaseException) -> str:
    """The innermost cattrs error, with the key path cattrs gives it."""
    from cattrs import transform_error

    found = transform_error(exc) if isinstance(exc, BaseValidationError) else [str(exc)]
    text = found[0] if found else str(exc)
    if text.startswith("invalid value"):  # a validator's own words say which value and why
        leaf: BaseException = exc
        while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
            leaf = leaf.exceptions[0]
        text = f"{leaf} ({text})"
    return text


def cells_of(spec: MatrixSpec, registry: Registry, source: str = "the matrix") -> list[Cell]:
    """Every cell of ``spec``; a matrix of more than :data:`MAX_CELLS` cells is refused before it is
    expanded, and two places that give the same cell (the same natural key) are named together."""
    count = len(spec.models) * sum(len(backend.hardware) for backend in spec.backends) * len(spec.workload_sets) * spec.repeats
    if count > MAX_CELLS:
        raise ConfigError(f"{count:,} cells; a matrix may have at most {MAX_CELLS:,} (split it, or fewer repeats)", source=source, path=None)
    cells, seen = [], {}
    for m, model in enumerate(spec.models):
        for b, backend in enumerate(spec.backends):
            for h, hardware in enumerate(backend.hardware):
                for w, workloads in enumerate(spec.workload_sets):
                    for repeat in range(spec.repeats):
                        cell = Cell(
                            model=model,
                            precision=registry.models[model].item.precision,
                            backend=backend,
                            hardware=hardware,
                            workloads=tuple(workloads),
                            scale=spec.scale,
                            repeat=repeat,
                        )
                        place = f"$.models[{m}] on $.backends[{b}].hardware[{h}] with $.workload_sets[{w}]"
                        if (first := seen.setdefault(cell.natural_key(), place)) != place:
                            raise ConfigError(f"{first} and {place} are the same cell ({cell.label()}): name it once", source=source, path=None)
                        cells.append(cell)
    return _told_apart(cells)


def _told_apart(cells: list[Cell]) -> list[Cell]:
    """Each cell whose label another shares, labelled with the backend settings in which they
    differ ("version vllm 0.33", "base_url http://b:8000"): a plan, its progress and its summary
    name every cell once."""
    by_label: dict[str, list[Cell]] = {}
    for cell in cells:
        by_label.setdefault(cell.label(), []).append(cell)
    named: dict[int, str] = {}
    for same in (group for group in by_label.values() if len(group) > 1):
        settings = [CONVERTER.unstructure(cell.backend) for cell in same]
        differing = [key for key in settings[0] if key not in ("name", "hardware") and len({json.dumps(s[key]) for s in settings}) > 1]
        for cell, setting in zip(same, settings):
            named[id(cell)] = ", ".join(f"{key} {setting[key] if setting[key] not in (None, '') else 'unset'}" for key in differing)
    return [attrs.evolve(cell, distinct=named[id(cell)]) if id(cell) in named else cell for cell in cells]


# --- the ledger of finished cells ------------------------------------------------------------


def read_ledger(store: Path) -> dict[str, dict[str, str]]:
    """natural key -> {"run_id", "cell"}; an unreadable ledger is a one-line error (it is never
    silently replaced: that would run every cell again)."""
    path = store / LEDGER
    if not path.is_file():
        return {}
    try:
        data = read_json_file(path, max_bytes=MAX_LEDGER_BYTES)
        if not isinstance(data, dict) or not all(isinstance(v, dict) and isinstance(v.get("run_id"), str) for v in data.values()):
            raise ValueError("not a mapping of cell keys to runs")
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable matrix ledger ({exc}); move it away to plan from scratch") from None
    return data


def record_cell(store: Path, cell: Cell, run_id: str) -> None:
    ledger = read_ledger(store)
    ledger[cell.natural_key()] = {"run_id": run_id, "cell": cell.label()}
    write_json_atomic(store / LEDGER, ledger)


def finished_run(store: Path, cell: Cell, ledger: dict[str, dict[str, str]]) -> str | None:
    """The run that already measured ``cell``: completed, and verifying; else None."""
    entry = ledger.get(cell.natural_key())
    if entry is None or not (store / entry["run_id"]).is_dir():
        return None
    try:
        manifest = read_manifest(store / entry["run_id"])
    except UsageError:
        return None
    checked, problems = verify_run(store / entry["run_id"])
    return entry["run_id"] if manifest.status == "completed" and checked and not problems else None


def plan(store: Path, cells: Sequence[Cell]) -> list[tuple[Cell, str | None]]:
    """Each cell with the run that already measured it, or None: it needs running."""
    ledger = read_ledger(store)
    return [(cell, finished_run(store, cell, ledger)) for cell in cells]

"""Results on disk: one directory per run.

``RUN/manifest.json`` says what was measured and how; ``RUN/workloads/NAME/`` holds the request
records (appended as runs complete), the reference tool's JSON, ``session.json`` and, once the
workload finished, ``result.json`` in the Arena schema. Every JSON file is written to a temporary
name and renamed, so a crash never leaves half a file.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Any

from arena_core.converter import CONVERTER
from arena_core.errors import UsageError
from arena_core.files import write_json_atomic
from arena_core.manifest import MANIFEST, Manifest
from arena_core.types import WorkloadResult

RESULT = "result.json"


def new_run_dir(output: Path) -> tuple[str, Path]:
    run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
    path = output / run_id
    path.mkdir(parents=True)
    return run_id, path


def find_run(output: Path, run_id: str, what: str = "--resume") -> Path:
    path = output / run_id
    if not (path / MANIFEST).is_file():
        known = sorted(p.name for p in output.glob("*") if (p / MANIFEST).is_file()) if output.is_dir() else []
        raise UsageError(f"{what}: no run {run_id!r} in {output} (runs there: {', '.join(known[-5:]) or 'none'})")
    return path


def workload_dir(run_dir: Path, name: str) -> Path:
    return run_dir / "workloads" / name


def store_result(run_dir: Path, result: WorkloadResult) -> None:
    write_json_atomic(workload_dir(run_dir, result.workload) / RESULT, CONVERTER.unstructure(result))


def load_result(run_dir: Path, name: str) -> WorkloadResult | None:
    path = workload_dir(run_dir, name) / RESULT
    if not path.is_file():
        return None
    try:
        return CONVERTER.structure(json.loads(path.read_text(encoding="utf-8")), WorkloadResult)
    except Exception as exc:  # not JSON, or not a result (cattrs raises its own validation group)
        raise UsageError(f"{path}: not a readable workload result ({type(exc).__name__}: {str(exc)[:120]})") from None


# --- the index of runs ---------------------------------------------------------------------

INDEX = "index.sqlite"
_COLUMNS = ("run_id", "started_at", "finished_at", "status", "model", "backend", "hardware", "engine", "scale", "workloads")


def index_run(output: Path, manifest: Manifest) -> None:
    """Record (or update) a run in ``OUTPUT/index.sqlite``; the run directory stays the source
    of truth, so a lost index is rebuilt by :func:`rebuild_index`."""
    import sqlite3

    row = [getattr(manifest, column) for column in _COLUMNS[:-1]] + [",".join(manifest.workloads)]
    with sqlite3.connect(output / INDEX) as db:
        db.execute(f"CREATE TABLE IF NOT EXISTS runs ({', '.join(_COLUMNS)}, PRIMARY KEY (run_id))")
        db.execute(f"INSERT OR REPLACE INTO runs VALUES ({', '.join('?' * len(_COLUMNS))})", row)


def rebuild_index(output: Path) -> None:
    from arena_core.manifest import read_manifest

    for manifest_path in sorted(output.glob(f"*/{MANIFEST}")):
        try:
            index_run(output, read_manifest(manifest_path.parent))
        except UsageError:
            continue  # a corrupt run directory is skipped, not fatal


def list_runs(output: Path) -> list[dict[str, Any]]:
    import sqlite3

    if not output.is_dir():
        return []
    if not (output / INDEX).is_file():
        rebuild_index(output)
    if not (output / INDEX).is_file():
        return []
    try:
        with sqlite3.connect(output / INDEX) as db:
            rows = db.execute(f"SELECT {', '.join(_COLUMNS)} FROM runs ORDER BY started_at").fetchall()
    except sqlite3.DatabaseError as exc:
        raise UsageError(f"{output / INDEX}: not a usable index ({exc}); delete it to rebuild it") from None
    return [dict(zip(_COLUMNS, row)) for row in rows]

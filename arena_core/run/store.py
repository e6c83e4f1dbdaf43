"""Results on disk: one directory per run.

``RUN/manifest.json`` says what was measured and how; ``RUN/workloads/NAME/`` holds the request
records (appended as runs complete), the reference tool's JSON, ``session.json`` and, once the
workload finished, ``result.json`` in the Arena schema. Every JSON file is written to a temporary
name and renamed, so a crash never leaves half a file.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from arena_core.converter import CONVERTER, with_todays_names
from arena_core.errors import UsageError
from arena_core.files import read_json_file, write_json_atomic
from arena_core.run.manifest import MANIFEST, Manifest
from arena_core.types import WorkloadResult

RESULT = "result.json"
#: A workload result is a few kilobytes of figures; a file past this is not one.
MAX_RESULT_BYTES = 4 * 2**20
#: The lock file of a run's one writer (:class:`RunLock`): not a result, not sealed.
WRITER_LOCK = ".writer"
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


#: How often a new run id is drawn before giving up.
ID_DRAWS = 20


def new_run_dir(output: Path) -> tuple[str, Path]:
    """A new, empty run folder. Ids are the second plus 4 random hex digits: seventeen imports in
    one second meet a taken id about once in 500 times, so a taken one is drawn again."""
    for _ in range(ID_DRAWS):
        run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
        path = output / run_id
        try:
            path.mkdir(parents=True)
        except FileExistsError:
            continue
        except OSError as exc:  # under a file, on a read-only or virtual file system
            raise UsageError(f"--output {output}: cannot keep results there ({exc.strerror or exc})") from None
        return run_id, path
    raise UsageError(f"--output {output}: no free run id after {ID_DRAWS} draws (is the folder full of runs of this second?)")


def remove_run(output: Path, run_dir: Path) -> None:
    """Forget a run that never measured anything: its folder and its index row."""
    import shutil
    import sqlite3

    shutil.rmtree(run_dir, ignore_errors=True)
    try:
        with sqlite3.connect(output / INDEX, timeout=LOCK_WAIT_S) as db:
            db.execute("DELETE FROM runs WHERE run_id = ?", (run_dir.name,))
    except sqlite3.Error:
        pass  # list_runs skips rows whose folder is gone


def adopt_run(output: Path, run_dir: Path) -> tuple[str, bool]:
    """Move a finished run folder made elsewhere (another box, a copy) into the store ``output``
    under its own name, and index it: (run id, whether it was new). A run of that id already in
    the store with the same manifest is the same run, kept once; a different one is refused."""
    from arena_core.run.manifest import read_manifest

    run_id = run_dir.name
    if not RUN_ID.fullmatch(run_id) or ".." in run_id:
        raise UsageError(f"{run_id!r} is not a run id (a name such as 20261130-120000-ab12)")
    manifest = read_manifest(run_dir)
    if manifest.run_id != run_id:  # a folder renamed on the way: its index row would name another run
        raise UsageError(f"run folder {run_id}: its manifest says it is run {manifest.run_id[:40]!r}; not adopted")
    (run_dir / WRITER_LOCK).unlink(missing_ok=True)  # the lock of the process that measured it elsewhere
    target = output / run_id
    if target.exists():
        if (target / MANIFEST).is_file() and (target / MANIFEST).read_bytes() == (run_dir / MANIFEST).read_bytes():
            return run_id, False
        raise UsageError(f"run {run_id}: the store {output} holds another run of that id; not adopted")
    output.mkdir(parents=True, exist_ok=True)
    run_dir.rename(target)
    index_run(output, manifest)
    return run_id, True


def find_run(output: Path, run_id: str, what: str = "--resume") -> Path:
    """The folder of run ``run_id``, inside ``output`` only (an id is a name, not a path). An id
    may be shortened to any start or end of it that names one stored run alone (a start, as git
    takes a commit's; an end such as ``cd70``, the random part that the leaderboard shows)."""
    if not RUN_ID.fullmatch(run_id) or ".." in run_id:
        raise UsageError(f"{what}: {run_id!r} is not a run id (a name such as 20261130-120000-ab12, not a path)")
    path = output / run_id
    if (path / MANIFEST).is_file():
        return path
    known = sorted(p.name for p in output.glob("*") if (p / MANIFEST).is_file()) if output.is_dir() else []
    matching = [name for name in known if name.startswith(run_id) or name.endswith(run_id)]
    if len(matching) == 1:
        return output / matching[0]
    if matching:
        raise UsageError(f"{what}: {run_id!r} is the start or end of {len(matching)} runs in {output} ({', '.join(matching[:5])}…): give more of the id")
    raise UsageError(f"{what}: no run {run_id!r} in {output} (runs there: {', '.join(known[-5:]) or 'none'})")


def workload_dir(run_dir: Path, name: str) -> Path:
    return run_dir / "workloads" / name


def store_result(run_dir: Path, result: WorkloadResult) -> None:
    write_json_atomic(workload_dir(run_dir, result.workload) / RESULT, CONVERTER.unstructure(result))


def load_result(run_dir: Path, name: str) -> WorkloadResult | None:
    path = workload_dir(run_dir, name) / RESULT
    if not path.is_file():
        return None
    try:
        return CONVERTER.structure(with_todays_names(read_json_file(path, max_bytes=MAX_RESULT_BYTES)), WorkloadResult)
    except Exception as exc:  # not JSON, or not a result (cattrs raises its own validation group)
        raise UsageError(f"{path}: not a readable workload result ({type(exc).__name__}: {str(exc)[:120]})") from None


# --- the index of runs ---------------------------------------------------------------------

INDEX = "index.sqlite"
_COLUMNS = ("run_id", "started_at", "finished_at", "status", "model", "backend", "hardware", "instrument", "scale", "workloads")
#: How long to wait for another process's transaction on the index before giving up on it.
LOCK_WAIT_S = 10.0


def _row(manifest: Manifest) -> list[Any]:
    return [getattr(manifest, column) for column in _COLUMNS[:-1]] + [",".join(manifest.workloads)]


def index_run(output: Path, manifest: Manifest) -> bool:
    """Record (or update) a run in ``OUTPUT/index.sqlite``. The run directory stays the source of
    truth: when another process holds the index too long, this returns False and
    :func:`list_runs` indexes the run the next time it looks."""
    import sqlite3

    try:
        with sqlite3.connect(output / INDEX, timeout=LOCK_WAIT_S) as db:
            db.execute(f"CREATE TABLE IF NOT EXISTS runs ({', '.join(_COLUMNS)}, PRIMARY KEY (run_id))")
            db.execute(f"INSERT OR REPLACE INTO runs VALUES ({', '.join('?' * len(_COLUMNS))})", _row(manifest))
    except sqlite3.OperationalError:  # locked, or busy past the wait: the run folder has it all
        return False
    return True


def stored_manifests(output: Path) -> Iterator[Manifest]:
    """The manifest of every run folder in ``output``, read from the folders (not the index)."""
    from arena_core.run.manifest import read_manifest

    for manifest_path in sorted(output.glob(f"*/{MANIFEST}")):
        try:
            yield read_manifest(manifest_path.parent)
        except UsageError:
            continue  # a corrupt run directory is skipped here; the commands that read it name it


def rebuild_index(output: Path) -> None:
    for manifest in stored_manifests(output):
        index_run(output, manifest)


def list_runs(output: Path) -> list[dict[str, Any]]:
    """Every stored run, from the index, with runs the index missed (it was locked when they
    were stored, or lost) added from their folders."""
    import sqlite3

    if not output.is_dir():
        return []
    if not (output / INDEX).is_file():
        rebuild_index(output)
    rows: list[dict[str, Any]] = []
    if (output / INDEX).is_file():
        try:
            with sqlite3.connect(output / INDEX, timeout=LOCK_WAIT_S) as db:
                rows = [dict(zip(_COLUMNS, row)) for row in db.execute(f"SELECT {', '.join(_COLUMNS)} FROM runs ORDER BY started_at")]
        except sqlite3.OperationalError as exc:
            if "no such column" in str(exc):  # an earlier Arena's index: the folders hold the truth
                (output / INDEX).unlink(missing_ok=True)
                return list_runs(output)
            if "locked" in str(exc) or "busy" in str(exc):
                raise UsageError(f"{output / INDEX}: locked by another Arena process for over {LOCK_WAIT_S:g} s; try again when it is done") from None
            raise UsageError(f"{output / INDEX}: not a usable index ({exc}); delete it to rebuild it") from None
        except sqlite3.DatabaseError as exc:
            raise UsageError(f"{output / INDEX}: not a usable index ({exc}); delete it to rebuild it") from None
    listed = {row["run_id"] for row in rows}
    missed = (
        [manifest for manifest in stored_manifests(output) if manifest.run_id not in listed]
        if len(listed) < sum(1 for _ in output.glob(f"*/{MANIFEST}"))
        else []
    )
    for manifest in missed:
        index_run(output, manifest)
        rows.append(dict(zip(_COLUMNS, _row(manifest))))
    return sorted(rows, key=lambda row: str(row["started_at"] or ""))


class RunLock:
    """The one writer of a run: an exclusive lock held while a process measures into it, so two
    ``arena run --resume`` of one run cannot both write it. The lock file (``RUN/.writer``, left
    out of the run's seal) holds the writer's process id, for the message."""

    def __init__(self, run_dir: Path) -> None:
        self._handle: Any = None
        try:
            import fcntl
        except ImportError:  # no POSIX locks (Windows): one writer is the user's to ensure
            return
        run_id = run_dir.name
        handle = open(run_dir / WRITER_LOCK, "a+", encoding="utf-8")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise UsageError(f"run {run_id} is being written by another Arena process (pid {holder}); wait for it to finish, or stop it") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing the file lets the lock go
            self._handle = None

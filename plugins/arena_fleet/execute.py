"""Running a matrix's cells: one after another on this machine, or as Ray tasks on the boxes of a
cluster (``shared/spec/fleet.md``).

A cell is always the ordinary ``arena run``, started as a child process on the box that runs it,
into a folder of its own. The whole run folder (manifest, records, results, telemetry, server
log) comes back packed; the driver checks it, unpacks it into its store under the run's id (a
second copy of the same run is recognised and kept once) and verifies it. Records travel, not
summaries: percentiles from several boxes cannot be merged, records can.
"""

from __future__ import annotations

import io
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from arena_core import UsageError, adopt_run, read_manifest, unpack_folder, verify_run
from arena_fleet.matrix import Cell, record_cell

#: The file that says a folder is a run (``arena_core``'s store layout).
MANIFEST = "manifest.json"

#: A run folder larger than this is refused at ingest: no benchmark run is that big.
MAX_RUN_BYTES = 2**30
#: How often the driver looks at the cluster while cells wait or run.
POLL_S = 1.0


@frozen(kw_only=True)
class CellReport:
    """What one box did with one cell."""

    exit_code: int
    packed_run: bytes | None
    error: str
    node: str
    seconds: float  # the cell's own time on its box: the arena run, and packing its folder
    started_at: float  # when the box began it (time.time(): boxes of a cluster keep their clocks in step)


@frozen(kw_only=True)
class Outcome:
    cell: Cell
    status: str  # "done", "skipped", "failed"
    run_id: str | None = None
    node: str = ""
    reason: str = ""
    cell_s: float | None = None  # the cell's own time on its box
    total_s: float | None = None  # from queued to ingested, at the driver
    waited_s: float | None = None  # from queued to begun on its box: for a free box, Ray's dispatch

    @property
    def overhead_s(self) -> float | None:
        """What the cell cost beyond its own time and its wait: returning the folder, ingest, verify."""
        if self.total_s is None or self.cell_s is None:
            return None
        return self.total_s - self.cell_s - (self.waited_s or 0.0)


def run_cell_here(argv: Sequence[str]) -> CellReport:
    """Run ``arena run ARGV --output TMP`` on this box and pack the run folder it made."""
    started, started_at = time.monotonic(), time.time()
    with tempfile.TemporaryDirectory(prefix="arena-cell-") as tmp:
        output = Path(tmp) / "store"
        done = subprocess.run([sys.executable, "-m", "arena_core", *argv, "--output", str(output)], capture_output=True, text=True, check=False)
        runs = sorted(p for p in output.glob("*") if (p / MANIFEST).is_file()) if output.is_dir() else []
        packed = _pack(runs[-1]) if runs else None
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    return CellReport(
        exit_code=done.returncode,
        packed_run=packed,
        error=lines[-1] if lines else "",
        node=socket.gethostname(),
        seconds=time.monotonic() - started,
        started_at=started_at,
    )


def _pack(run_dir: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(run_dir, arcname=run_dir.name)
    return buffer.getvalue()


def ingest(store: Path, packed: bytes) -> tuple[str, bool]:
    """Unpack a run folder into ``store``: (run id, whether it was new). Only plain files and
    folders under one run's folder pass the one door (:func:`arena_core.unpack_folder`); a run
    already there with the same manifest is the same run (a retried task), kept once."""
    store.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix=".ingest-", dir=store) as tmp:
            return adopt_run(store, unpack_folder(packed, Path(tmp), what="the run folder that came back", most_bytes=MAX_RUN_BYTES))
    except OSError as exc:  # the store's disk, not the box: said as such
        raise UsageError(f"the run folder that came back could not be written into {store} ({exc.strerror or exc}); not ingested") from None


def settle(store: Path, cell: Cell, report: CellReport, queued_at: float) -> Outcome:
    """Ingest what a box sent back for ``cell`` and say how the cell ended. A completed run that
    verifies is recorded in the matrix ledger; anything else is kept in the store (nothing
    measured is lost) but the cell stays to run again."""
    waited = max(0.0, report.started_at - queued_at)
    base = {"cell": cell, "node": report.node, "cell_s": report.seconds, "waited_s": waited, "total_s": time.time() - queued_at}
    if report.packed_run is None:
        return Outcome(status="failed", reason=report.error or f"arena run exited {report.exit_code} before making a run", **base)
    try:
        run_id, _ = ingest(store, report.packed_run)
    except UsageError as exc:
        return Outcome(status="failed", reason=str(exc), **base)
    manifest = read_manifest(store / run_id)
    checked, problems = verify_run(store / run_id)
    if manifest.status != "completed":
        return Outcome(status="failed", run_id=run_id, reason=f"run {manifest.status} (exit {report.exit_code}): {report.error}", **base)
    if not checked or problems:
        return Outcome(status="failed", run_id=run_id, reason=f"run {run_id} does not verify: {(problems or ['no files'])[0]}", **base)
    record_cell(store, cell, run_id)
    return Outcome(status="done", run_id=run_id, **base)


def run_here(cells: Sequence[Cell], store: Path, say: Callable[[str], None]) -> list[Outcome]:
    """Each cell in turn on this machine, no Ray."""
    found = []
    for number, cell in enumerate(cells, 1):
        say(f"[{number}/{len(cells)}] {cell.label()}: running on this machine")
        queued_at = time.time()
        outcome = settle(store, cell, run_cell_here(cell.run_argv()), queued_at)
        say(describe(number, len(cells), outcome))
        found.append(outcome)
    return found


def describe(number: int, count: int, outcome: Outcome) -> str:
    where = f" on {outcome.node}" if outcome.node else ""
    if outcome.status == "done":
        return f"[{number}/{count}] {outcome.cell.label()}: done{where} in {outcome.cell_s:.1f} s, run {outcome.run_id} (verified)"
    return f"[{number}/{count}] {outcome.cell.label()}: failed{where}: {outcome.reason}"


def summary_rows(outcomes: Sequence[Outcome]) -> list[list[Any]]:
    rows = []
    for outcome in outcomes:
        overhead, waited = outcome.overhead_s, outcome.waited_s
        rows.append(
            [
                outcome.cell.label(),
                outcome.status,
                outcome.node or "—",
                outcome.run_id or "—",
                f"{outcome.cell_s:.1f}" if outcome.cell_s is not None else "—",
                f"{waited:.1f}" if waited is not None else "—",
                f"{overhead:.2f}" if overhead is not None else "—",
                outcome.reason[:80] or "",
            ]
        )
    return rows

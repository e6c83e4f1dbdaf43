"""A quality suite's per-item records (one JSON line each, beside the run's workloads) and the
figure they make."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from arena_core import MeasuredQuality
from arena_quality.stats import percent_with_interval

RECORDS = "records.jsonl"


def write_records(folder: Path, records: Iterable[Mapping[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / RECORDS
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def measured_from(folder: Path, records: list[dict[str, Any]], *, started: float, **what: Any) -> MeasuredQuality:
    """Write ``records`` (each with ``passed``, ``format_failure``, ``request_failed``) and return
    the suite's figure: the share passed with its 95 % interval, the counts, the time since
    ``started`` (``time.monotonic()``); ``what`` names the suite, its benchmark, metric, size ..."""
    write_records(folder, records)
    passed = sum(record["passed"] for record in records)
    value, low, high = percent_with_interval(passed, len(records))
    return MeasuredQuality(
        value=value,
        low=low,
        high=high,
        passed=passed,
        items=len(records),
        format_failures=sum(record["format_failure"] for record in records),
        failed_requests=sum(record["request_failed"] for record in records),
        seconds=round(time.monotonic() - started, 1),
        **what,
    )

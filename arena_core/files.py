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


def read_text_file(path: Path, what: str, max_bytes: int) -> str:
    """The text of ``path``, or a :class:`UsageError` naming ``what`` and the file when it is not
    a regular file (a FIFO would block for ever, ``/dev/zero`` fill memory), is larger than
    ``max_bytes``, or is not UTF-8."""
    from arena_core.errors import UsageError

    try:
        if not path.is_file():
            raise UsageError(f"{what}: {path} is not a regular file" if path.exists() else f"{what}: {path}: no such file")
        if path.stat().st_size > max_bytes:
            raise UsageError(f"{what}: {path} is larger than {max_bytes // 2**20} MiB, more than Arena reads as {what.lstrip('-')}")
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{what}: cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{what}: {path} is not UTF-8 text") from None

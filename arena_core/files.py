"""Writing files so that a crash never leaves half of one."""

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

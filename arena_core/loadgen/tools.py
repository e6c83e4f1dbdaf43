"""Running a reference tool (llama-benchy, ``vllm bench serve``) to completion for a runner's
external instrument: its output kept as a log beside the results, its saved JSON read back."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arena_core.errors import ToolFailed
from arena_core.redaction import redact
from arena_core.types import RunContext

#: A reference tool that has not finished in a day is not coming back.
TOOL_TIMEOUT_S = 24 * 3600


def run_reference_tool(
    line: Sequence[str], context: RunContext, *, env: Mapping[str, str], log_name: str, report_name: str, launcher: Sequence[str] = ()
) -> Any:
    """Run ``line`` with its output in ``log_name``; the JSON it saved as ``report_name``. A
    ``launcher`` replaces ``line[0]`` (a wrapper that hands the tool a secret inside its process).
    A tool that fails, or saves nothing, is :class:`ToolFailed`."""
    log_file, report_file = context.path(log_name), context.path(report_name)
    context.say(f"{context.output_dir.name}: running {' '.join(line)}")
    with open(log_file, "w", encoding="utf-8") as log:
        completed = subprocess.run([*(launcher or line[:1]), *line[1:]], env=dict(env), stdout=log, stderr=subprocess.STDOUT, timeout=TOOL_TIMEOUT_S)
    log_file.write_text(redact(log_file.read_text(encoding="utf-8", errors="replace")), encoding="utf-8")  # a tool may print what a server echoed
    if completed.returncode != 0 or not report_file.exists():
        raise ToolFailed(f"{line[0]} exited with status {completed.returncode}; see {log_file}")
    return json.loads(report_file.read_text(encoding="utf-8"))


def script_interpreter(program: Path) -> str:
    """The Python interpreter a script's ``#!`` line names: an absolute path to a ``python*``
    that exists, else "" (another program, a relative name looked up in the working folder)."""
    try:
        with open(program, "rb") as handle:
            first = handle.readline(512).decode("utf-8", "replace").strip()
    except OSError:
        return ""
    words = first[2:].split() if first.startswith("#!") else []
    found = Path(words[0]) if words else None
    return str(found) if found is not None and found.is_absolute() and found.name.startswith("python") and found.is_file() else ""

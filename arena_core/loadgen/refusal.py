"""What a server said when it refused a request, fit for a one-line error.

A 4xx/5xx answer's message is read from the shapes the OpenAI-compatible servers send (OpenAI's
and llama.cpp's ``{"error": {"message": ...}}``, vLLM's ``{"object": "error", "message": ...}``,
FastAPI's ``{"detail": ...}``, or plain text), cut to :data:`REASON_CHARS`, its control characters
removed and every known secret redacted: a server's words reach a terminal and the run's files.
Where the message is one Arena knows (no chat template, a model name the server does not serve,
a prompt past its context), the setting that fixes it is added (:data:`KNOWN_FIXES`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from arena_core.redaction import redact

#: How much of a server's message an error line quotes.
REASON_CHARS = 240

#: The refusals Arena can name a fix for: (what the message says, what to do). Checked in order
#: against the cleaned message; held by tests/test_refusal.py.
KNOWN_FIXES = (
    (
        re.compile(r"chat[ _]template", re.IGNORECASE),
        "the model's tokenizer has no chat template: start the server with one (vLLM: --chat-template FILE; llama.cpp: --jinja --chat-template-file FILE)",
    ),
    (
        re.compile(r"model\b.{0,80}\b(does not exist|not found|not served)|unknown model|no such model", re.IGNORECASE),
        "name a model the server serves with --served-model (GET /v1/models lists them)",
    ),
    (
        re.compile(r"maximum context length|context length|max_model_len|exceeds the available context|context size|too long", re.IGNORECASE),
        "the prompt is longer than the server's context: start it with a longer one (vLLM: --max-model-len; llama.cpp: --ctx-size) or measure at a smaller --scale",
    ),
)


def clean_text(text: str, most: int = REASON_CHARS) -> str:
    """``text`` on one line: control characters (newlines included) as spaces, runs of spaces
    as one, at most ``most`` characters (an ellipsis where cut), secrets redacted. Redacted
    whole first (a key cut in two would not be found), then cut to a size cleaning costs little."""
    text = redact(text)[: most * 8]
    flat = " ".join("".join(char if char.isprintable() else " " for char in text).split())
    return flat if len(flat) <= most else flat[: most - 1] + "…"


def server_reason(parsed: Any, raw: bytes = b"") -> str:
    """The message of a refusal, from its parsed JSON body or, where that is none, its raw bytes
    ("" when it said nothing)."""
    message: Any = None
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, dict):
            message = error.get("message")
        elif isinstance(error, str):
            message = error
        if message is None:
            message = parsed.get("message", parsed.get("detail"))
        if message is not None and not isinstance(message, str):
            message = json.dumps(message, ensure_ascii=False)
        if message is None:
            message = json.dumps(parsed, ensure_ascii=False)
    elif raw:
        message = raw.decode("utf-8", "replace")
    return clean_text(message) if isinstance(message, str) else ""


def known_fix(reason: str) -> str:
    """The setting that fixes a refusal whose message is ``reason`` ("" for one Arena does not know)."""
    return next((fix for pattern, fix in KNOWN_FIXES if pattern.search(reason)), "")


def refusal(status: int, parsed: Any, raw: bytes = b"") -> str:
    """``HTTP 400: the server said "...": the fix`` -- what an error line says of a refusal."""
    reason = server_reason(parsed, raw)
    said = f'HTTP {status}: the server said "{reason}"' if reason else f"HTTP {status}, with no message"
    fix = known_fix(reason)
    return f"{said}; {fix}" if fix else said

"""The one redaction: every API key this process has read, replaced in text about to leave it.

Applied where text is stored or printed -- request records as they are made, every JSON and
JSON-lines file Arena writes, reference-tool logs, the CLI's error lines -- so a server that
echoes the ``Authorization`` header back (in an error body, say) is caught whatever the path.
Kept free of other imports: the lowest layers (file writing) use it.
"""

from __future__ import annotations

REDACTED = "[redacted]"

_known: set[str] = set()  # every key read by this process


def remember(secret: str) -> None:
    """From now on, ``secret`` is redacted from everything Arena stores or prints."""
    if len(secret) >= 4:  # a shorter "key" would redact ordinary text
        _known.add(secret)


def redact(text: str) -> str:
    """``text`` with every remembered secret replaced by ``[redacted]`` (longest first)."""
    if _known:
        for secret in sorted(_known, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, REDACTED)
    return text


def holds_secret(text: str) -> bool:
    """Whether ``text`` holds any secret this process has read (a file about to leave it, whole)."""
    return any(secret in text for secret in _known)

"""The keys a site trusts: a text file its maintainer keeps, one key a line, its fingerprint then
the name the site shows for it (``SHA256:Ab3... Lab of Jane Doe``); ``#`` starts a comment. Read
as outside data: bounded in size and count, each name cut to printable text of
:data:`MOST_NAME_CHARS` at most."""

from __future__ import annotations

import re
from pathlib import Path

import arena_core as arena

MOST_BYTES = 1 << 20
MOST_KEYS = 10_000
MOST_NAME_CHARS = 80
FINGERPRINT = re.compile(r"SHA256:[A-Za-z0-9+/]{43}")


def trusted_keys(path: Path | None) -> dict[str, str]:
    """Fingerprint to name; empty when no file is named. A one-line error names the file and line."""
    if path is None:
        return {}
    try:
        text = arena.read_file_bytes(path, max_bytes=MOST_BYTES).decode("utf-8")
    except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise arena.UsageError(f"--trusted-keys: {path} cannot be read ({str(exc)[:120]})") from None
    keys: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fingerprint, _, name = line.partition(" ")
        if not FINGERPRINT.fullmatch(fingerprint):
            raise arena.UsageError(f"--trusted-keys: {path} line {number}: {fingerprint[:60]!r} is not a key's fingerprint (SHA256: and 43 base64 characters)")
        shown = "".join(c for c in name.strip() if c.isprintable())[:MOST_NAME_CHARS]
        keys[fingerprint] = shown or fingerprint
        if len(keys) > MOST_KEYS:
            raise arena.UsageError(f"--trusted-keys: {path} names more than {MOST_KEYS:,} keys")
    return keys

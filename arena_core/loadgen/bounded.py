"""Reading a whole answer from a server that may trickle or flood: a deadline for all of it and
a cap on its size, not only a timeout per socket read (one byte every nine seconds passes a
ten-second timeout for ever)."""

from __future__ import annotations

import time
from typing import Protocol


class Readable(Protocol):
    def read1(self, size: int = ..., /) -> bytes: ...


def read_bounded(answer: Readable, *, max_bytes: int, deadline_s: float) -> bytes:
    """All of ``answer`` (an HTTP response from ``urllib``) within ``deadline_s`` seconds from now
    and ``max_bytes`` bytes; a :class:`ValueError` saying which it broke otherwise."""
    started = time.monotonic()
    chunks, size = [], 0
    while chunk := answer.read1(1 << 16):
        size += len(chunk)
        if size > max_bytes:
            raise ValueError(f"the answer is larger than {max_bytes // 2**10} KiB")
        if time.monotonic() - started > deadline_s:
            raise ValueError(f"the answer took longer than {deadline_s:g} s")
        chunks.append(chunk)
    return b"".join(chunks)

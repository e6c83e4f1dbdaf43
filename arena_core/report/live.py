"""The live progress line of ``arena run`` on a terminal: workload, requests done of total,
current tokens/s and an estimate of the time left, redrawn at most four times a second."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class LiveLine:
    def __init__(self, stream: TextIO = sys.stderr, interval_s: float = 0.25) -> None:
        self.stream = stream
        self.interval_s = interval_s
        self._workload = ""
        self._started = 0.0
        self._drawn = float("-inf")
        self._last_tokens = 0
        self._last_time = 0.0
        self._rate = 0.0
        self._visible = False

    def update(self, workload: str, done: int, total: int, tokens: int | None) -> None:
        """``done`` of ``total`` requests of ``workload`` (or a quality suite's items: then
        ``tokens`` is None and no rate is shown)."""
        now = time.monotonic()
        if workload != self._workload:
            self._workload, self._started, self._last_tokens, self._last_time, self._rate = workload, now, tokens, now, 0.0
        if now - self._drawn < self.interval_s and done < total:
            return
        if tokens is not None and now > self._last_time:
            self._rate = (tokens - self._last_tokens) / (now - self._last_time)
            self._last_tokens, self._last_time = tokens, now
        elapsed = now - self._started
        eta = f"{elapsed / done * (total - done):.0f} s left" if done else "starting"
        said = f"{done}/{total} requests, {self._rate:.0f} tok/s" if tokens is not None else f"{done}/{total} items answered"
        self.stream.write(f"\r\033[K{workload}: {said}, {eta}")
        self.stream.flush()
        self._drawn, self._visible = now, True

    def clear(self) -> None:
        """Remove the line before a plain log line is printed."""
        if self._visible:
            self.stream.write("\r\033[K")
            self._visible = False

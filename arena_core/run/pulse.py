"""No silent minute: a run's progress, wrapped so that whenever nothing was said for
:data:`PULSE_S` seconds the phase under way says what it is doing -- a server still starting,
requests answered of a workload, items answered of a quality suite -- with the time so far.

On a terminal the live line already shows a workload's or a suite's counts: their phases are
then not repeated as lines. A server's start has no live line, so it always speaks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from arena_core.report.text import minutes

#: The longest a run is silent: under the 30 s a person (or a CI log watcher) waits before
#: wondering whether it hung, with the pulse's own tick (1 s) to spare.
PULSE_S = 20.0
#: How often the pulse looks at the clock.
TICK_S = 1.0


class Counts:
    """Done of total, as a phase's requests or items come back (set by the phase's callback)."""

    def __init__(self, unit: str) -> None:
        self.unit, self.done, self.total = unit, 0, 0

    def update(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    def said(self, seconds: float) -> str:
        """ "12/41 items answered, about 2 min 10 s left" ("" before the total is known)."""
        if not self.total:
            return ""
        left = f", about {minutes(seconds / self.done * (self.total - self.done))} left" if self.done else ""
        return f"{self.done}/{self.total} {self.unit} answered{left}"


class Pulse:
    """``say`` is the run's progress; :meth:`phase` names what is under way, and a thread says
    it again whenever nothing was said for ``every_s`` seconds."""

    def __init__(self, progress: Callable[[str], None], *, live: bool, every_s: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._progress, self.live, self.clock = progress, live, clock
        self.every_s = PULSE_S if every_s is None else every_s
        self._said = clock()
        self._phase: tuple[float, str, Counts | None, bool] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def say(self, line: str) -> None:
        with self._lock:
            self._said = self.clock()
            self._progress(line)

    @contextmanager
    def phase(self, doing: str, counts: Counts | None = None, *, has_live_line: bool = False) -> Iterator[None]:
        """While the block runs, ``doing`` (with ``counts`` and the time so far) is what the
        pulse says; ``has_live_line``: a terminal's live line shows it already."""
        previous = self._phase
        self.now_doing(doing, counts, has_live_line=has_live_line)
        try:
            yield
        finally:
            self._phase = previous

    def now_doing(self, doing: str, counts: Counts | None = None, *, has_live_line: bool = False) -> None:
        """What the pulse says from now on (a command's stages, one after another)."""
        self._phase = (self.clock(), doing, counts, has_live_line)

    def tick(self) -> None:
        """Say the phase under way if nothing was said for ``every_s`` seconds (the thread's step)."""
        phase, now = self._phase, self.clock()
        if phase is None or now - self._said < self.every_s:
            return
        started, doing, counts, has_live_line = phase
        if has_live_line and self.live:
            return
        seconds = now - started
        said = counts.said(seconds) if counts is not None else ""
        self.say(f"{doing}: {said + '; ' if said else ''}{minutes(seconds)} so far")

    def start(self) -> None:
        """Start the thread that ticks (once; a second call does nothing)."""
        if self._thread is not None:
            return

        def beat() -> None:
            while not self._stop.wait(TICK_S):
                self.tick()

        self._thread = threading.Thread(target=beat, name="arena-pulse", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

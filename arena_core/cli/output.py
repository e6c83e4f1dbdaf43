"""What the CLI prints, made safe for a terminal: the one way Arena's commands write.

Text a server or a file supplied (a model id, an error body, a card figure's label) can carry
control characters and terminal escapes -- an OSC 52 sequence writes the user's clipboard, others
move the cursor or retitle the window. Every line goes through :func:`terminal_safe` and the
secret redaction before it is written; a control character is shown as its ``\\u00XX`` escape
(which is also what JSON output expects), newlines and tabs pass.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable

import click

from arena_core.redaction import redact
from arena_core.report.live import LiveLine
from arena_core.run.pulse import Pulse

#: C0 controls but tab and newline, DEL, and the C1 controls (ESC-less CSI and OSC among them).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """``text`` with every control character a terminal would act on shown as ``\\u00XX``."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def echo(message: object = "", *, err: bool = False, nl: bool = True) -> None:
    """``click.echo`` of ``message`` made terminal-safe, with every known secret redacted."""
    click.echo(terminal_safe(redact(str(message))), err=err, nl=nl)


def progress_printer(started: float, live: LiveLine | None = None) -> Callable[[str], None]:
    """``progress(line)`` of a long command: the line on standard error after the seconds since
    ``started`` (``time.monotonic()``), one line each however long (a log is searched line by line);
    a live line, where there is one, is cleared first."""

    def progress(line: str) -> None:
        if live:
            live.clear()
        echo(f"[{time.monotonic() - started:6.0f} s] {line}", err=True)

    return progress


class Steps:
    """Progress of a command that takes more than a few seconds, on stderr (stdout stays the
    command's answer): each stage as it starts, with the seconds so far; a count of pages or
    items updated in place on a terminal, and said once at its end elsewhere. Used as a context,
    a stage that says nothing for 20 s says how long it has run (:class:`~arena_core.run.pulse.Pulse`)."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.started = time.monotonic()
        self.terminal = sys.stderr.isatty()
        self.pulse = Pulse(lambda line: echo(line, err=True), live=False)

    def __enter__(self) -> Steps:
        self.pulse.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.pulse.stop()

    def stage(self, what: str) -> None:
        self.pulse.say(f"{self.command}: {what} ({time.monotonic() - self.started:.0f} s)")
        self.pulse.now_doing(f"{self.command}: {what}")

    def count(self, done: int, total: int, what: str) -> None:
        if self.terminal:
            click.echo(f"\r{self.command}: {done}/{total} {terminal_safe(what)[:60]}\x1b[K", err=True, nl=done == total)
        elif done == total:
            self.stage(f"{total} written")

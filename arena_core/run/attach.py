"""Where the measured server runs, and what Arena may read about its machine from here.

A server Arena launched, or one at a loopback address, runs on this machine: its hardware is
detected here and memory is read here. A server at any other address runs on a machine Arena
cannot see: its hardware is what ``--hardware`` names, else :data:`UNNAMED_SERVER` (no decode
ceiling, no memory read here -- the client's figures would be about the wrong machine), and the
memory watchdog, which guards the machine Arena runs on, has nothing of the server's to guard.
"""

from __future__ import annotations

from collections.abc import Sequence

from arena_core.run.identity import ask_the_server, clean
from arena_core.types import Endpoint, HardwareProfile, ServerAnswers, ServerDialect

UNNAMED_SERVER = HardwareProfile(
    name="unnamed",
    title="the server's machine (not named)",
    description="A server on another machine, its hardware not named with --hardware: no ceiling check, no memory read from here.",
    memory_gb=None,
    unified_memory=False,
)


#: How much of what a server says of its machine is shown.
MACHINE_CHARS = 200


def what_the_server_says(answers: ServerAnswers, dialects: Sequence[ServerDialect]) -> str:
    """What a server says of the machine it runs on, in one line: the first registered dialect's
    reading of its answers that says anything (cleaned and cut), "" when none does."""
    for dialect in dialects:
        said = clean(dialect.machine(answers), MACHINE_CHARS) if dialect.machine is not None else ""
        if said:
            return said
    return ""


def ask_about_its_machine(endpoint: Endpoint, profiles: list[str], dialects: Sequence[ServerDialect]) -> str:
    """The line a run prints when its server's machine is not named: what the server says of it
    (the pages its dialects read and ``/metrics``, each with a deadline, any may be absent) and how
    to name it (``profiles``: those that can name another machine)."""
    said = what_the_server_says(ask_the_server(endpoint, dialects, here=False, metrics=True), dialects)
    told = f"the server says: {said}" if said else "the server says nothing of its device"
    known = ", ".join(profiles)
    return f"hardware: not named, so judged without a physical ceiling ({told}); name its machine with --hardware ({known})"

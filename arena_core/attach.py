"""Where the measured server runs, and what Arena may read about its machine from here.

A server Arena launched, or one at a loopback address, runs on this machine: its hardware is
detected here and memory is read here. A server at any other address runs on a machine Arena
cannot see: its hardware is what ``--hardware`` names, else :data:`UNNAMED_SERVER` (no decode
ceiling, no memory read here -- the client's figures would be about the wrong machine), and the
memory watchdog, which guards the machine Arena runs on, has nothing of the server's to guard.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from arena_core.types import HardwareProfile

UNNAMED_SERVER = HardwareProfile(
    name="unnamed",
    title="the server's machine (not named)",
    description="A server on another machine, its hardware not named with --hardware: no ceiling check, no memory read from here.",
    memory_gb=None,
    unified_memory=False,
)


def server_is_here(base_url: str | None) -> bool:
    """Whether a server at ``base_url`` runs on this machine: none given (Arena launches it), or a
    loopback address. A host name other than ``localhost`` is taken as another machine (it is not
    resolved: a name can point anywhere)."""
    if not base_url:
        return True
    host = urlsplit(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False

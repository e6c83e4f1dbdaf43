"""The errors Arena raises on purpose.

Every error a user can cause (bad config, unknown name, misbehaving plugin) is an
:class:`ArenaError` carrying a one-line message that names where the problem is. Only the CLI
maps them to exit codes; library callers catch them like any exception.
"""

from __future__ import annotations


class ArenaError(Exception):
    """Base class; ``exit_code`` is what the CLI exits with."""

    exit_code = 1


class UsageError(ArenaError):
    """Bad input from the user: a file, key, flag or name that is wrong. Exit status 2."""

    exit_code = 2


class ConfigError(UsageError):
    """A configuration file that cannot be read or does not validate.

    ``source`` is the file (or ``"<config>"``), ``path`` the key path such as
    ``$.workloads.chat.concurrency`` (``None`` when the file does not even parse); the message
    reads ``source: path: problem``.
    """

    def __init__(self, problem: str, *, source: str = "<config>", path: str | None = "$") -> None:
        self.problem = problem
        self.source = source
        self.path = path
        where = f"{source}: {path}" if path else source
        super().__init__(f"{where}: {problem}")


class UnknownNameError(UsageError):
    """A name (workload, hardware, model, ...) that no plugin registered."""

    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        self.kind = kind
        self.name = name
        self.known = known
        listing = ", ".join(known) if known else "none registered"
        super().__init__(f"unknown {kind} {name!r} (known: {listing})")


class PluginError(ArenaError):
    """A plugin misbehaved and strict plugin mode is on (``--strict-plugins``)."""

    exit_code = 3


class InvalidResults(ArenaError):
    """The run finished and everything is stored, but some results failed the verdict."""

    exit_code = 4


class ServerLost(ArenaError):
    """The server stopped answering in the middle of a run (it crashed or was killed)."""

    exit_code = 5

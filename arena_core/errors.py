"""The errors Arena raises on purpose.

Every error a user can cause (bad config, unknown name, misbehaving plugin) is an
:class:`ArenaError` carrying a one-line message that names where the problem is. Only the CLI
maps them to exit codes; library callers catch them like any exception.
"""

from __future__ import annotations

from collections.abc import Iterable


class ArenaError(Exception):
    """Base class; ``exit_code`` is what the CLI exits with."""

    exit_code = 1


class UsageError(ArenaError):
    """Bad input from the user: a file, key, flag or name that is wrong. Exit status 2."""

    exit_code = 2


class ConfigError(UsageError):
    """A value that is wrong where it was written: a configuration file that cannot be read or
    does not validate, or a flag.

    ``source`` is the file, the flag or ``"<config>"``; ``path`` the key path such as
    ``$.workloads.chat.concurrency`` (``None`` when the file does not even parse, or for a flag);
    the message reads ``source: path: problem``.
    """

    def __init__(self, problem: str, *, source: str | None = "<config>", path: str | None = "$") -> None:
        self.problem = problem
        self.source = source
        self.path = path
        where = ": ".join(part for part in (source, path) if part)
        super().__init__(f"{where}: {problem}" if where else problem)


class UnknownNameError(ConfigError, ValueError):
    """A name (workload, hardware, model, scoring profile, ...) that is not known: every
    "unknown X (known: ...)" Arena prints is one of these. ``source`` and ``path`` say where the
    name was written (a file and its key path, or a flag); both may be ``None``. It is a
    ``ValueError`` too, for plain-Python callers of plugin classes."""

    def __init__(self, kind: str, name: str, known: Iterable[str], *, source: str | None = None, path: str | None = None) -> None:
        self.kind = kind
        self.name = name
        self.known = list(known)
        listing = ", ".join(self.known) if self.known else "none registered"
        super().__init__(f"unknown {kind} {name!r} (known: {listing})", source=source, path=path)


class PluginError(ArenaError):
    """A plugin misbehaved and strict plugin mode is on (``--strict-plugins``)."""

    exit_code = 3


class Interrupted(ArenaError):
    """Ctrl-C (or the memory watchdog) stopped a run; what finished is kept, and it resumes."""

    exit_code = 130


class InvalidResults(ArenaError):
    """The run finished and everything is stored, but some results failed the verdict."""

    exit_code = 4


class ServerLost(ArenaError):
    """The server stopped answering in the middle of a run (it crashed or was killed)."""

    exit_code = 5


class ToolFailed(ArenaError):
    """A program Arena ran -- an inference server it launched, or a reference tool -- crashed,
    exited with an error or never came up. Not the user's input (that is :class:`UsageError`):
    the message names the program and its log. Exit status 6."""

    exit_code = 6

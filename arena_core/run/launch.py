"""The launch kit (public as ``arena_core.launch_kit``): what a backend that starts a server
shares -- a process in its own process group, its output in the run folder's ``server.log``,
waited on until an HTTP health URL answers (or until it dies, with its log's last error), stopped
with SIGTERM then SIGKILL, its whole group gone before the run is sealed.

A backend subclasses :class:`LocalServer`, builds its command line with :attr:`LocalServer.port`
and calls :meth:`LocalServer.launch` from ``start``; ``examples/arena-command-server`` is one."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from arena_core.errors import ToolFailed, UsageError
from arena_core.loadgen import clean_text
from arena_core.types import Endpoint

#: A flag whose value is a secret: on a command line every process of the machine reads it, and
#: the run records its server's command line.
SECRET_FLAG = re.compile(r"(?:^|[-_])(?:key|token|secret|password)(?:$|[-_])", re.IGNORECASE)
#: The most arguments, and the longest, ``--server-arg`` passes to a server.
MOST_ARGS, LONGEST_ARG = 64, 4096
#: The most inherited settings a card states, and the longest value (:func:`inherited_settings`).
MOST_SETTINGS, LONGEST_SETTING = 32, 200


def names_a_secret(flag: str) -> bool:
    """Whether ``flag`` (``--api-key``, ``--hf-token``; not ``--max-num-batched-tokens``) is one
    whose value is a secret."""
    return flag.startswith("-") and bool(SECRET_FLAG.search(flag.lstrip("-")))


def inherited_settings(environ: Mapping[str, str], prefixes: tuple[str, ...]) -> dict[str, str]:
    """The variables of ``environ`` whose names start with one of ``prefixes`` (``VLLM_``,
    ``OMP_``): the settings a server started from this environment inherits, for its card to say
    beside the backend's own.
    A name that names a secret (``VLLM_API_KEY``) is left out, and so is a value that is not
    short printable text; at most :data:`MOST_SETTINGS` of them, by name."""
    found = {
        name: value
        for name, value in sorted(environ.items())
        if name.startswith(prefixes) and not SECRET_FLAG.search(name) and len(value) <= LONGEST_SETTING and value.isprintable()
    }
    return dict(list(found.items())[:MOST_SETTINGS])


def extra_args(given: Sequence[str], own: Collection[str], backend: str) -> list[str]:
    """The user's ``--server-arg`` arguments for a server ``backend`` starts, checked: none is a
    flag of ``own`` (what the backend sets itself: the port, the model, the slots its runs and
    predictions read), none names a secret, each printable; a usage error in one line otherwise."""
    if len(given) > MOST_ARGS:
        raise UsageError(f"--server-arg: {len(given)} arguments; at most {MOST_ARGS}")
    for arg in given:
        flag = arg.split("=", 1)[0]
        if not arg or len(arg) > LONGEST_ARG or not arg.isprintable():
            raise UsageError(f"--server-arg {arg[:40]!r}: not an argument (printable text of 1 to {LONGEST_ARG} characters)")
        if flag.replace("_", "-") in own:  # vLLM's parser reads --max_num_seqs as --max-num-seqs
            raise UsageError(
                f"--server-arg {flag}: the {backend} backend sets {flag} itself (its runs and predictions read it); use Arena's own option where there is one"
            )
        if names_a_secret(flag):
            raise UsageError(
                f"--server-arg {flag}: a secret on a command line is read by every process of the machine and recorded with the run; give it through the server's environment"
            )
    return list(given)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


#: How much of a log's end is searched for its last error (a server's goodbye follows it).
LOG_TAIL_BYTES = 64 * 1024
#: What an error line of a server's log says (Python's exception line, a C or C++ "error:", an abort).
ERROR_LINE = re.compile(r"error|exception|fatal|failed|abort|terminat|killed|denied|cannot|unable|not found|out of memory", re.IGNORECASE)


def last_error_line(path: Path) -> str:
    """The last line of the log at ``path`` that says an error (else its last line), cleaned for
    a terminal and cut to 300 characters; "" where the log is empty or unreadable. A traceback's
    own last line ("ValueError: ...") is the error, not the frames above it."""
    try:
        with open(path, "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - LOG_TAIL_BYTES))
            lines = [line.strip() for line in log.read().decode(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    found = next((line for line in reversed(lines) if ERROR_LINE.search(line) and not line.startswith(("File ", "Traceback"))), lines[-1] if lines else "")
    return clean_text(found, 300)


#: What a server killed by SIGILL was: built for instructions this CPU does not run.
ILLEGAL_INSTRUCTION = "probably an illegal instruction (SIGILL): the server was built for instructions this CPU does not run"


class IllegalInstruction(ToolFailed):
    """The server died of SIGILL while starting."""


class ServerProcess:
    """A server's process: :meth:`start`, :meth:`wait_healthy`, :meth:`stop` (idempotent)."""

    def __init__(self, command: list[str], log_path: Path, env: dict[str, str] | None = None) -> None:
        self.command = command
        self.log_path = log_path
        self._env = env
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            try:
                self._process = subprocess.Popen(
                    self.command,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=self._env,
                    start_new_session=True,  # its own process group: stop takes its children too
                )
            except OSError as exc:
                raise ToolFailed(f"cannot start {self.command[0]}: {exc.strerror or exc}") from None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def wait_healthy(self, url: str, timeout_s: float) -> None:
        """Poll ``url`` until it answers 200; fail with the log's last lines if the process dies."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                status = self._process.returncode
                said = f"{last_error_line(self.log_path) or 'its log is empty'} (its log: {self.log_path})"
                if status in (-4, 132, 252):  # SIGILL, as Python, a shell and a wrapper report it
                    raise IllegalInstruction(f"the server exited with status {status} while starting ({ILLEGAL_INSTRUCTION}): {said}")
                raise ToolFailed(f"the server exited with status {status} while starting: {said}")
            try:
                with urllib.request.urlopen(url, timeout=2) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        raise ToolFailed(f"the server did not answer {url} within {timeout_s:.0f} s (log: {self.log_path})")

    def stop(self, grace_s: float = 10.0) -> None:
        """Stop the server and every process of its group, and return once none is left: a
        launcher's child that outlives it would write its goodbye to the log after the run
        sealed it (``arena verify`` then finds server.log changed)."""
        process = self._process
        if process is None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        if not _group_gone(process, grace_s):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            _group_gone(process, grace_s)


def _group_gone(process: subprocess.Popen, within_s: float) -> bool:
    """Whether the process group led by ``process`` (its leader reaped) is empty within ``within_s``."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        process.poll()  # reap the leader, so it does not count as alive
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


class LocalServer:
    """What the backends that launch a server share: a free port on 127.0.0.1, the log in the
    run folder, the health wait, the stop. Subclasses build the command and call :meth:`launch`."""

    def __init__(self, run_dir: Path, model_name: str) -> None:
        self.model_name = model_name
        self.port = free_port()
        self.command: list[str] = []
        self.process: ServerProcess | None = None
        self._log = run_dir / "server.log"

    def launch(self, command: list[str], timeout_s: float, env: dict[str, str] | None = None, health: str = "/health") -> Endpoint:
        """Start ``command`` (``env``: the child's whole environment, ``None`` for Arena's) and
        return the endpoint once ``health`` answers 200 within ``timeout_s``; a server that exits
        first is a :class:`~arena_core.ToolFailed` naming its log's last error."""
        self.command = command
        self.process = ServerProcess(command, self._log, env=env)
        self.process.start()
        self.process.wait_healthy(f"http://127.0.0.1:{self.port}{health}", timeout_s)
        return Endpoint(base_url=f"http://127.0.0.1:{self.port}", model=self.model_name)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    @property
    def log_path(self) -> Path | None:
        return self._log

    @property
    def pid(self) -> int | None:
        """The server's process id (telemetry counts the GPU memory of it and its children)."""
        return self.process.pid if self.process is not None else None

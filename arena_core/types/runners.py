"""Runners: load generators, the endpoint they measure, and what they are handed."""

from __future__ import annotations

import ipaddress
import re
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from attrs import Factory, field, frozen
from attrs.validators import in_, matches_re

from arena_core import bounds
from arena_core.errors import UsageError
from arena_core.files import write_json_atomic
from arena_core.types.names import LoopKind, valid_name
from arena_core.types.results import WorkloadResult
from arena_core.types.workloads import WorkloadSpec


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


@frozen(kw_only=True)
class Endpoint:
    """An OpenAI-compatible server to measure. ``base_url`` has no ``/v1`` suffix.

    The API key is never printed (``repr``) nor stored: the converter drops it when unstructuring.
    ``on_this_machine``: whether the server runs on this machine; by default, whether the address
    is a loopback one (a server Arena launched listens on one), and a backend that knows better
    may say so when it builds the endpoint. The instrument reads it (a tokenizer path the server
    names is this machine's only when the server is here), never the address itself.
    """

    base_url: str = field(validator=matches_re(r"https?://", func=re.match))
    model: str
    api_key: str | None = field(default=None, repr=False)
    on_this_machine: bool = field(default=Factory(lambda self: server_is_here(self.base_url), takes_self=True))


@frozen(kw_only=True)
class ToolAvailability:
    """Whether a runner's external tool can be used here, and what to do when it cannot."""

    available: bool
    detail: str

    @classmethod
    def of_executable(cls, executable: str, install_hint: str) -> ToolAvailability:
        """Available when ``executable`` is on PATH or beside Arena's interpreter (installed in its
        environment, not activated): the detail is its path; else the hint."""
        beside = Path(sys.executable).parent / executable
        found = shutil.which(executable) or (str(beside) if beside.is_file() else None)
        if found:
            return cls(available=True, detail=found)
        return cls(available=False, detail=f"{executable} is not installed: {install_hint}")

    def require(self) -> None:
        """A :class:`UsageError` saying what to install, when the tool is not available."""
        if not self.available:
            raise UsageError(self.detail)


@frozen(kw_only=True)
class RunOptions:
    """How a runner builds its traffic, beyond the workload's shape.

    ``tokenizer``: a local ``tokenizer.json`` for exact prompts (else the server's ``/tokenize``,
    else an approximation from ``usage``). ``corpus``: a text file for closed-loop prompts (else
    prose from the ShareGPT package). ``dataset``: a ShareGPT JSON file (else the package's).
    ``exact_output``: ask for exactly the workload's output length (``ignore_eos``/``min_tokens``).
    """

    tokenizer: Path | None = None
    corpus: Path | None = None
    dataset: Path | None = None
    exact_output: bool = False
    check_coherence: bool = False
    request_timeout_s: float = field(default=3600.0, validator=bounds.TIMEOUT_S)


@frozen(kw_only=True)
class RunContext:
    """Everything a runner needs besides the workload: where, how, and where to write.

    A runner writes its files under ``output_dir`` (request records as they complete, the
    reference tool's JSON, ``session.json``) through :meth:`write_json` and :meth:`path`, and
    returns an unscaled :class:`WorkloadResult`; the run session (:mod:`arena_core.run.session`) adds telemetry, the ceiling check
    and the scale.
    """

    endpoint: Endpoint
    output_dir: Path
    options: RunOptions = RunOptions()
    progress: Callable[[str], None] | None = field(default=None, eq=False)
    #: ``on_request(done, total, output_tokens)`` after every request, for a live display; it is
    #: called on the measuring loop, so it must be cheap (the CLI throttles what it draws).
    on_request: Callable[[int, int, int], None] | None = field(default=None, eq=False)

    def path(self, name: str) -> Path:
        """``output_dir / name``, the folder created first."""
        self.output_dir.mkdir(parents=True, exist_ok=True)
        return self.output_dir / name

    def write_json(self, name: str, data: Any) -> Path:
        """Write ``data`` as ``output_dir / name`` atomically (a crash never leaves half a file)."""
        path = self.path(name)
        write_json_atomic(path, data)
        return path

    def say(self, line: str) -> None:
        """A progress line, when anyone listens."""
        if self.progress is not None:
            self.progress(line)


class Runner(Protocol):
    """What a runner's factory returns: drives one workload against one endpoint."""

    def run(self, workload: WorkloadSpec, context: RunContext) -> WorkloadResult:
        """Build all prompts, drive the load, write request records under ``context.output_dir``."""
        ...


@frozen(kw_only=True)
class ReportReader:
    """How a runner reads its reference tool's saved JSON (``arena import`` and the external
    instrument use the same reader): ``recognises(data)`` says whether a document is this tool's,
    ``read(data, workload, expected_requests)`` returns the Arena result (``expected_requests``
    is ``None`` when unknown, as for an imported file). ``caveat`` is what the format cannot say,
    shown on imported results."""

    tool: str
    recognises: Callable[[Mapping[str, Any]], bool]
    read: Callable[[Mapping[str, Any], str, int | None], WorkloadResult]
    caveat: str = ""


@frozen(kw_only=True)
class RunnerSpec:
    """A load generator. ``create(instrument)`` returns a :class:`Runner` for one of its
    ``instruments`` (``native``: Arena's own; ``external``: the reference tool)."""

    name: str = field(validator=valid_name)
    description: str
    loop: LoopKind = field(validator=in_(("closed", "open")))
    instruments: tuple[str, ...]
    create: Callable[[str], Runner]
    check_external: Callable[[], ToolAvailability] | None = None
    #: ``command(workload, base_url, model)``: the reference tool's command line for a workload.
    command: Callable[[WorkloadSpec, str, str], list[str]] | None = None
    #: ``command_options(workload, options)``: the flags a run's options add to that command (a
    #: local tokenizer, the dataset file), so a card's command is the one to type.
    command_options: Callable[[WorkloadSpec, RunOptions], list[str]] | None = None
    #: The reader of the reference tool's JSON, when the runner has one.
    report: ReportReader | None = None
    #: ``preflight(workload, instrument, context)``: raise :class:`UsageError` (naming the flag that
    #: would help) when the workload cannot run against this server with these options. Called for
    #: every workload once the server is up, before the run's first request, so a run never stops
    #: half-way for something that could have been known at the start.
    preflight: Callable[[WorkloadSpec, str, RunContext], None] | None = None
    #: ``recompute(folder)``: the result again from a workload's folder (its stored records and
    #: what the runner kept beside them), by the code that made it, so a result can be checked
    #: against its records (``arena verify BUNDLE``); raises :class:`UsageError` saying what is
    #: missing when the folder cannot be recomputed (another instrument, an earlier Arena).
    recompute: Callable[[Path], WorkloadResult] | None = None

    def command_for(self, workload: WorkloadSpec, base_url: str, model: str, options: RunOptions | None = None) -> str | None:
        """The reference tool's command for ``workload`` as one line (shown on cards and by
        ``arena show workload``), with what ``options`` add; ``None`` when the runner has no
        reference tool."""
        if self.command is None:
            return None
        extra = self.command_options(workload, options) if options is not None and self.command_options is not None else []
        # quoted for a shell, whatever a server or a file named the model (a ";" or "$(...)" in it
        # is text, never a second command)
        return shlex.join([*self.command(workload, base_url, model), *extra])

"""An example Arena backend: a server started from the command line the user gives.

People run SGLang, TGI, Ollama or a llama-server of their own build from a command line; this
backend starts that command (``ARENA_SERVER_COMMAND``, with ``{port}`` where Arena's chosen port
goes) with Arena's public launch kit, waits for its health path, asks it which model it serves
and stops it when the run ends. It declares no dialect of its own: every installed backend's
dialect is read on any server, so a llama-server started this way is named from its GGUF
header and its KV cache and queue are read from its ``/metrics``, as when Arena starts it.
"""

from __future__ import annotations

import os
import shlex
import urllib.request
from collections.abc import Callable, Mapping

from arena_core import BackendRequest, BackendSpec, Endpoint, UsageError, hookimpl, launch_kit, parse_json, read_bounded

COMMAND_ENV = "ARENA_SERVER_COMMAND"
HEALTH_ENV = "ARENA_SERVER_HEALTH"
START_ENV = "ARENA_SERVER_START_S"
#: How long a server may take to start unless ``ARENA_SERVER_START_S`` says (a large model loads for minutes).
START_S = 300.0
MOST_START_S = 3600.0
#: The model list is read within this deadline and size; an id longer than this is no id.
LIST_DEADLINE_S = 15.0
LIST_MAX_BYTES = 1 << 20
MAX_MODEL_ID = 512


def recorded(argv: list[str]) -> list[str]:
    """``argv`` as the manifest keeps it: the value after a flag that names a secret (the launch
    kit's rule: ``--api-key``, ``--hf-token``; and one given as ``--api-key=VALUE``) replaced by
    ``[redacted]``."""
    kept: list[str] = []
    for part in argv:
        flag, equals, _ = part.partition("=")
        if kept and launch_kit.names_a_secret(kept[-1]) and "=" not in kept[-1]:
            kept.append("[redacted]")
        elif equals and launch_kit.names_a_secret(flag):
            kept.append(f"{flag}=[redacted]")
        else:
            kept.append(part)
    return kept


def _start_s() -> float:
    said = os.environ.get(START_ENV, "")
    try:
        seconds = float(said) if said else START_S
    except ValueError:
        raise UsageError(f"{START_ENV}={said[:40]!r} is not a number of seconds") from None
    if not 1 <= seconds <= MOST_START_S:
        raise UsageError(f"{START_ENV}={said[:40]!r}: give 1 to {MOST_START_S:.0f} seconds")
    return seconds


class CommandServer(launch_kit.LocalServer):
    """The server ``ARENA_SERVER_COMMAND`` starts, on the port Arena chose on 127.0.0.1."""

    def __init__(self, request: BackendRequest) -> None:
        super().__init__(request.run_dir, model_name="")
        template = os.environ.get(COMMAND_ENV, "")
        if not template.strip():
            raise UsageError(f"the command backend starts the server {COMMAND_ENV} names: set it to its command line, with {{port}} where the port goes")
        try:
            self.argv = shlex.split(template)
        except ValueError as exc:
            raise UsageError(f"{COMMAND_ENV}: {exc}") from None
        self.argv += list(request.server_args)  # --server-arg: after the command line's own
        if not any("{port}" in part for part in self.argv):
            raise UsageError(f"{COMMAND_ENV}: the command line has no {{port}}; the server must listen on the port Arena chose")
        self.health = os.environ.get(HEALTH_ENV, "/health")
        if not self.health.startswith("/") or not self.health.isprintable() or len(self.health) > 200:
            raise UsageError(f"{HEALTH_ENV}={self.health[:40]!r}: give the path that answers once the server is ready, such as /health")
        self.start_s = _start_s()

    def start(self) -> Endpoint:
        argv = [part.replace("{port}", str(self.port)) for part in self.argv]
        endpoint = self.launch(argv, self.start_s, health=self.health)
        self.model_name = self._served_model(endpoint.base_url)
        return Endpoint(base_url=endpoint.base_url, model=self.model_name)

    def _served_model(self, base_url: str) -> str:
        """The first model the server lists (its id: bounded text)."""
        try:
            with urllib.request.urlopen(base_url + "/v1/models", timeout=LIST_DEADLINE_S) as answer:
                listing = parse_json(read_bounded(answer, max_bytes=LIST_MAX_BYTES, deadline_s=LIST_DEADLINE_S), max_bytes=LIST_MAX_BYTES)
        except (OSError, ValueError) as exc:
            raise UsageError(f"the server {COMMAND_ENV} started does not list its models ({base_url}/v1/models: {exc})") from None
        entries = listing.get("data") if isinstance(listing, dict) else None
        ids = (
            [e["id"] for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str) and 0 < len(e["id"]) <= MAX_MODEL_ID]
            if isinstance(entries, list)
            else []
        )
        if not ids:
            raise UsageError(f"the server {COMMAND_ENV} started lists no model at {base_url}/v1/models")
        return ids[0]

    @property
    def facts(self) -> Mapping[str, object]:
        return {"backend": "command", "command": recorded(self.command), "pid": self.pid}


@hookimpl
def arena_register_backends(register: Callable[[BackendSpec], None]) -> None:
    register(
        BackendSpec(
            name="command",
            description=f"A server started from the command line {COMMAND_ENV} gives ({{port}}: the port Arena chose on 127.0.0.1).",
            create=CommandServer,
            card_facts=("command",),
        )
    )

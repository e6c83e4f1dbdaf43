"""What vLLM and llama.cpp say of their model and machine beyond the OpenAI API, read as each
backend's :class:`~arena_core.ServerDialect` (the core reads every registered dialect on any
server, an attached one included, and checks every fact again).

* vLLM lists its model with ``root`` (the folder or id it loaded); a folder on this machine is
  described by the model sources (its config.json). Its ``cache_config_info`` metric says where
  its KV cache lives: up to 0.2x ``cpu_kvcache_space_bytes`` was set only by the CPU backend
  ("None" on a GPU); from 0.3x that label is gone and a CPU's blocks are ``num_gpu_blocks`` too
  (``tests/fixtures/vllm_real/metrics.txt``), so only the cache's size is said.
* llama.cpp lists its model with ``meta`` (parameters, file size) and answers ``/props`` with its
  ``model_path`` (a GGUF file, read here when it is on this machine), its build and its slots;
  it does not report its device over HTTP (its log does).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arena_backends.gguf_header import gguf_metadata
from arena_backends.vllm_dialect import VLLM_METRICS
from arena_core import ModelQuery, ServerAnswers, ServerDialect, UsageError

#: How much of a label value or a build string a server's description of its machine may show.
CLUE_CHARS = 60
#: The longest path a server may name for Arena to open (a longer one is not a file here).
MAX_PATH_CHARS = 4096
#: A raw count (parameters, bytes) a model list may state and still be believed.
MOST_COUNT = 1e13


def _count(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= MOST_COUNT else None


def _positive_int(value: Any) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return 0
    return number if 0 < number < 10**12 else 0


def _clip(text: str) -> str:
    return text if len(text) <= CLUE_CHARS else text[:CLUE_CHARS] + "…"


def _local_path(value: Any) -> str:
    """A path a server named, whole (it is opened, not shown), or "" for anything else."""
    return value if isinstance(value, str) and len(value) <= MAX_PATH_CHARS and value.isprintable() else ""


def vllm_model_facts(answers: ServerAnswers) -> dict[str, Any]:
    """``root``, and what a served folder's config.json says of its model (its name,
    architecture, parameters and precision) as a model source reads it."""
    root = _local_path(answers.model_entry.get("root"))
    facts: dict[str, Any] = {"served_root": root} if root else {}
    config = os.path.join(root, "config.json")
    if not (answers.describe and answers.here and os.path.isabs(root) and os.path.isfile(config)):
        return facts
    try:
        described = answers.describe(ModelQuery(source=config, named_by="the served folder"))
    except UsageError:
        return facts
    if described is not None:
        facts.update(
            config_name=described.config_name,
            architecture=described.architecture_class,
            params_total_b=described.spec.params_total_b,
            precision=described.spec.precision,
        )
    return facts


def vllm_machine(answers: ServerAnswers) -> str:
    """Where vLLM's KV cache lives and how large it is, from ``cache_config_info``'s labels."""
    info = VLLM_METRICS.cache_config_info
    labels = next(
        (
            dict(re.findall(r'(\w+)="([^"]*)"', line.partition("{")[2].partition("}")[0]))
            for line in answers.metrics_page.splitlines()
            if line.startswith(info + "{")
        ),
        {},
    )
    if not labels:
        return ""
    cpu_space = labels.get("cpu_kvcache_space_bytes")
    if cpu_space not in (None, "", "None", "0"):
        return f"vLLM on a CPU ({info}: cpu_kvcache_space_bytes={_clip(cpu_space)})"
    tokens = _positive_int(labels.get("kv_cache_size_tokens"))
    blocks, size = _positive_int(labels.get("num_gpu_blocks")), _positive_int(labels.get("block_size"))
    if not (blocks or tokens):
        return ""
    utilisation = labels.get("gpu_memory_utilization")
    share = f", gpu_memory_utilization={_clip(utilisation)}" if utilisation else ""
    cache = f"a KV cache of {tokens:,} tokens" if tokens else (f"a KV cache of {blocks * size:,} tokens" if size else f"{blocks:,} KV-cache blocks")
    if cpu_space is None:  # 0.3x states it no more, and counts a CPU's blocks as num_gpu_blocks
        return f"vLLM ({cache}{share}, from {info}, which does not say whether on a GPU or a CPU)"
    return f"vLLM on a GPU ({cache} in GPU memory{share}, from {info})"


def llama_cpp_model_facts(answers: ServerAnswers) -> dict[str, Any]:
    """``meta``'s parameters and size, the model file ``/props`` names, and what its GGUF header
    says (name, architecture, quantisation, size) when the file is on this machine."""
    facts: dict[str, Any] = {}
    meta = answers.model_entry.get("meta")
    meta = meta if isinstance(meta, Mapping) else {}
    if (params := _count(meta.get("n_params"))) is not None:
        facts["params_total_b"] = round(params / 1e9, 3)
    if (size := _count(meta.get("size"))) is not None:
        facts["file_gb"] = round(size / 1e9, 3)
    path = _local_path(answers.pages.get("/props", {}).get("model_path"))
    if path:
        facts["model_file"] = Path(path).name
        if answers.here and path.endswith(".gguf") and Path(path).is_file():
            facts.update(_gguf_facts(gguf_metadata(Path(path))))
    return facts


def _gguf_facts(metadata: Mapping[str, Any]) -> dict[str, Any]:
    facts = {
        fact: metadata[key]
        for key, fact in (("general.name", "gguf_name"), ("general.architecture", "architecture"), ("quantisation", "quantisation"))
        if key in metadata
    }
    if (size := _count(metadata.get("file_bytes"))) is not None:
        facts["file_gb"] = round(size / 1e9, 3)
    return facts


def llama_cpp_machine(answers: ServerAnswers) -> str:
    """llama.cpp's build and slots, from ``/props``; it names no device there."""
    props = answers.pages.get("/props", {})
    if "total_slots" not in props:
        return ""
    build = props.get("build_info")
    slots = _positive_int(props.get("total_slots"))
    return f"llama.cpp (build {_clip(build) if isinstance(build, str) else 'unknown'}, {slots} slots), which does not report its device"


VLLM_DIALECT = ServerDialect(model_facts=vllm_model_facts, machine=vllm_machine)
LLAMA_CPP_DIALECT = ServerDialect(pages=("/props",), model_facts=llama_cpp_model_facts, machine=llama_cpp_machine)

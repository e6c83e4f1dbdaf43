"""Where the measured server runs, and what Arena may read about its machine from here.

A server Arena launched, or one at a loopback address, runs on this machine: its hardware is
detected here and memory is read here. A server at any other address runs on a machine Arena
cannot see: its hardware is what ``--hardware`` names, else :data:`UNNAMED_SERVER` (no decode
ceiling, no memory read here -- the client's figures would be about the wrong machine), and the
memory watchdog, which guards the machine Arena runs on, has nothing of the server's to guard.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from arena_core.loadgen import ChatClient, run_measurement
from arena_core.run.telemetry import read_metrics_page
from arena_core.types import Endpoint, HardwareProfile, MetricsDialect

UNNAMED_SERVER = HardwareProfile(
    name="unnamed",
    title="the server's machine (not named)",
    description="A server on another machine, its hardware not named with --hardware: no ceiling check, no memory read from here.",
    memory_gb=None,
    unified_memory=False,
)


#: How much of a label value or a build string a server's own description may show.
CLUE_CHARS = 60


def what_the_server_says(props: Any, metrics_page: str | None, dialects: Sequence[MetricsDialect]) -> str:
    """What a server says of the machine it runs on, in one line ("" when it says nothing).

    vLLM's ``vllm:cache_config_info`` named where its KV cache lives up to 0.2x:
    ``cpu_kvcache_space_bytes`` set only by its CPU backend ("None" on a GPU). From 0.3x the label
    is gone and a CPU's blocks are ``num_gpu_blocks`` too (tests/fixtures/vllm_real/metrics.txt):
    the device is then not said, only the KV cache (``kv_cache_size_tokens``, where stated). llama.cpp's ``/props`` names its build
    but not its device (its log does; its HTTP API does not)."""
    info = next((d.cache_config_info for d in dialects if d.cache_config_info and f"{d.cache_config_info}{{" in (metrics_page or "")), "")
    labels = _cache_config_labels(metrics_page or "", info)
    if labels:
        cpu_space = labels.get("cpu_kvcache_space_bytes")
        if cpu_space not in (None, "", "None", "0"):
            return f"vLLM on a CPU ({info}: cpu_kvcache_space_bytes={_clip(cpu_space)})"
        tokens = _positive_int(labels.get("kv_cache_size_tokens"))
        blocks, size = _positive_int(labels.get("num_gpu_blocks")), _positive_int(labels.get("block_size"))
        utilisation = labels.get("gpu_memory_utilization")
        share = f", gpu_memory_utilization={_clip(utilisation)}" if utilisation else ""
        cache = (
            f"a KV cache of {tokens:,} tokens" if tokens else (f"a KV cache of {blocks * size:,} tokens" if blocks and size else f"{blocks:,} KV-cache blocks")
        )
        if cpu_space is None and (blocks or tokens):  # 0.3x states it no more, and counts a CPU's blocks as num_gpu_blocks
            return f"vLLM ({cache}{share}, from {info}, which does not say whether on a GPU or a CPU)"
        if blocks or tokens:
            return f"vLLM on a GPU ({cache} in GPU memory{share}, from {info})"
    if isinstance(props, dict) and "total_slots" in props:
        build = props.get("build_info")
        slots = _positive_int(props.get("total_slots"))
        return f"llama.cpp (build {_clip(build) if isinstance(build, str) else 'unknown'}, {slots} slots), which does not report its device"
    return ""


def _cache_config_labels(page: str, info: str) -> dict[str, str]:
    """The labels of the info metric ``info`` on a Prometheus page (none where it is not there)."""
    for line in page.splitlines():
        if info and line.startswith(info + "{"):
            return dict(re.findall(r'(\w+)="([^"]*)"', line.partition("{")[2].partition("}")[0]))
    return {}


def _positive_int(value: Any) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return 0
    return number if 0 < number < 10**12 else 0


def _clip(text: str) -> str:
    return text if len(text) <= CLUE_CHARS else text[:CLUE_CHARS] + "…"


def ask_about_its_machine(endpoint: Endpoint, profiles: list[str], dialects: Sequence[MetricsDialect]) -> str:
    """The line a run prints when its server's machine is not named: what the server says of it
    (``/props``, ``/metrics``; each read with a deadline, either may be absent) and how to name it
    (``profiles``: those that can name another machine)."""

    async def props() -> Any:
        client = ChatClient(endpoint, request_timeout=10.0)
        try:
            status, answer, exchange = await client.call("GET", "/props")
            return answer if status == 200 and not exchange.error else None
        finally:
            await client.close()

    said = what_the_server_says(run_measurement(props()), read_metrics_page(f"{endpoint.base_url}/metrics"), dialects)
    told = f"the server says: {said}" if said else "the server says nothing of its device"
    known = ", ".join(profiles)
    return f"hardware: not named, so judged without a physical ceiling ({told}); name its machine with --hardware ({known})"

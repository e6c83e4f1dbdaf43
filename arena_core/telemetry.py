"""Telemetry beside the measurement: a background thread samples memory and the server's own
Prometheus counters about once a second while a workload runs (measurement.md).

Memory in use is ``MemTotal - MemAvailable`` from ``/proc/meminfo`` -- the right figure on
unified memory (GB10, where NVML answers "Not Supported") and on a CPU host. The server's
``/metrics`` lines of llama.cpp (``llamacpp:``) and vLLM (``vllm:``) are kept as they are. Each
sample is a JSON line in ``telemetry.jsonl``; the summary gives the peak memory and how much each
counter grew. Reading both costs well under a millisecond of a second, on another thread.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attrs import frozen

PREFIXES = ("llamacpp:", "vllm:")


def _meminfo(meminfo: Path) -> dict[str, int]:
    values = {}
    try:
        for line in meminfo.read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("MemTotal", "MemAvailable"):
                values[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return {}
    return values if len(values) == 2 else {}


def memory_used_bytes(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """``MemTotal - MemAvailable`` in bytes, or None where /proc/meminfo is not there."""
    values = _meminfo(meminfo)
    return values["MemTotal"] - values["MemAvailable"] if values else None


def memory_available_bytes(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    return _meminfo(meminfo).get("MemAvailable")


#: Stop a run when less memory than this stays available: on unified memory (GB10) running out
#: freezes the whole machine instead of failing one process (hardware.md 2.1).
WATCHDOG_MARGIN_BYTES = 2 * 10**9
MARGIN_ENV = "ARENA_MEMORY_MARGIN_GB"


def watchdog_margin_bytes() -> int:
    """The watchdog's margin: ``ARENA_MEMORY_MARGIN_GB`` when set, else 2 GB."""
    import os

    value = os.environ.get(MARGIN_ENV, "").strip()
    try:
        return int(float(value) * 1e9) if value else WATCHDOG_MARGIN_BYTES
    except ValueError:
        from arena_core.errors import UsageError

        raise UsageError(f"{MARGIN_ENV}={value!r}: expected a number of GB") from None


def parse_metrics(text: str) -> dict[str, float]:
    """The unlabelled ``llamacpp:`` / ``vllm:`` samples of a Prometheus text page."""
    found = {}
    for line in text.splitlines():
        if line.startswith(PREFIXES) and "{" not in line:
            name, _, value = line.partition(" ")
            try:
                found[name] = float(value.split()[0])
            except (ValueError, IndexError):
                continue
    return found


def read_metrics(url: str) -> dict[str, float] | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return parse_metrics(answer.read().decode("utf-8", "replace"))
    except (urllib.error.URLError, OSError, ValueError):
        return None


@frozen(kw_only=True)
class TelemetrySummary:
    samples: int
    peak_memory_gb: float | None
    metrics_growth: dict[str, float]


class TelemetrySampler:
    def __init__(
        self,
        path: Path,
        *,
        metrics_url: str | None,
        interval_s: float = 1.0,
        meminfo: Path = Path("/proc/meminfo"),
        on_low_memory: Callable[[int], None] | None = None,
        margin_bytes: int = WATCHDOG_MARGIN_BYTES,
    ) -> None:
        self.path = path
        self.on_low_memory = on_low_memory
        self.margin_bytes = margin_bytes
        self.tripped = False
        self.metrics_url = metrics_url
        self.interval_s = interval_s
        self.meminfo = meminfo
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="arena-telemetry", daemon=True)
        self._samples: list[dict[str, Any]] = []

    def start(self) -> TelemetrySampler:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._sample()  # one before the load starts
        self._thread.start()
        return self

    def _sample(self) -> None:
        sample: dict[str, Any] = {"t_ns": time.perf_counter_ns(), "wall": time.time(), "memory_used_bytes": memory_used_bytes(self.meminfo)}
        if self.metrics_url:
            sample["metrics"] = read_metrics(self.metrics_url)
        self._samples.append(sample)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(sample) + "\n")
        available = memory_available_bytes(self.meminfo)
        if available is not None and available < self.margin_bytes and not self.tripped and self.on_low_memory:
            self.tripped = True  # the watchdog fires once; the callback stops the run
            self.on_low_memory(available)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def stop(self) -> TelemetrySummary:
        self._stop.set()
        self._thread.join(timeout=10)
        self._sample()  # one after the load ends
        memory = [s["memory_used_bytes"] for s in self._samples if s["memory_used_bytes"] is not None]
        with_metrics = [s["metrics"] for s in self._samples if s.get("metrics")]
        growth = {}
        if len(with_metrics) >= 2:
            first, last = with_metrics[0], with_metrics[-1]
            growth = {name: last[name] - first[name] for name in last if name in first and name.endswith("_total")}
        return TelemetrySummary(samples=len(self._samples), peak_memory_gb=max(memory) / 1e9 if memory else None, metrics_growth=growth)

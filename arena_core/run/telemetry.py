"""Telemetry beside the measurement: a background thread samples the hardware probes and the
server's own Prometheus counters about once a second while a workload runs (measurement.md).

Which probes run is the hardware profile's choice (:mod:`arena_core.run.probes`): memory in use is
``MemTotal - MemAvailable`` on unified memory and a CPU host, NVML's device memory on a discrete
GPU; NVML adds power, energy, clocks and throttle reasons. The server's ``/metrics`` samples
whose names start with a registered backend's prefix are kept as they are, summed over label
sets; the summary maps each engine's names onto one vocabulary through the dialect its backend
declares (:class:`~arena_core.types.MetricsDialect`). Each
sample is a JSON line in ``telemetry.jsonl``. The sampler's own CPU cost is shown by
``bench/telemetry_overhead.py``.
"""

from __future__ import annotations

import json
import math
import os
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from arena_core.loadgen.bounded import read_bounded
from arena_core.loadgen.cache_state import METRICS_DEADLINE_S, METRICS_MAX_BYTES
from arena_core.run.manifest import ModelMemory
from arena_core.run.probes import Probe, meminfo_probe, throttle_reason_names
from arena_core.types import MetricsDialect

#: Stop a run when less memory than this stays available: on unified memory (GB10) running out
#: freezes the whole machine instead of failing one process (hardware.md 2.1).
WATCHDOG_MARGIN_BYTES = 2 * 10**9
MARGIN_ENV = "ARENA_MEMORY_MARGIN_GB"


def watchdog_margin_bytes() -> int:
    """The watchdog's margin: ``ARENA_MEMORY_MARGIN_GB`` when set, else 2 GB."""
    value = os.environ.get(MARGIN_ENV, "").strip()
    try:
        return int(float(value) * 1e9) if value else WATCHDOG_MARGIN_BYTES
    except ValueError:
        from arena_core.errors import UsageError

        raise UsageError(f"{MARGIN_ENV}={value!r}: expected a number of GB") from None


def parse_metrics(text: str, dialects: Sequence[MetricsDialect]) -> dict[str, float]:
    """The samples of a Prometheus text page under the ``dialects``' prefixes, each name summed
    over its label sets (an engine may label every sample with the model; histogram buckets are
    left out)."""
    prefixes = tuple(dialect.prefix for dialect in dialects)
    found: dict[str, float] = {}
    for line in text.splitlines():
        if not prefixes or not line.startswith(prefixes):
            continue
        name, labels, rest = line.partition("{")
        if labels:
            rest = rest.partition("}")[2]
        else:
            name, _, rest = line.partition(" ")
        name = name.strip()
        if name.endswith("_bucket"):
            continue
        try:
            found[name] = found.get(name, 0.0) + float(rest.split()[0])
        except (ValueError, IndexError):
            continue
    return found


def read_metrics(url: str, dialects: Sequence[MetricsDialect]) -> dict[str, float] | None:
    page = read_metrics_page(url)
    return None if page is None else parse_metrics(page, dialects)


def read_metrics_page(url: str) -> str | None:
    """The Prometheus page at ``url`` as text, or None (absent, too slow, too large)."""
    try:
        with urllib.request.urlopen(url, timeout=METRICS_DEADLINE_S) as answer:
            return read_bounded(answer, max_bytes=METRICS_MAX_BYTES, deadline_s=METRICS_DEADLINE_S).decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError):
        return None


def memory_in_use(sample: dict[str, Any], unified: bool) -> int | None:
    """The memory figure that matters: system memory on unified machines, the GPUs' otherwise."""
    gpu = [value for key, value in sample.items() if key.startswith("gpu") and key.endswith("_memory_used_bytes")]
    if gpu and not unified:
        return sum(gpu)
    return sample.get("memory_used_bytes")


def sample_now(probes: Sequence[Probe]) -> dict[str, Any]:
    """One sample of every probe."""
    sample: dict[str, Any] = {}
    for probe in probes:
        sample.update(probe())
    return sample


def memory_now(probes: Sequence[Probe], unified: bool) -> int | None:
    """Memory in use right now, as :func:`memory_in_use` counts it, from one sample of ``probes``."""
    return memory_in_use(sample_now(probes), unified)


def model_memory(
    facts: Mapping[str, Any], before: int | None, after: int | None, *, unified: bool = True, server_rss: int | None = None, cpu_only: bool = False
) -> ModelMemory | None:
    """The memory the model takes ("VRAM" on the card): the server's own figure when it prints
    one (a backend's ``model_memory_gib`` fact, read from its log); on a machine without a GPU, the resident memory of
    the server's processes (all it holds is there, and no other program's memory is counted);
    else what the probe saw grow while it loaded. When that did not grow (other processes freed
    more while the server loaded: a machine-wide figure on a busy machine), the server's own
    resident memory once loaded, where it could be read."""
    if "model_memory_gib" in facts:
        said = facts.get("model_memory_source")
        return ModelMemory(gb=facts["model_memory_gib"] * 2**30 / 1e9, source=said if isinstance(said, str) and said else "the server's log")
    if cpu_only and server_rss:
        return ModelMemory(gb=server_rss / 1e9, source="the server's own processes once loaded (VmRSS of its process tree; no GPU holds any of it)")
    if before is not None and after is not None:
        if after <= before and server_rss:
            return ModelMemory(gb=server_rss / 1e9, source="the server's resident memory once loaded (VmRSS; memory in use fell while it loaded)")
        probe = "MemTotal - MemAvailable" if unified else "NVML device memory"
        return ModelMemory(gb=max(0, after - before) / 1e9, source=f"memory in use before and after the server loaded ({probe})")
    return None


def stop_like_ctrl_c(available: int) -> None:
    """The memory watchdog's action: stop the load the way Ctrl-C does, so every finished record is kept."""
    os.kill(os.getpid(), signal.SIGINT)


def _gpu_sum(sample: dict[str, Any], suffix: str) -> float | None:
    values = [value for key, value in sample.items() if key.startswith("gpu") and key.endswith(suffix)]
    return sum(values) if values else None


def summarise(
    samples: Sequence[dict[str, Any]], *, unified: bool, output_tokens: float | None = None, dialects: Sequence[MetricsDialect]
) -> dict[str, float | None]:
    """Per-workload figures from telemetry samples: peaks, energy, throttling, server gauges."""
    summary: dict[str, float | None] = {"telemetry_samples": float(len(samples))}
    memory = [m for s in samples if (m := memory_in_use(s, unified)) is not None]
    summary["peak_memory_gb"] = max(memory) / 1e9 if memory else None
    server = [m for s in samples if (m := _gpu_sum(s, "_server_memory_bytes")) is not None]
    if server:
        summary["server_gpu_memory_peak_gb"] = max(server) / 1e9
    resident = [s["server_rss_bytes"] for s in samples if s.get("server_rss_bytes")]
    if resident:  # the server's own processes, of a server Arena launched here
        summary["server_rss_peak_gb"] = max(resident) / 1e9
    energy = _energy_joules(samples)
    if energy is not None:
        summary["energy_j"] = energy
    cpu = [s["cpu_energy_j"] for s in samples if "cpu_energy_j" in s]
    if len(cpu) >= 2:
        summary["cpu_energy_j"] = cpu[-1] - cpu[0]
    power = [p for s in samples if (p := _gpu_sum(s, "_power_w")) is not None]
    if power:
        summary["peak_power_w"] = max(power)
    masks = [[v for k, v in s.items() if k.endswith("_throttle_mask")] for s in samples]
    masks = [m for m in masks if m]
    if masks:  # "gpu_idle" alone is no throttle
        throttled = sum(1 for m in masks if any(set(throttle_reason_names(x)) - {"gpu_idle"} for x in m))
        summary["throttled_fraction"] = throttled / len(masks)
    clocks = [c for s in samples for k, c in s.items() if k.endswith("_sm_clock_mhz")]
    if clocks:
        summary["sm_clock_min_mhz"] = min(clocks)
    pages = [s["metrics"] for s in samples if s.get("metrics")]
    summary.update(server_gauges(pages, dialects))
    summary.update(energy_per_token(summary, samples, output_tokens, dialects))
    return summary


def energy_per_token(
    summary: dict[str, float | None], samples: Sequence[dict[str, Any]], output_tokens: float | None, dialects: Sequence[MetricsDialect]
) -> dict[str, float | None]:
    """Joules per output token and per token (prompt and output) of every energy source read
    (GPUs by NVML, CPU packages by RAPL), over the same window as the tokens: the server's own
    counters, which see the warmup and the session's probes as the energy does. A counter is
    believed only if its growth is a finite number no smaller than the workload's own measured
    output (a server's page is not trusted); otherwise, and without counters, the measured output
    tokens (the warmup is then in the energy only: a little high)."""
    energy = sum(v for key in ("energy_j", "cpu_energy_j") if (v := summary.get(key)) is not None)
    if not (math.isfinite(energy) and energy > 0):
        return {}
    found: dict[str, float | None] = {"energy_total_j": energy}
    span = (samples[-1]["t_ns"] - samples[0]["t_ns"]) / 1e9
    found["mean_power_w"] = energy / span if span > 0 else None
    least = output_tokens or 0.0
    # the server's own counters of output tokens, prompt tokens computed and found in the cache
    for output, prompt, cached in (
        (d.grown(d.generated_tokens), d.grown(d.prompt_tokens), d.grown(d.cached_prompt_tokens)) for d in dialects if d.generated_tokens
    ):
        produced = summary.get(output)
        if produced is None or not (math.isfinite(produced) and produced > 0 and produced >= least):
            continue
        found["energy_per_output_token_j"] = energy / produced
        read = [summary.get(prompt), summary.get(cached) if cached else 0.0]
        if all(r is None or (math.isfinite(r) and r >= 0) for r in read):
            found["energy_per_token_j"] = energy / (produced + sum(r or 0.0 for r in read))
        break
    else:
        if output_tokens:
            found["energy_per_output_token_j"] = energy / output_tokens
    if found.get("energy_per_output_token_j") is not None:
        found["energy_per_1k_output_tokens_j"] = found["energy_per_output_token_j"] * 1000  # type: ignore[operator]
    return found


def _energy_joules(samples: Sequence[dict[str, Any]]) -> float | None:
    """The energy counter's growth; where there is none, power integrated over time."""
    counters = [(s["t_ns"], e) for s in samples if (e := _gpu_sum(s, "_energy_j")) is not None]
    if len(counters) >= 2:
        return counters[-1][1] - counters[0][1]
    powered = [(s["t_ns"], p) for s in samples if (p := _gpu_sum(s, "_power_w")) is not None]
    if len(powered) >= 2:
        return sum((t1 - t0) / 1e9 * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(powered, powered[1:]))
    return None


def server_gauges(pages: Sequence[dict[str, float]], dialects: Sequence[MetricsDialect]) -> dict[str, float]:
    """KV-cache peak, queue peaks and prefix-cache hit rate under one name whatever the engine
    (each read through the ``dialects``), plus how much each ``_total`` counter grew (``server_<name>``)."""
    found: dict[str, float] = {}
    for gauge in ("kv_cache_usage", "requests_running", "requests_waiting"):
        values = [page[name] for page in pages for dialect in dialects for name in getattr(dialect, gauge) if name in page]
        if values:
            found[f"{gauge}_peak"] = max(values)
    if len(pages) >= 2:
        first, last = pages[0], pages[-1]
        for name in last:
            if name.endswith("_total") and name in first:
                found["server_" + name.replace(":", "_")] = last[name] - first[name]
        for dialect in dialects:
            hits, lookups = dialect.prefix_cache_hits, dialect.prefix_cache_lookups
            if hits in last and hits in first and lookups and all(n in last and n in first for n in lookups):
                looked = sum(last[n] - first[n] for n in lookups)
                if looked > 0:
                    found["prefix_cache_hit_rate"] = (last[hits] - first[hits]) / looked
        gauge = next((d.prefix_cache_hit_rate for d in dialects if d.prefix_cache_hit_rate in last), None)
        if "prefix_cache_hit_rate" not in found and gauge:
            found["prefix_cache_hit_rate"] = last[gauge]
    return found


class TelemetrySampler:
    """Samples ``probes`` and the server's ``/metrics`` every ``interval_s`` on its own thread.

    ``on_low_memory`` is the watchdog: called once, from the sampler's thread, when
    ``MemAvailable`` falls below ``margin_bytes``.
    """

    def __init__(
        self,
        path: Path,
        *,
        metrics_url: str | None,
        dialects: Sequence[MetricsDialect],
        interval_s: float = 1.0,
        probes: Sequence[Probe] | None = None,
        meminfo: Path = Path("/proc/meminfo"),
        on_low_memory: Callable[[int], None] | None = None,
        margin_bytes: int = WATCHDOG_MARGIN_BYTES,
    ) -> None:
        self.path = path
        self.metrics_url = metrics_url
        self.dialects = tuple(dialects)
        self.interval_s = interval_s
        self.probes = list(probes) if probes is not None else [meminfo_probe(meminfo)]
        self.on_low_memory = on_low_memory
        self.margin_bytes = margin_bytes
        self.tripped = False
        self.samples: list[dict[str, Any]] = []
        #: CPU time the sampling itself took (thread CPU clock), for the overhead benchmark
        self.cpu_ns = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="arena-telemetry", daemon=True)

    def start(self) -> TelemetrySampler:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._sample()  # one before the load starts
        self._thread.start()
        return self

    def _sample(self) -> None:
        cpu_started = time.thread_time_ns()
        sample: dict[str, Any] = {"t_ns": time.perf_counter_ns(), "wall": time.time()}
        for probe in self.probes:
            sample.update(probe())
        if self.metrics_url:
            sample["metrics"] = read_metrics(self.metrics_url, self.dialects)
        self.samples.append(sample)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(sample) + "\n")
        self.cpu_ns += time.thread_time_ns() - cpu_started
        available = sample.get("memory_available_bytes")
        if available is not None and available < self.margin_bytes and not self.tripped and self.on_low_memory:
            self.tripped = True  # the watchdog fires once; the callback stops the run
            self.on_low_memory(available)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def stop(self) -> list[dict[str, Any]]:
        """Stop sampling (one last sample after the load) and return every sample."""
        self._stop.set()
        self._thread.join(timeout=10)
        self._sample()
        return self.samples

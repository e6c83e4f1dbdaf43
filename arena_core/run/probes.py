"""Hardware probes sampled by telemetry, chosen by the names a hardware profile lists.

- ``meminfo``: memory in use as ``MemTotal - MemAvailable`` -- right on unified memory (GB10,
  where NVML answers "Not Supported" for memory) and on a CPU host.
- ``nvml``: per GPU, device memory in use, the memory of the server's processes, power, the
  energy counter, the SM clock and why clocks are held down (NVML, ``nvidia-ml-py``).
- ``nvml-power``: the same without memory, for unified-memory NVIDIA machines.
- ``rapl``: the CPU packages' energy counters (Linux powercap, ``intel-rapl:N/energy_uj``; AMD
  processors publish theirs there too), unwrapped where a counter passes its range. They cover
  the processor packages only: not memory, disks or the rest of the box.

A probe returns a flat dict of numbers for one sample; a figure the driver does not support is
left out, never reported as 0. NVML is optional: where it cannot load, the probe says why once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

Probe = Callable[[], dict[str, Any]]

#: NVML's clock-event (throttle) reason bits, by name (nvml.h, ``nvmlClocksEventReason*``).
THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def throttle_reason_names(mask: int) -> list[str]:
    """The names of the bits set in an NVML clock-event reason mask ("gpu_idle" is no throttle)."""
    return [name for bit, name in THROTTLE_REASONS.items() if mask & bit]


def read_meminfo(meminfo: Path = Path("/proc/meminfo")) -> dict[str, int]:
    values = {}
    try:
        for line in meminfo.read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("MemTotal", "MemAvailable"):
                values[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return {}
    return values if len(values) == 2 else {}


def meminfo_probe(meminfo: Path = Path("/proc/meminfo")) -> Probe:
    def sample() -> dict[str, Any]:
        values = read_meminfo(meminfo)
        if not values:
            return {}
        return {"memory_used_bytes": values["MemTotal"] - values["MemAvailable"], "memory_available_bytes": values["MemAvailable"]}

    return sample


def server_rss_probe(server_pid: Callable[[], int | None], proc: Path = Path("/proc")) -> Probe:
    """Resident memory of the server's process tree (``VmRSS`` summed), beside the machine-wide
    figure: what the server itself holds, its host-side prompt cache included."""

    def sample() -> dict[str, Any]:
        pid = server_pid()
        if not pid:
            return {}
        total = 0
        for member in descendants(pid, proc):
            try:
                status = (proc / str(member) / "status").read_text()
            except OSError:
                continue  # it ended between the listing and the read
            total += next((int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmRSS:")), 0)
        return {"server_rss_bytes": total} if total else {}  # gone, or not ours to read

    return sample


POWERCAP = Path("/sys/class/powercap")


class RaplProbe:
    """The CPU packages' energy, summed, in joules since the probe started (``cpu_energy_j``).

    Each package's counter (``energy_uj``) wraps at ``max_energy_range_uj``; a fall between two
    samples is a wrap, counted as the range less the old reading plus the new one.
    """

    def __init__(self, packages: list[tuple[Path, int]]) -> None:
        self.packages = packages
        self._last: list[int | None] = [None] * len(packages)
        self._joules = 0.0

    @classmethod
    def find(cls, root: Path = POWERCAP) -> tuple[RaplProbe | None, str]:
        """The probe over every readable package domain under ``root``, or None and why not."""
        domains = sorted(root.glob("intel-rapl:[0-9]*")) if root.is_dir() else []
        packages = []
        for domain in domains:
            if ":" in domain.name.split("intel-rapl:", 1)[1]:
                continue  # a sub-domain (core, uncore, dram) of a package already counted
            try:
                name = (domain / "name").read_text().strip()
                int((domain / "energy_uj").read_text())  # unreadable (EACCES) or empty where hidden
                wrap = int((domain / "max_energy_range_uj").read_text())
            except (OSError, ValueError):
                continue
            if name.startswith("package") and wrap > 0:
                packages.append((domain / "energy_uj", wrap))
        if packages:
            return cls(packages), f"{len(packages)} CPU package energy counter(s) (RAPL powercap)"
        if not domains:
            return None, f"{root} has no RAPL domains on this machine: no CPU energy recorded"
        return None, f"{root}: the RAPL package counters are not readable here (root only, or hidden in a container): no CPU energy recorded"

    def __call__(self) -> dict[str, Any]:
        for index, (path, wrap) in enumerate(self.packages):
            try:
                now = int(path.read_text())
            except (OSError, ValueError):
                return {}  # one unreadable package would make the sum wrong
            last = self._last[index]
            if last is not None:
                self._joules += ((now - last) if now >= last else (wrap - last + now)) / 1e6
            self._last[index] = now
        return {"cpu_energy_j": self._joules}


def descendants(pid: int, proc: Path = Path("/proc")) -> set[int]:
    """``pid`` and every process below it (vLLM's engine core, a launcher's server child)."""
    children: dict[int, list[int]] = {}
    for stat in proc.glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            fields = text[text.rindex(")") + 2 :].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        if current not in found:
            found.add(current)
            todo.extend(children.get(current, ()))
    return found


class NvmlProbe:
    """NVML figures per GPU; ``nvml`` is the ``pynvml`` module (a stand-in in tests)."""

    #: The server's process tree is looked up again after this long: scanning /proc each second
    #: cost about 20 ms of CPU per sample on a gVisor GPU machine (scripts/device_check_nvml.py).
    PIDS_TTL_S = 10.0

    def __init__(self, nvml: Any, *, memory: bool = True, server_pids: Callable[[], Iterable[int]] = lambda: ()) -> None:
        self.nvml = nvml
        self.memory = memory
        self.server_pids = server_pids
        self._pids: set[int] = set()
        self._pids_at = float("-inf")
        nvml.nvmlInit()
        self.handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]

    def _try(self, call: Callable[..., Any], *args: Any) -> Any:
        try:
            return call(*args)
        except self.nvml.NVMLError:  # "Not Supported" (GB10 memory), or not on this driver
            return None

    def _server_pids(self) -> set[int]:
        now = time.monotonic()
        if not self._pids or now - self._pids_at > self.PIDS_TTL_S:  # (none yet: the server may just have started)
            self._pids, self._pids_at = set(self.server_pids()), now
        return self._pids

    def __call__(self) -> dict[str, Any]:
        nvml, sample = self.nvml, {}
        for index, handle in enumerate(self.handles):
            prefix = f"gpu{index}_"
            figures = {
                "power_w": (lambda mw: mw / 1000.0, self._try(nvml.nvmlDeviceGetPowerUsage, handle)),
                "energy_j": (lambda mj: mj / 1000.0, self._try(nvml.nvmlDeviceGetTotalEnergyConsumption, handle)),
                "sm_clock_mhz": (float, self._try(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM)),
            }
            reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or nvml.nvmlDeviceGetCurrentClocksThrottleReasons
            figures["throttle_mask"] = (int, self._try(reasons, handle))
            if self.memory:
                info = self._try(nvml.nvmlDeviceGetMemoryInfo, handle)
                figures["memory_used_bytes"] = (int, info.used if info is not None else None)
                running = self._try(nvml.nvmlDeviceGetComputeRunningProcesses, handle) or []
                pids = self._server_pids() if running else set()  # no GPU process: no /proc scan
                used = [p.usedGpuMemory for p in running if p.pid in pids and p.usedGpuMemory is not None]
                figures["server_memory_bytes"] = (int, sum(used) if used else None)
            sample.update({prefix + key: convert(value) for key, (convert, value) in figures.items() if value is not None})
        return sample


def load_nvml() -> tuple[Any | None, str]:
    """The ``pynvml`` module with NVML initialised, or None and why not."""
    try:
        import pynvml  # from nvidia-ml-py
    except ImportError:
        return None, "nvidia-ml-py is not installed"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return None, f"NVML did not load: {exc}"
    return pynvml, "NVML loaded"


def probes_for(
    names: Iterable[str],
    *,
    server_pid: Callable[[], int | None] = lambda: None,
    meminfo: Path = Path("/proc/meminfo"),
    nvml: Any | None = None,
    powercap: Path = POWERCAP,
) -> tuple[list[Probe], list[str]]:
    """The probes a profile names, and a note for each that could not be set up.

    ``meminfo`` always runs: the watchdog needs ``MemAvailable`` on every machine.
    ``server_pid`` answers the server's process id once it has started (for per-process memory).
    """
    probes: list[Probe] = [meminfo_probe(meminfo), server_rss_probe(server_pid)]
    notes: list[str] = []
    names = list(names)
    wanted = [n for n in names if n in ("nvml", "nvml-power")]
    if wanted:
        module, why = (nvml, "given") if nvml is not None else load_nvml()
        if module is None:
            notes.append(f"{', '.join(wanted)}: {why}; no GPU power, energy or device memory recorded")
        else:

            def pids() -> set[int]:
                pid = server_pid()
                return descendants(pid) if pid else set()

            probes.append(NvmlProbe(module, memory="nvml" in wanted, server_pids=pids))
    if "rapl" in names:
        rapl, why = RaplProbe.find(powercap)
        if rapl is None:
            notes.append(f"rapl: {why}")
        else:
            probes.append(rapl)
    return probes, notes

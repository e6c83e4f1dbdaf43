"""Hardware profiles and detection.

The published profiles (GB10, H100, H200, B200, RTX 4090/5090/PRO 6000, MI300X, M3 Ultra,
M4 Max) carry their figures and sources; ``cpu-host`` is read off the machine it runs on.
Detection asks ``nvidia-smi`` for the GPU's name (GB10 or a known discrete GPU); ``cpu-host``
is the fallback (``trylast``), so any plugin that recognises its hardware wins. ``arena hardware
detect`` (:mod:`arena_hardware.command`) says which profile describes this machine.
"""

from __future__ import annotations

from collections.abc import Callable

import click

from arena_core import HardwareDetection, HardwareProfile, hookimpl
from arena_hardware.command import hardware_command
from arena_hardware.detect import detect_nvidia
from arena_hardware.host import measured_bandwidth, read_host
from arena_hardware.profiles import PUBLISHED


def cpu_host_profile() -> HardwareProfile:
    """The generic profile, filled in from this machine: CPU model, cores, memory."""
    host = read_host()
    memory = f"{host.memory_gb:.1f} GB" if host.memory_gb else "unknown memory"
    return HardwareProfile(
        name="cpu-host",
        title=f"CPU host: {host.cpu_model}",
        description=f"This machine's CPU ({host.cpu_model}, {host.cores} cores, {memory}).",
        memory_gb=host.memory_gb,
        unified_memory=True,  # a CPU serves from main memory: there is no separate device memory
        probes=("meminfo", "rapl"),
        this_machine=True,
        sources=(f"read from this machine ({host.source})",),
        measure=measured_bandwidth,
    )


@hookimpl
def arena_register_hardware(register: Callable[[HardwareProfile], None]) -> None:
    register(cpu_host_profile())
    for profile in PUBLISHED:
        register(profile)


@hookimpl
def arena_detect_hardware() -> HardwareDetection | None:
    return detect_nvidia({p.name: p for p in PUBLISHED})


@hookimpl(trylast=True, specname="arena_detect_hardware")
def arena_detect_hardware_fallback() -> HardwareDetection:
    profile = cpu_host_profile()
    return HardwareDetection(profile=profile, reason="no plugin recognised an accelerator on this machine; using the generic CPU host profile")


@hookimpl
def arena_register_commands(cli: click.Group) -> None:
    cli.add_command(hardware_command)

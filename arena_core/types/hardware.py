"""Hardware profiles: a machine's specifications with their sources, and detection."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from attrs import evolve, field, frozen
from attrs.validators import optional

from arena_core import bounds
from arena_core.types.names import valid_name


@frozen(kw_only=True)
class HardwareProfile:
    """A machine's published (or, for ``cpu-host``, read-off) specifications.

    ``dense_tflops`` maps a precision (``bf16``, ``fp8``, ``fp4``) to dense tensor throughput.
    ``sources`` say where each figure comes from.
    """

    name: str = field(validator=valid_name)
    title: str
    description: str
    memory_gb: float | None = field(validator=optional(bounds.FIGURE))
    unified_memory: bool
    memory_bandwidth_gbs: float | None = field(default=None, validator=optional(bounds.FIGURE))
    dense_tflops: Mapping[str, float] = field(factory=dict)
    power_w: float | None = field(default=None, validator=optional(bounds.FIGURE))
    sources: tuple[str, ...] = ()
    #: How memory and power are read here: ``meminfo`` (MemTotal - MemAvailable, the way on
    #: unified memory), ``nvml`` (device and per-process memory, power, energy).
    probes: tuple[str, ...] = ()
    #: Read off the machine Arena runs on (a CPU host): never the profile of a server elsewhere,
    #: so it is not offered when an attached server's machine is to be named.
    this_machine: bool = False
    #: Figures the plugin measures when a run starts rather than at registration (a CPU host's
    #: memory bandwidth): ``measure()`` returns the changed fields and a source line. Not stored.
    measure: Callable[[], tuple[Mapping[str, Any], str]] | None = field(default=None, eq=False, repr=False)

    def measured(self) -> HardwareProfile:
        """This profile with its run-time figures measured (itself when it has none)."""
        if self.measure is None:
            return self
        changes, source = self.measure()
        return evolve(self, **changes, sources=(*self.sources, source), measure=None)


@frozen(kw_only=True)
class HardwareDetection:
    """The answer of ``arena_detect_hardware``: which profile, and the evidence for it."""

    profile: HardwareProfile
    reason: str

"""How a card writes its numbers: seconds, tokens per second, scores."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from arena_core.types import Score

#: What each energy figure is read from, and what it covers.
ENERGY_SOURCES = (
    ("energy_j", "the GPUs (NVML; the GPU boards only)"),
    ("cpu_energy_j", "the CPU packages (RAPL powercap counters; not memory, disks or the rest of the box)"),
)


def energy_read_from(metrics: Mapping[str, float | None]) -> str:
    """What a result's energy was read from, and what that covers ("" where none was read)."""
    return " and ".join(what for key, what in ENERGY_SOURCES if metrics.get(key) is not None)


def fmt_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def fmt_seconds_within(seconds: float | None, low: float | None, high: float | None) -> str:
    """``seconds`` and its 95 % interval in the value's unit, as :func:`fmt_seconds` writes it:
    "612 [580–650] ms", "1.23 [1.10–1.40] s"; the value alone where either bound is missing."""
    if seconds is None or low is None or high is None:
        return fmt_seconds(seconds)
    if seconds < 1:
        return f"{seconds * 1000:.0f} [{low * 1000:.0f}–{high * 1000:.0f}] ms"
    return f"{seconds:.2f} [{low:.2f}–{high:.2f}] s"


def shown_seconds_within(seconds: float, low: float, high: float) -> tuple[float, float, float]:
    """``seconds`` and its interval as :func:`fmt_seconds_within` writes them (in the value's
    unit), so a verdict on them is one a reader can check on the page."""
    digits = (lambda x: round(x * 1000) / 1000) if seconds < 1 else (lambda x: round(x, 2))
    return digits(seconds), digits(low), digits(high)


def fmt_tps_within(value: float | None, low: float | None, high: float | None) -> str:
    """tokens/s with its 95 % interval: "41.0 [39.2–42.8]"; the value alone without one."""
    if value is None or low is None or high is None:
        return fmt_tps(value)
    return f"{fmt_tps(value)} [{fmt_tps(low)}–{fmt_tps(high)}]"


def shown_seconds(seconds: float) -> float:
    """``seconds`` as :func:`fmt_seconds` writes them: whole milliseconds under a second, else hundredths."""
    return round(seconds * 1000) / 1000 if seconds < 1 else round(seconds, 2)


def fmt_tps(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def shown_tps(value: float) -> float:
    """``value`` as :func:`fmt_tps` writes it: whole tokens from 100 up, else tenths."""
    return float(round(value)) if value >= 100 else round(value, 1)


def fmt_shown_error(predicted: float | None, measured: float | None, shown: Callable[[float], float]) -> str:
    """The absolute % error of ``predicted`` against ``measured`` as a reader recomputes it: from
    the two figures as the page writes them (``shown``), not from the unrounded ones (8.24 and
    8.16 are written 8.2 and 8.2, so their error is written 0 %, not 1 %)."""
    if not predicted or not measured or not (written := shown(measured)):
        return "—"
    return f"{abs(shown(predicted) - written) / written * 100:.0f} %"


def fmt_score(score: Score) -> str:
    if score.value is None:
        return "not computed"
    interval = f" [{score.low:.1f}–{score.high:.1f}]" if score.low != score.high else ""
    measured = " (Q measured)" if score.quality_source == "measured" else ""
    stand_in = f" † ({score.unmeasured_focus} not measured: G from the other workloads)" if score.unmeasured_focus else ""
    return f"{score.value:.1f}{interval}{measured}{stand_in}" + ("" if score.publishable else " (not publishable)")

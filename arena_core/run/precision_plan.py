"""``--precision``: a run's closed-loop workloads measured until precise, not for a fixed count.

Each closed-loop workload keeps its shape (concurrency, lengths, scale) and runs run after run
until its headline figures are within the margin at 95 % (the rule:
:mod:`arena_core.loadgen.until_precise`), after at least :data:`FEWEST_RUNS` and for at most the
cap's seconds of runs; its result says which stopped it. Open-loop workloads keep their
schedule (a rate's figures come from the prompts it was asked to send).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import attrs

from arena_core import bounds
from arena_core.errors import UsageError
from arena_core.types import ClosedLoopShape, WorkloadSpec

#: Seconds of runs a workload may take to become precise, unless ``--precision-cap`` says.
PRECISION_CAP_S = 300.0
#: A workload measured until precise measures at least this many runs: a run-to-run spread to see.
FEWEST_RUNS = 2
#: The most runs, where the cap's seconds are what bounds it.
MOST_RUNS = 1000


def parse_margin(text: str | float, where: str = "--precision") -> float:
    """ "5%", "5 %" or 0.05: a relative margin between 0 and 1 (exclusive); a one-line error
    naming ``where`` otherwise."""
    said = str(text).strip()
    match = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*(%?)", said)
    margin = float(match.group(1)) / (100 if match.group(2) else 1) if match else math.nan
    if not match or bounds.MARGIN.problem(margin):
        raise UsageError(f"{where}: {said!r} is not a margin (e.g. 5% for ±5 % at 95 %)")
    return margin


def until_precise(workloads: Sequence[WorkloadSpec], precision: float, cap_s: float) -> tuple[WorkloadSpec, ...]:
    """Each closed-loop workload measured until within ``precision``, for at most ``cap_s``
    seconds of runs; the rest as they are."""
    found = []
    for spec in workloads:
        shape = spec.shape
        if isinstance(shape, ClosedLoopShape):
            runs = max(shape.runs, MOST_RUNS)
            shape = attrs.evolve(shape, precision=precision, runs=runs, min_runs=FEWEST_RUNS, duration_s=cap_s)
            spec = attrs.evolve(spec, shape=shape)
        found.append(spec)
    return tuple(found)

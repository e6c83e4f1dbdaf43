"""``--precision``: a run's workloads measured until precise, not for a fixed count.

Each workload keeps its shape (concurrency or rate, lengths, scale). A closed loop runs run
after run until its headline figures are within the margin at 95 % (the rule:
:mod:`arena_core.loadgen.until_precise`), after at least :data:`FEWEST_RUNS` and for at most the
cap's seconds of runs. An open loop's schedule is drawn as long as its rate fills the cap, and
its requests are let go until the figures are precise (after at least
:data:`~arena_core.loadgen.until_precise.FEWEST_REQUESTS`). Each result says which stopped it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import attrs

from arena_core import bounds
from arena_core.errors import UsageError
from arena_core.types import ClosedLoopShape, OpenLoopShape, WorkloadSpec
from arena_core.types.workloads import MAX_SCHEDULE_S

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
    """Each workload measured until within ``precision``: a closed loop for at most ``cap_s``
    seconds of runs; an open loop's schedule as long as its rate fills ``cap_s`` (its prompts
    at least), let go until precise. An agents workload (its sessions) as it is."""
    found = []
    for spec in workloads:
        shape = spec.shape
        if isinstance(shape, ClosedLoopShape):
            runs = max(shape.runs, MOST_RUNS)
            spec = attrs.evolve(spec, shape=attrs.evolve(shape, precision=precision, runs=runs, min_runs=FEWEST_RUNS, duration_s=cap_s))
        elif isinstance(shape, OpenLoopShape):
            most = min(int(bounds.PROMPTS.most), math.floor(shape.request_rate * min(cap_s, MAX_SCHEDULE_S)))
            spec = attrs.evolve(spec, shape=attrs.evolve(shape, precision=precision, num_prompts=max(shape.num_prompts, most)))
        found.append(spec)
    return tuple(found)

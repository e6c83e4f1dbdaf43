"""Arena's capacity search (``shared/spec/capacity.md`` section 3): how many concurrent users a
server serves within an SLO.

Users are closed-loop: each waits for its answer before asking again (llama-benchy's runs of c
simultaneous requests). The search starts low and doubles until a probe fails the SLO
(attainment below its target, or any failed request), then bisects between the last pass and the
first fail until the interval is within ``precision`` of the answer (at least one user). Each
probe is a workload of its own, ``<workload>-users-<n>``, long enough for its percentiles
(``probe_requests`` requests), stored in one ordinary run: card, compare and verify work on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
from attrs import frozen

from arena_core.loadgen.goodput import Slo, goodput
from arena_core.loadgen.records_io import read_records
from arena_core.store import workload_dir
from arena_core.types import ClosedLoopShape, RequestRecord, WorkloadResult, WorkloadSpec

#: How a probe's workload says what it is (its ``custom`` label), so a card can find the probes.
PROBE_LABEL = "capacity probe"


def passes(attainment: float | None, failed: float, target: float) -> bool:
    """A probe passes with at least ``target`` of its requests within the SLO and none failed."""
    return attainment is not None and attainment >= target and not failed


@frozen(kw_only=True)
class Probe:
    users: int
    passed: bool
    attainment: float | None
    failed: int


@frozen(kw_only=True)
class Capacity:
    """The answer: the most users that passed (None: not even the first probe), the fewest that
    failed (None: none failed up to the limit), and every probe in the order run."""

    users: int | None
    failed_at: int | None
    probes: tuple[Probe, ...]


def search(probe: Callable[[int], Probe], *, start: int = 1, limit: int = 256, precision: float = 0.1) -> Capacity:
    """Double from ``start`` until a probe fails or ``limit`` is passed, then bisect."""
    probes: list[Probe] = []
    passed: int | None = None
    failed: int | None = None
    users = start
    while True:
        probes.append(result := probe(users))
        if not result.passed:
            failed = users
            break
        passed = users
        if users >= limit:
            break
        users = min(users * 2, limit)
    if passed is not None and failed is not None:
        while failed - passed > max(1.0, precision * passed):
            middle = (passed + failed) // 2
            probes.append(result := probe(middle))
            passed, failed = (middle, failed) if result.passed else (passed, middle)
    return Capacity(users=passed, failed_at=failed, probes=tuple(probes))


def probe_workload(base: WorkloadSpec, users: int, probe_requests: int) -> WorkloadSpec:
    """``base`` at ``users`` concurrent users, with enough runs for ``probe_requests`` requests."""
    if not isinstance(base.shape, ClosedLoopShape):
        raise ValueError(f"workload {base.name!r} is open-loop; a capacity search over users needs a closed-loop one")
    runs = max(1, math.ceil(probe_requests / users))
    return attrs.evolve(
        base,
        name=f"{base.name}-users-{users}",
        shape=attrs.evolve(base.shape, concurrency=users, runs=runs),
        custom=f"{PROBE_LABEL}: {users} user{'s' if users != 1 else ''}, {runs} runs",
    )


def judge(result: WorkloadResult, records: Sequence[RequestRecord], slo: Slo, users: int) -> Probe:
    """Whether one probe met the SLO: attainment at or above the target and no failed request."""
    found = goodput(records, slo)
    attainment = found.get("slo_attainment")
    return Probe(users=users, passed=passes(attainment, result.failed, slo.target), attainment=attainment, failed=result.failed)


def records_of(run_dir: Path, workload: str) -> list[RequestRecord]:
    path = workload_dir(run_dir, workload) / "records.jsonl"
    return read_records(path) if path.is_file() else []

"""Arena's capacity search (``shared/spec/capacity.md`` section 3): how much load a server serves
within an SLO, in concurrent users or in requests per second.

Users are closed-loop: each waits for its answer before asking again (llama-benchy's runs of c
simultaneous requests). A rate is open-loop: requests arrive on the workload's schedule whether
or not the last ones were answered. The search starts low and doubles until a probe fails (SLO
attainment below its target, any failed request, or, for a rate, a server that fell behind),
then bisects between the last pass and the first fail until the interval is within
``precision`` of the answer (and, for users, within one user). Each probe is a workload of its
own, ``<workload>-users-<n>`` or ``<workload>-rate-<r>``, long enough for its percentiles
(``probe_requests`` requests, or a stated duration with at least :data:`MIN_PROBE_REQUESTS`),
stored in one ordinary run: card, compare and verify work on it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import attrs
from attrs import field, frozen
from attrs.validators import in_

from arena_core.loadgen.goodput import Slo, goodput, kept_up
from arena_core.loadgen.records_io import read_records
from arena_core.run.store import workload_dir
from arena_core.types import AgentShape, ClosedLoopShape, OpenLoopShape, RequestRecord, WorkloadResult, WorkloadSpec

if TYPE_CHECKING:
    from arena_core.run.session import RunSession

#: How a probe's workload says what it is (its ``custom`` label), so a card can find the probes.
PROBE_LABEL = "capacity probe"
#: A probe with a stated duration still has at least this many requests (a p95 needs some).
MIN_PROBE_REQUESTS = 20

Load = Literal["users", "rate", "agents"]
#: A probe's workload name: the base workload, the load's kind, the load.
PROBE_NAME = re.compile(r"(?P<base>.+)-(?P<load>users|rate|agents)-(?P<value>[0-9]+(?:\.[0-9]+)?)")


def passes(attainment: float | None, failed: float, target: float, served: float | None = None) -> bool:
    """A probe passes with at least ``target`` of its requests within the SLO, none failed and,
    for a rate, a server that kept up (``served``: its share of the offered rate, see
    :func:`~arena_core.loadgen.goodput.served_share`)."""
    return attainment is not None and attainment >= target and not failed and kept_up(served)


def load_text(load: Load, value: float) -> str:
    if load in ("users", "agents"):
        return f"{value:g} {load.removesuffix('s')}{'s' if value != 1 else ''}"
    return f"{value:g} req/s"


@frozen(kw_only=True)
class SearchSettings:
    """What a capacity search was asked, recorded with its run so that ``--resume`` carries on
    the same search (and a changed flag is refused, not quietly obeyed)."""

    workload: str
    load: Load = field(validator=in_(("users", "rate", "agents")))
    slo: str
    start: float
    limit: float
    precision: float
    probe_requests: int
    probe_seconds: float | None
    #: The slots the user fixed for a server Arena starts (None: sized for the largest probe).
    slots: int | None = None

    @property
    def whole(self) -> bool:
        """Users and agents come in whole numbers; a rate does not."""
        return self.load != "rate"

    @classmethod
    def recorded(cls, config: Mapping[str, object]) -> SearchSettings | None:
        """The settings a run's manifest ``config`` recorded, or None (not a capacity search)."""
        found = config.get("capacity") if isinstance(config, Mapping) else None
        if not isinstance(found, Mapping):
            return None
        try:
            return cls(**found)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None


@frozen(kw_only=True)
class Probe:
    load: float
    passed: bool
    attainment: float | None
    failed: int
    served: float | None = None


@frozen(kw_only=True)
class Capacity:
    """The answer: the most load that passed (None: not even the first probe), the least that
    failed (None: none failed up to the limit), and every probe in the order run."""

    found: float | None
    failed_at: float | None
    probes: tuple[Probe, ...]


#: A knee is where the latency curve bends at least this far (as a share of both axes' ranges)
#: below the straight line from the lightest probe to the heaviest; a curve that climbs evenly
#: has none (tests/test_capacity.py: the rig with 4 slots has its knee at 4 users).
KNEE_BEND = 0.1


@frozen(kw_only=True)
class Knee:
    """Where latency starts rising steeply, to within the probes: ``load``, the probe at which
    the TTFT p95 curve bends most (Kneedle: the farthest below the straight line across both
    ranges), and ``beyond``, the next probe up, where the climb has begun."""

    load: float
    beyond: float

    def describe(self, load: Load) -> str:
        """ "4 users (TTFT p95 flat up to 4 users, climbing from 5 users)"."""
        return f"{load_text(load, self.load)} (TTFT p95 flat up to {load_text(load, self.load)}, climbing from {load_text(load, self.beyond)})"


def latency_knee(points: Sequence[tuple[float, float | None]]) -> Knee | None:
    """The knee of (load, TTFT p95 with failures as ∞, None for ∞) points (Satopää et al.'s
    Kneedle on the curve scaled to [0, 1] each way, an infinite p95 at the top); None for fewer
    than three probes, a curve that does not climb, or one that bends less than :data:`KNEE_BEND`.
    Scaled to its own range, a stall of a few milliseconds at a light load is nothing beside a
    queue's whole-answer wait."""
    ordered = sorted(points, key=lambda point: point[0])
    finite = [p95 for _, p95 in ordered if p95 is not None]
    if len(ordered) < 3 or not finite:
        return None
    lightest, heaviest, low = ordered[0][0], ordered[-1][0], min(finite)
    high = max(finite) if len(finite) == len(ordered) else 2 * max(finite)  # ∞ drawn above the highest finite
    if high <= low or heaviest <= lightest:
        return None
    bends = [((load - lightest) / (heaviest - lightest)) - (((p95 if p95 is not None else high) - low) / (high - low)) for load, p95 in ordered]
    at = max(range(len(ordered) - 1), key=lambda index: bends[index])
    return Knee(load=ordered[at][0], beyond=ordered[at + 1][0]) if bends[at] >= KNEE_BEND else None


def _middle(low: float, high: float, whole: bool) -> float:
    if whole:
        return float((int(low) + int(high)) // 2)
    middle = (low + high) / 2
    return float(f"{middle:.3g}")  # a rate a person can read back; bisection to 10 % needs no more


def search(probe: Callable[[float], Probe], *, start: float = 1, limit: float = 256, precision: float = 0.1, whole: bool = True) -> Capacity:
    """Double from ``start`` until a probe fails or ``limit`` is passed, then bisect."""
    probes: list[Probe] = []
    passed: float | None = None
    failed: float | None = None
    load = start
    while True:
        probes.append(result := probe(load))
        if not result.passed:
            failed = load
            break
        passed = load
        if load >= limit:
            break
        load = min(load * 2, limit)
    if passed is not None and failed is not None:
        while failed - passed > max(1.0 if whole else 0.0, precision * passed):
            middle = _middle(passed, failed, whole)
            if middle in (passed, failed):
                break  # a rate at three figures cannot be cut finer
            probes.append(result := probe(middle))
            passed, failed = (middle, failed) if result.passed else (passed, middle)
    return Capacity(found=passed, failed_at=failed, probes=tuple(probes))


def probe_workload(base: WorkloadSpec, settings: SearchSettings, load: float) -> WorkloadSpec:
    """``base`` at one load: enough requests for ``probe_requests``, or, with a stated duration,
    as many as fit in it (at least :data:`MIN_PROBE_REQUESTS`)."""
    shape, seconds, wanted = base.shape, settings.probe_seconds, settings.probe_requests
    if settings.load == "users":
        if not isinstance(shape, ClosedLoopShape):
            raise ValueError(f"workload {base.name!r} is open-loop; a search over users needs a closed-loop one (or --load rate)")
        users = int(load)
        runs = max(1, math.ceil(wanted / users))
        fewest = min(runs, math.ceil(MIN_PROBE_REQUESTS / users)) if seconds else 1
        probed: ClosedLoopShape | OpenLoopShape | AgentShape = attrs.evolve(shape, concurrency=users, runs=runs, duration_s=seconds, min_runs=fewest)
        length = f"{runs} run{'s' if runs != 1 else ''}" + (f" or {seconds:g} s" if seconds else "")
    elif settings.load == "agents":
        if not isinstance(shape, AgentShape):
            raise ValueError(f"workload {base.name!r} is not an agents workload; a search over agents needs one (such as agents)")
        probed = attrs.evolve(shape, agents=int(load))
        length = f"a session each, up to {shape.turns} turns"
    else:
        if not isinstance(shape, OpenLoopShape):
            raise ValueError(f"workload {base.name!r} is closed-loop; a search over request rate needs an open-loop one (or --load users)")
        prompts = wanted if not seconds else max(MIN_PROBE_REQUESTS, min(wanted, math.ceil(load * seconds)))
        probed = attrs.evolve(shape, request_rate=load, num_prompts=prompts)
        length = f"{prompts} requests"
    return attrs.evolve(
        base,
        name=f"{base.name}-{settings.load}-{load:g}",
        # each probe draws prompts of its own: one that repeated an earlier probe's would find
        # them in the server's prompt cache, and its TTFT would be better than a new user's
        seed=(base.seed + round(load * 1000)) % 2**32,
        shape=probed,
        custom=f"{PROBE_LABEL}: {load_text(settings.load, load)}, {length}",
    )


def judge(result: WorkloadResult, records: Sequence[RequestRecord], slo: Slo, load: float) -> Probe:
    """Whether one probe met the SLO (see :func:`passes`)."""
    found = goodput(records, slo)
    attainment, served = found.get("slo_attainment"), found.get("served_share")
    return Probe(load=load, passed=passes(attainment, result.failed, slo.target, served), attainment=attainment, failed=result.failed, served=served)


def records_of(run_dir: Path, workload: str) -> list[RequestRecord]:
    path = workload_dir(run_dir, workload) / "records.jsonl"
    return read_records(path) if path.is_file() else []


def run_search(session: RunSession, shape: WorkloadSpec, settings: SearchSettings, objective: Slo, *, fresh: bool, progress: Callable[[str], None]) -> Capacity:
    """The search of ``arena capacity`` on ``session``'s server: start it (or attach), record the
    search's settings on a fresh run, then probe, doubling and bisecting, each probe stored as a
    result of the run and judged by ``objective``, one progress line each; then, where the plan
    has quality suites and users or agents were found, each suite asked one at a time and again
    at the capacity. The session is finished whatever happens (completed, interrupted, failed);
    an interruption is raised again."""
    status = "failed"
    try:
        endpoint = session.start_backend()
        if fresh:
            session.record_search(settings.slo, attrs.asdict(settings))
        progress(slots_line(session.manifest.backend_facts.get(session.plan.backend.slots_fact), session.plan.slots, settings.slots))
        session.preflight(endpoint)

        def probe(load: float) -> Probe:
            probed = probe_workload(shape, settings, load)
            result = session.run_probe(probed, endpoint)
            verdict = judge(result, records_of(session.run_dir, probed.name), objective, load)
            progress(f"probe {load_text(settings.load, load)}: {verdict_text(verdict)}")
            return verdict

        found = search(probe, start=settings.start, limit=settings.limit, precision=settings.precision, whole=settings.whole)
        if session.plan.quality and settings.whole and found.found:  # quality under load: one at a time, then at the capacity
            session.measure_quality(endpoint)
            session.measure_quality(endpoint, under_load=int(found.found))
        status = "completed"
        return found
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        session.finish(status)


def slots_line(slots: object, plan_slots: int | None, settings_slots: int | None) -> str:
    """How many requests the server takes at once, as far as Arena knows it (``slots``: what the
    backend's facts say, None for a server Arena attached to or left at its own default)."""
    if not slots:
        return "server slots: the server's own (Arena attached to it, or its engine's default: its own setting decides how many requests it serves at once)"
    why = "fixed by --slots" if settings_slots else ("a rate search's default; --slots sets them" if plan_slots else "sized for the largest probe")
    return f"server slots: {slots} ({why})"


def verdict_text(verdict: Probe) -> str:
    attained = f"{verdict.attainment:.0%}" if verdict.attainment is not None else "—"
    served = f", kept up with {verdict.served:.0%} of the rate" if verdict.served is not None else ""
    return f"{attained} within the SLO, {verdict.failed} failed{served}: {'pass' if verdict.passed else 'fail'}"

"""A run in a stated time: how long a run will take, said before it starts, and the scale that
fits a time budget (``arena run --budget``).

The time of each workload comes from the default predictor (``arena predict``'s step simulator):
a closed-loop workload takes its warm-up and measured rounds, each as long as the simulated round;
an open-loop one its simulated span (the arrival schedule, or the server's pace where that is
slower). The quality phase takes its items in rounds of the concurrency it asks at. Simulated
seconds are then multiplied by how much slower this server was than predicted on its last run
stored here (the ``wall_s`` of its results), else by a prior measured on this project's own 2-core
machine. A workload's time grows with its scale (token lengths and request counts), so the scale
that fits a budget is found by bisection.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
from attrs import frozen

from arena_core.hooks import ArenaHooks
from arena_core.registry import Registry
from arena_core.report.text import minutes
from arena_core.results.predictions import default_predictor, load_calibration
from arena_core.run.store import list_runs, load_result
from arena_core.types import AgentShape, BackendSpec, ClosedLoopShape, HardwareProfile, ModelSpec, PredictionSetup, Predictor, QualitySuiteSpec, WorkloadSpec

#: How much slower the embedded default ran than its tier-0 prediction on a 2-core machine of
#: this project (2026-12-02: the nine workloads at x0.1 took 937 s; simulated 474 s), the
#: factor used until a run of the same model on this machine is stored.
PRIOR_SLOWDOWN = 2.0
#: What a workload costs beside its requests: the runner's preflight, telemetry, the result written.
PER_WORKLOAD_S = 4.0
#: The smallest scale a budget may choose (below it the prompts are a few tokens long).
SMALLEST_SCALE = 0.01
#: A quality item's prompt, in tokens (a HumanEval problem, a canary instruction).
QUALITY_PROMPT_TOKENS = 200
#: The requests the quality phase keeps in flight unless ``--quality-concurrency`` says otherwise.
QUALITY_CONCURRENCY = 4
#: The most ``--quality-concurrency`` may ask: a batching server's share of a big machine.
MOST_QUALITY_CONCURRENCY = 64
#: The budget of the embedded default when no scale is given (``arena run`` on a fresh machine).
DEFAULT_BUDGET_S = 600.0


@frozen(kw_only=True)
class Expected:
    """How long a run is expected to take, and what the estimate rests on."""

    workloads_s: float
    quality_s: float
    startup_s: float
    slowdown: float
    basis: str

    #: the quality phase is given only what the budget leaves it (it asks what it can answer in that)
    quality_cut: bool = False

    @property
    def total_s(self) -> float:
        return self.workloads_s + self.quality_s + self.startup_s

    def within(self, budget_s: float) -> Expected:
        """This estimate where it overruns ``budget_s``: the quality phase gets what is left."""
        if self.total_s <= budget_s or not self.quality_s:
            return self
        return attrs.evolve(self, quality_s=max(0.0, budget_s - self.workloads_s - self.startup_s), quality_cut=True)

    def describe(self) -> str:
        cut = " [what the budget leaves it: it asks the items it can answer in that time]" if self.quality_cut else ""
        return (
            f"about {minutes(self.total_s)} (workloads {minutes(self.workloads_s)}, quality {minutes(self.quality_s)}{cut}, "
            f"starting {minutes(self.startup_s)}; {self.basis})"
        )


def simulated_seconds(workload: WorkloadSpec, predictor: Predictor, setup: PredictionSetup) -> float:
    """The workload's time as the predictor serves it: every round of a closed-loop workload
    (the warm-up and the measured ones), the whole schedule of an open-loop one; agents as the
    conversation they resemble, once, and every turn's tool delay."""
    shape = workload.shape
    delays = shape.turns * sum(shape.tool_delay_s) / 2 if isinstance(shape, AgentShape) else 0.0
    workload = workload.as_conversation()
    records = predictor.serve(workload, setup)
    if not records:
        return delays
    span = (max(r.end_ns or r.sent_ns for r in records) - min(r.sent_ns for r in records)) / 1e9
    rounds = shape.runs + 1 if isinstance(shape, ClosedLoopShape) else 1
    return span * rounds + delays


def quality_seconds(
    suites: Sequence[QualitySuiteSpec], chat: WorkloadSpec | None, predictor: Predictor, setup: PredictionSetup, *, full: bool, concurrency: int
) -> float:
    """The quality phase's time: each suite's items asked ``concurrency`` at a time, each answer
    as long as the suite allows, at the speed the predictor gives a chat of that shape."""
    if chat is None or not isinstance(chat.shape, ClosedLoopShape):
        return 0.0
    total = 0.0
    for suite in suites:
        items = suite.full_size if full else suite.subset_size
        shape = attrs.evolve(
            chat.shape, prompt_tokens=QUALITY_PROMPT_TOKENS, generated_tokens=suite.answer_tokens, concurrency=concurrency, runs=1, turns=1, depth=0
        )
        one_round = simulated_seconds(attrs.evolve(chat, shape=shape), predictor, setup) / 2  # one round, not the warm-up too
        total += math.ceil(items / concurrency) * one_round
    return total


def slowdown_of(output: Path, setup: PredictionSetup, predictor: Predictor, registry: Registry) -> tuple[float, str]:
    """How much slower than simulated the newest stored run of this model, hardware and backend
    was (its workloads' measured ``wall_s`` against their simulated time), else the prior."""
    same = [row for row in list_runs(output) if (row["model"], row["hardware"], row["backend"]) == (setup.model.name, setup.hardware.name, setup.backend.name)]
    for row in reversed(same):
        measured = simulated = 0.0
        for name in str(row["workloads"] or "").split(","):
            result = load_result(output / row["run_id"], name) if name in registry.workloads else None
            wall = result.metrics.get("wall_s") if result is not None else None
            if wall and result is not None:
                measured += max(0.0, wall - PER_WORKLOAD_S)
                simulated += simulated_seconds(registry.get("workloads", name).scaled(result.scale), predictor, setup)
        if measured > 0 and simulated > 0:
            return measured / simulated, f"the predictor's time x{measured / simulated:.2f}, as run {row['run_id']} of this model here measured"
    return PRIOR_SLOWDOWN, f"the predictor's time x{PRIOR_SLOWDOWN:g}, the prior measured on a 2-core machine (no run of this model stored here yet)"


@frozen(kw_only=True)
class Timing:
    """What a run's expected time is computed from: the predictor and its setup, how much slower
    this server runs than simulated, and the quality phase's simulated time."""

    predictor: Predictor
    setup: PredictionSetup
    slowdown: float
    basis: str
    quality_s: float

    @classmethod
    def of(
        cls,
        hooks: ArenaHooks,
        model: ModelSpec,
        hardware: HardwareProfile,
        backend: BackendSpec,
        output: Path,
        quality: Sequence[QualitySuiteSpec],
        *,
        full: bool,
        concurrency: int = QUALITY_CONCURRENCY,
    ) -> Timing | None:
        """None where no predictor is registered or it does not cover this backend."""
        registry = hooks.registry
        chosen = default_predictor(registry)
        if chosen is None or model.params_total_b is None:
            return None
        if hardware.measure is not None:
            hardware = hardware.measured()  # a CPU host's bandwidth, measured here
        setup = PredictionSetup(model=model, hardware=hardware, backend=backend, calibration=load_calibration(output, hardware.name, backend))
        predictor = chosen.predictor
        if predictor.coverage(setup) is not None:
            return None
        slowdown, basis = slowdown_of(output, setup, predictor, registry)
        chat = registry.get("workloads", name) if (name := registry.with_role("headline")) else None
        quality_s = quality_seconds(quality, chat, predictor, setup, full=full, concurrency=concurrency)
        return cls(predictor=predictor, setup=setup, slowdown=slowdown, basis=basis, quality_s=quality_s)

    def expected(self, workloads: Sequence[WorkloadSpec]) -> Expected:
        simulated = sum(simulated_seconds(w, self.predictor, self.setup) for w in workloads)
        return Expected(
            workloads_s=simulated * self.slowdown + PER_WORKLOAD_S * len(workloads),
            quality_s=self.quality_s * self.slowdown,
            startup_s=self.setup.backend.start_s,
            slowdown=self.slowdown,
            basis=self.basis,
        )


def scale_for(budget_s: float, largest: float, at_scale: Callable[[float], Expected]) -> float:
    """The largest scale, at most ``largest``, whose expected time fits ``budget_s`` (bisection
    to 1 %); the smallest scale when even that does not fit."""
    if at_scale(largest).total_s <= budget_s:
        return largest
    low, high = SMALLEST_SCALE, largest
    if at_scale(low).total_s > budget_s:
        return low
    while high / low > 1.01:
        middle = math.sqrt(low * high)
        low, high = (middle, high) if at_scale(middle).total_s <= budget_s else (low, middle)
    return math.floor(low * 10_000) / 10_000  # down, never up: a scale rounded up could overrun the budget


#: Kept back from a budget for what follows the last measurement: the server stopped, the
#: results sealed, the card printed.
FINISH_S = 10.0
#: A quality suite left less time than this is not started: no answer would come in time
#: (HumanEval's answers take 20-40 s at four at a time on the embedded server, 2 cores).
LEAST_QUALITY_S = 20.0


class BudgetKeeper:
    """Holds a run to its budget while it runs. After each workload the time it took is set
    against the estimate; where the run falls behind, the workloads still to run shrink to the
    scale that fits what is left, and each quality suite gets its share of the time left (a suite
    asks only what it can answer in it). What changed is kept in :attr:`changes`, for the card."""

    def __init__(self, timing: Timing, deadline: float, clock: Callable[[], float]) -> None:
        self.timing, self.deadline, self.clock = timing, deadline, clock
        self.changes: list[str] = []

    def time_left(self) -> float:
        return self.deadline - self.clock() - FINISH_S

    def measured_slowdown(self, done: Sequence[tuple[WorkloadSpec, float | None]]) -> float:
        """How much slower than simulated this run's workloads were (their ``wall_s``): over all
        of them, or the last one's where that was slower (a workload can be further off the
        simulator than those before it); the estimate's own factor before any."""

        def ratio(some: Sequence[tuple[WorkloadSpec, float | None]]) -> float | None:
            walls = [(spec, wall) for spec, wall in some if wall]
            simulated = sum(simulated_seconds(spec, self.timing.predictor, self.timing.setup) for spec, _ in walls)
            measured = sum(max(0.0, wall - PER_WORKLOAD_S) for _, wall in walls)
            return measured / simulated if measured > 0 and simulated > 0 else None

        found = [r for r in (ratio(done), ratio(done[-1:])) if r is not None]
        return max(found) if found else self.timing.slowdown

    def rescale(self, done: Sequence[tuple[WorkloadSpec, float | None]], remaining: Sequence[WorkloadSpec], scale: float) -> float | None:
        """The smaller scale the ``remaining`` workloads (unscaled) run at so that they and the
        quality phase fit the time left, at the pace measured so far; None where they fit at
        ``scale`` (or nothing smaller would)."""
        if not remaining:
            return None
        timing = attrs.evolve(self.timing, slowdown=self.measured_slowdown(done))
        left = self.time_left()

        def rest(at: float) -> Expected:
            expected = timing.expected([spec.scaled(at) for spec in remaining])
            return attrs.evolve(expected, startup_s=0.0)

        if rest(scale).total_s <= left:
            return None
        smaller = scale_for(left, scale, rest)
        if smaller >= scale:
            return None
        self.changes.append(
            f"the last {len(remaining)} workloads ran at x{smaller:g}, not x{scale:g}: with {left:.0f} s of the budget left they would have "
            f"taken about {rest(scale).total_s:.0f} s at the pace measured so far (x{timing.slowdown:.2f} the predictor's time)"
        )
        return smaller

    def quality_limit(self, suite: QualitySuiteSpec, suites: Sequence[QualitySuiteSpec], full: bool) -> float:
        """The seconds ``suite`` may take: its share of the time left among ``suites`` (itself
        and those after it), by items times answer length."""

        def weight(each: QualitySuiteSpec) -> float:
            return (each.full_size if full else each.subset_size) * each.answer_tokens

        return max(0.0, self.time_left() * weight(suite) / sum(weight(each) for each in suites))

"""Calibration and the error ledger (``shared/spec/prediction.md`` section 3).

**Calibration** fits the step simulator's efficiencies (memory bandwidth, compute and its
speedups, per-step overhead, the prefill ramp) to the stored runs of one hardware profile and
backend: least squares on log errors. Decode speed fixes bandwidth and overhead on a grid; then,
with those, the time to first token fixes the prefill's parameters by pattern search. Only
closed-loop results are used: their simulated steps do not depend on their timing, so each point
of the search re-times them instead of simulating again.

**The error ledger**: every stored result beside the prediction made *without its run* (fitted
to the other runs of its hardware and backend; the priors when there are none), so the running
error of the prediction is always the error on data it did not see. An open-loop result is
simulated again at those efficiencies on its own arrivals.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np
from attrs import frozen

from arena_core import KV_CACHE_BYTES, CardWorkload, ClosedLoopShape, Figures, ModelCard, ModelSpec, OpenLoopShape, Registry, Scheduling, WorkloadSpec
from arena_prediction.simulator import Efficiency, Machine, Simulation, prior_of
from arena_prediction.workloads import RetimedOpen, RetimedRounds, closed_rounds, open_run, open_simulation, serving_machine, speculative

GRID = {
    "bandwidth": (0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0),
    "overhead_s": (0.0, 0.0005, 0.001, 0.002, 0.003, 0.004, 0.006, 0.008, 0.012, 0.016),
}
#: The prefill's parameters the time to first token fits, the range of each, and its first
#: step (a factor; for the ramp, which may be 0, tokens).
PREFILL = {
    "compute": (0.02, 1.0, 1.5),
    "moe_compute": (0.02, 1.0, 1.5),
    "fp8_speedup": (1.0, 4.0, 1.5),
    "fp4_speedup": (1.0, 4.0, 1.5),
    "moe_speedup": (1.0, 4.0, 1.5),
    "scan_compute": (0.002, 1.0, 1.5),
    "ssd_compute": (0.002, 1.0, 1.5),
    "prefill_ramp_tokens": (0.0, 16384.0, 1024.0),
    "moe_size_exponent": (-1.0, 1.0, 0.25),
}
#: The prefill's parameters that are stepped by adding (a prior of 0 has no factor), each with
#: its scale in the prior's penalty: how far from its prior weighs as a factor e off one. The
#: experts' size exponent is held loosely: nothing published says how a grouped GEMM's share
#: grows with its experts, so its prior (0, every size alike) is a default, not a figure. Chosen
#: on the seed's ledger (docs/prediction-notes.md, "The experts' size and Mamba-2's scan"), which
#: tests/test_simulator.py::test_leave_one_model_out_over_the_seed_cohort holds.
ADDITIVE = {"prefill_ramp_tokens": 2048.0, "moe_size_exponent": 5.0}
#: How firmly the fit holds the prefill's parameters to the engine's priors: the loss adds this
#: many times the squared log distance of each from its prior (an additive one's: its distance
#: over its scale, squared: :data:`ADDITIVE`). Without it the fit follows a few runs' noise and
#: predicts a run left out worse than the priors do. Chosen on the seed's ledger
#: (docs/prediction-notes.md, "The prior's weight"), which test_leave_one_model_out_over_the_seed_cohort
#: holds; test_the_fit_holds_the_prefill_toward_its_priors holds what the weight does.
PRIOR_WEIGHT = 10.0
#: The decoding tokens' attention speed (``Efficiency.decode_attention_speed``) fitted with decode
#: where an engine's runs need it: llama.cpp's on a CPU runs far below its GEMMs. vLLM's on a GPU
#: is bound by memory and keeps its prior (1: its FLOPs at the GEMMs' speed).
DECODE_ATTENTION = {"llama-cpp": (0.01, 0.015, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1.0)}
#: A step's cost per logit of a sampling sequence (``Efficiency.logit_overhead_s``), fitted with
#: decode where an engine's grows so: llama.cpp's (its sampling on the host; on a CPU its LM head
#: too). vLLM's keeps its prior (0: sampled on the GPU in one call; docs/prediction-notes.md,
#: "The constants' histories").
LOGIT_OVERHEAD = {"llama-cpp": (0.0, 1e-9, 2e-9, 4e-9, 8e-9, 16e-9, 32e-9, 64e-9)}
#: A request's own cost (``Efficiency.request_overhead_s``, ``prompt_token_overhead_s``), fitted
#: to the open-loop results' TTFT: a lightly loaded server's first token is one prompt's prefill
#: and that cost, where a closed-loop round's ten prompts hardly show it.
REQUEST_GRID = {
    "request_overhead_s": (0.0, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.08, 0.12),
    "prompt_token_overhead_s": (0.0, 2.5e-6, 5e-6, 7.5e-6, 1e-5, 1.25e-5, 1.5e-5, 1.75e-5, 2e-5),
}
#: The figures of a hardware profile a run's card may carry as it measured them.
ROOFS = ("memory_bandwidth_gbs", "dense_tflops")


def scheduling_of(backend: str, registry: Registry, facts: Mapping[str, Any] | None = None) -> Scheduling | None:
    """How the backend a run was served by schedules, as it declares (for one that attached to
    a server, as the engine its ``facts`` say answered declares: :meth:`Registry.serving_backend`);
    ``None`` for a backend that declares nothing, prefills whole prompts, or is not registered
    here: its runs are not covered."""
    served = registry.serving_backend(backend, facts or {})
    scheduling = served.scheduling if served is not None else None
    return scheduling if scheduling is not None and scheduling.chunked_prefill else None  # whole-prompt prefill is not simulated


@frozen(kw_only=True)
class Sample:
    """One measured closed-loop result and its simulated rounds."""

    run_id: str
    workload: str
    rounds: tuple[Simulation, ...]
    machine: Machine
    tps: float | None
    ttft_s: float | None
    #: the seed site's G as measured (llama-benchy's batch decode t/s); in the ledger, not in a fit
    site_tps: float | None = None
    #: decoded with speculative decoding: in the ledger (simulated where its draft tokens are
    #: known), not in a fit, as its speed rests on the drafts its model accepted
    speculative: bool = False
    #: the rounds side by side, built once: a fit re-times them at every efficiency it tries
    retimed: RetimedRounds = attrs.field(init=False, eq=False, repr=False, default=attrs.Factory(lambda self: RetimedRounds(self.rounds), takes_self=True))

    def figures(self, efficiency: Efficiency) -> Figures:
        return self.retimed.figures(self.machine, efficiency)

    def predicted(self, efficiency: Efficiency) -> tuple[float | None, float | None]:
        found = self.figures(efficiency)
        return found.per_user_tps, found.ttft_p50_s


def model_of(card: ModelCard, registry: Registry) -> ModelSpec | None:
    """The card's model: the catalog's entry, else one built from the card's published facts."""
    if card.model in registry.models:
        return registry.models[card.model].item
    return card.model_facts.spec(card.model, card.model_title)


@frozen(kw_only=True)
class OpenResult:
    """One measured open-loop result: its steps depend on their timing, so each efficiency
    simulates it again (in the ledger, not in a fit). Its tokens/s is the output throughput."""

    run_id: str
    workload: WorkloadSpec
    model: ModelSpec
    machine: Machine
    scheduling: Scheduling
    kv_bytes_per_element: float
    tps: float | None
    ttft_s: float | None
    site_tps: float | None = None  # the seed site's G as measured
    speculative: bool = False

    def figures(self, efficiency: Efficiency) -> Figures:
        return open_run(self.workload, self.model, self.machine, efficiency, self.scheduling, kv_bytes_per_element=self.kv_bytes_per_element)

    def predicted(self, efficiency: Efficiency) -> tuple[float | None, float | None]:
        found = self.figures(efficiency)
        return found.total_tps, found.ttft_p50_s


@frozen(kw_only=True)
class Served:
    """What the simulator serves a card's run with: its model, the roofs it ran under (as the
    run measured them), its KV cache's bytes per element, and its backend's scheduling."""

    model: ModelSpec
    machine: Machine
    kv_bytes_per_element: float
    scheduling: Scheduling
    #: it decoded speculatively (its model is an MTP build, or its server settings say so)
    speculative: bool = False


def decodes_speculatively(card: ModelCard, model: ModelSpec) -> bool:
    """Whether ``card``'s run decoded speculatively: its model is an MTP build, or its server
    settings say draft tokens (a cards file's, or the server's own spec-decode counters during
    the run). Such a run is predicted with its draft tokens where they are known, and kept out of
    every fit: its speed rests on the drafts its model accepted, a fact of the run that a fit
    would take for bandwidth."""
    return speculative(model) or bool(card.server_settings.speculative_tokens)


#: The most template tokens a stored result may say (the runner refuses more at warm-up:
#: ``arena_core.loadgen.plausible.TEMPLATE_TOKENS``).
MOST_TEMPLATE_TOKENS = 4096


def measured_template(card: ModelCard) -> int:
    """The tokens the run's server's chat template added to a user message, as its closed-loop
    runner measured them at warm-up (the ``template_tokens`` of its results); 0 where none did,
    or where a stored figure is no such count."""
    for line in card.workloads:
        value = line.metrics.get("template_tokens")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= MOST_TEMPLATE_TOKENS:
            return int(value)
    return 0


def _served(card: ModelCard, registry: Registry) -> Served | None:
    """How the simulator serves ``card``'s run; None where it cannot (a model of unknown size,
    hardware without roofs, a backend that declares no scheduling)."""
    model = model_of(card, registry)
    registration = registry.hardware.get(card.hardware)
    scheduling = scheduling_of(card.backend, registry, card.backend_facts)
    if model is None or registration is None or scheduling is None:
        return None
    if template := measured_template(card):  # what the run's own server's chat template added
        model = attrs.evolve(model, template_tokens=template)
    roofs = attrs.asdict(card.hardware_roofs) if card.hardware_roofs else {}
    settings = card.server_settings
    try:  # a manifest's figures are checked like any file's
        hardware = attrs.evolve(registration.item, **{k: v for k, v in roofs.items() if k in ROOFS and v}, measure=None)
        version = str(card.backend_facts.get("version", ""))
        machine, _ = serving_machine(hardware, model, scheduling, engine_version=version, sixteen_bit_compute=settings.sixteen_bit_compute)
    except (TypeError, ValueError):
        return None
    kv_dtype = settings.kv_cache_dtype.lower()  # an import's, else the backend's
    # where the run's server was not at its engine's defaults (a cards file says so), as it ran
    scheduling = attrs.evolve(
        scheduling,
        token_budget=settings.token_budget or scheduling.token_budget,
        slots=settings.slots or scheduling.slots,
        draft_tokens=settings.speculative_tokens or scheduling.draft_tokens,
        prefix_caching=scheduling.prefix_caching if settings.prefix_caching is None else settings.prefix_caching,
    )
    # 16 bits when the run says nothing
    return Served(
        model=model,
        machine=machine,
        kv_bytes_per_element=KV_CACHE_BYTES.get(kv_dtype, 2.0),
        scheduling=scheduling,
        speculative=decodes_speculatively(card, model),
    )


def _ran(card: ModelCard, registry: Registry, kind: type) -> list[tuple[CardWorkload, WorkloadSpec]]:
    """The card's valid results of standard workloads of ``kind`` (closed or open loop), each
    with its workload as it ran: scaled, and in the shape an imported card says it had."""
    found = []
    for line in card.workloads:
        spec = registry.workloads.get(line.name)
        if spec is None or line.custom or not line.valid or not isinstance(spec.item.shape, kind):
            continue
        workload = spec.item.scaled(line.scale)
        try:
            if measured := card.measured_shapes.get(line.name):  # what really ran
                workload = attrs.evolve(workload, shape=attrs.evolve(workload.shape, **measured))
        except (TypeError, ValueError):
            continue
        found.append((line, workload))
    return found


def open_results_of(cards: Sequence[ModelCard], registry: Registry) -> list[OpenResult]:
    """Every simulable open-loop result of ``cards``."""
    found = []
    for card in cards:
        if (served := _served(card, registry)) is None:
            continue
        for line, workload in _ran(card, registry, OpenLoopShape):
            tps = line.metrics.get("output_tps") or line.tokens_per_second  # an imported card's tokens/s may be the seed's G
            found.append(
                OpenResult(
                    run_id=card.run_id,
                    workload=workload,
                    model=served.model,
                    machine=served.machine,
                    scheduling=served.scheduling,
                    kv_bytes_per_element=served.kv_bytes_per_element,
                    tps=tps,
                    ttft_s=line.ttft_p50_s,
                    site_tps=line.site_tps,
                    speculative=served.speculative,
                )
            )
    return found


@frozen(kw_only=True)
class OpenSample:
    """One measured open-loop result with its run simulated once at the engine's priors, re-timed
    (:class:`RetimedOpen`) at each efficiency a fit tries: what fits a request's own cost."""

    run_id: str
    workload: str
    machine: Machine
    ttft_s: float
    retimed: RetimedOpen = attrs.field(eq=False, repr=False)
    speculative: bool = False

    def ttft_p50(self, efficiency: Efficiency) -> float:
        own = efficiency.own_cost_s(self.retimed.prompts)
        return max(1e-9, float(np.median(self.retimed.engine_ttfts(self.machine, efficiency) + own)))  # never 0: its log is taken


def open_samples_of(results: Sequence[OpenResult]) -> list[OpenSample]:
    """The open-loop ``results`` with a measured TTFT, each simulated once at its engine's priors."""
    found = []
    for result in results:
        if not (result.ttft_s and math.isfinite(result.ttft_s) and result.ttft_s > 0):
            continue
        prior = prior_of(result.scheduling.engine)
        try:
            done = open_simulation(result.workload, result.model, result.machine, prior, result.scheduling, kv_bytes_per_element=result.kv_bytes_per_element)
            retimed = RetimedOpen(done, prior)
        except ValueError:  # a run the simulator cannot finish: nothing to fit
            continue
        found.append(
            OpenSample(
                run_id=result.run_id,
                workload=result.workload.name,
                machine=result.machine,
                ttft_s=result.ttft_s,
                retimed=retimed,
                speculative=result.speculative,
            )
        )
    return found


def fit_request_cost(samples: Sequence[OpenSample], efficiency: Efficiency) -> Efficiency:
    """``efficiency`` with the request's own cost (:data:`REQUEST_GRID`) that best predicts the
    open-loop TTFT p50s of ``samples``: the least sum of absolute log errors (a saturated run,
    its TTFT many times any prediction, weighs as one error, not its square)."""
    engine = [(sample, sample.retimed.engine_ttfts(sample.machine, efficiency), sample.retimed.prompts) for sample in samples if not sample.speculative]
    if not engine:
        return efficiency

    pairs = list(itertools.product(*REQUEST_GRID.values()))
    fixed, per_token = (np.array(column)[:, None] for column in zip(*pairs))
    loss = np.zeros(len(pairs))
    for sample, ttfts, prompts in engine:  # every pair of costs at once: one row each
        loss += np.abs(np.log(np.maximum(1e-9, np.median(ttfts + fixed + per_token * prompts, axis=1)) / sample.ttft_s))
    best = pairs[int(np.argmin(loss))]  # the first of equals, in the grid's order
    return attrs.evolve(efficiency, request_overhead_s=best[0], prompt_token_overhead_s=best[1])


def samples_of(cards: Sequence[ModelCard], registry: Registry) -> list[Sample]:
    """Every simulable closed-loop result of ``cards`` (a standard or scaled workload of a model
    whose parameters and precision are known, on hardware with the roofs the simulator needs)."""
    found = []
    for card in cards:
        if (served := _served(card, registry)) is None:
            continue
        scheduling = served.scheduling
        for line, workload in _ran(card, registry, ClosedLoopShape):
            ttft = line.metrics.get("ttfr_mean_s") or line.ttft_p50_s
            try:
                rounds = closed_rounds(
                    workload, served.model, served.machine, prior_of(scheduling.engine), scheduling, kv_bytes_per_element=served.kv_bytes_per_element
                )
            except (TypeError, ValueError):
                continue
            found.append(
                Sample(
                    run_id=card.run_id,
                    workload=line.name,
                    rounds=tuple(rounds),
                    machine=served.machine,
                    tps=line.tokens_per_second,
                    ttft_s=ttft,
                    site_tps=line.site_tps,
                    speculative=served.speculative,
                )
            )
    return found


def _pairs(samples: Sequence[Sample], efficiency: Efficiency, metric: int) -> list[tuple[float, float]]:
    """(predicted, measured) of one metric (0: tokens/s, 1: TTFT), where both are known."""
    found = []
    for sample in samples:
        predicted, actual = sample.predicted(efficiency)[metric], (sample.tps, sample.ttft_s)[metric]
        if predicted and actual:
            found.append((predicted, actual))
    return found


def _loss(samples: Sequence[Sample], efficiency: Efficiency, metrics: tuple[int, ...]) -> float:
    """The sum of squared log errors of ``metrics`` (0: tokens/s, 1: TTFT) over ``samples``,
    each sample simulated once for all of them."""
    total = 0.0
    for sample in samples:
        predicted, actual = sample.predicted(efficiency), (sample.tps, sample.ttft_s)
        total += sum(math.log(predicted[m] / actual[m]) ** 2 for m in metrics if predicted[m] and actual[m])
    return total


def prior_distance(efficiency: Efficiency, prior: Efficiency) -> float:
    """How far ``efficiency``'s prefill parameters (:data:`PREFILL`) are from ``prior``'s: the sum
    of their squared log ratios, and of an additive one's difference over its scale (:data:`ADDITIVE`), squared."""
    distance = 0.0
    for name in PREFILL:
        value, start = getattr(efficiency, name), getattr(prior, name)
        distance += ((value - start) / ADDITIVE[name]) ** 2 if name in ADDITIVE else math.log(value / start) ** 2
    return distance


def _prefill_descent(samples: Sequence[Sample], start: Efficiency, prior: Efficiency) -> Efficiency:
    """The prefill parameters of :data:`PREFILL` that minimise the squared log errors of TTFT
    and decode speed together, plus :data:`PRIOR_WEIGHT` times their distance from ``prior``
    (:func:`prior_distance`), by pattern search from ``start``: each parameter is stepped up
    and down while that lowers the loss, and every step halves once none does. A parameter no
    sample depends on (an FP4 speedup with no FP4 run) keeps its prior."""

    def loss(efficiency: Efficiency) -> float:
        return _loss(samples, efficiency, (0, 1)) + PRIOR_WEIGHT * prior_distance(efficiency, prior)

    found, best = start, loss(start)
    steps = {name: first for name, (_, _, first) in PREFILL.items()}
    while any(step > (ADDITIVE[name] / 64 if name in ADDITIVE else 1.02) for name, step in steps.items()):
        moved = False
        for name, (low, high, _) in PREFILL.items():
            value, step = getattr(found, name), steps[name]
            tries = (value + step, value - step) if name in ADDITIVE else (value * step, value / step)
            for candidate in (min(high, max(low, t)) for t in tries if min(high, max(low, t)) != value):
                trial = attrs.evolve(found, **{name: candidate})
                if (measured := loss(trial)) < best - 1e-12:
                    found, best, moved = trial, measured, True
                    break
        if not moved:
            steps = {name: step / 2 if name in ADDITIVE else step**0.5 for name, step in steps.items()}
    return found


def _decode_grid(samples: Sequence[Sample], found: Efficiency, engine: str) -> Efficiency:
    """``found`` at the point of :data:`GRID` (with the engine's decode attention speeds and
    costs per logit, :data:`DECODE_ATTENTION` and :data:`LOGIT_OVERHEAD`) whose decode speeds
    have the least squared log error over ``samples`` (the first such point, in the grid's
    order). A sample is re-timed once for all the grid's step overheads
    (:meth:`RetimedRounds.per_user_tps`); a prediction or a measurement of none counts nothing."""
    speeds = DECODE_ATTENTION.get(engine, (found.decode_attention_speed,))
    per_logit = LOGIT_OVERHEAD.get(engine, (found.logit_overhead_s,))
    bandwidths, overheads = GRID["bandwidth"], np.array(GRID["overhead_s"])
    losses = np.zeros((len(bandwidths), len(overheads), len(speeds), len(per_logit)))
    for (b, bandwidth), (a, speed), (q, logit) in itertools.product(enumerate(bandwidths), enumerate(speeds), enumerate(per_logit)):
        efficiency = attrs.evolve(found, bandwidth=bandwidth, decode_attention_speed=speed, logit_overhead_s=logit)
        for sample in samples:
            if sample.tps:
                tps = sample.retimed.per_user_tps(sample.machine, efficiency, overheads)
                known = np.isfinite(tps) & (tps > 0)
                losses[b, :, a, q] += np.where(known, np.log(np.where(known, tps, 1.0) / sample.tps) ** 2, 0.0)
    b, o, a, q = np.unravel_index(int(np.argmin(losses)), losses.shape)
    return attrs.evolve(found, bandwidth=bandwidths[b], overhead_s=float(overheads[o]), decode_attention_speed=speeds[a], logit_overhead_s=per_logit[q])


def fit(samples: Sequence[Sample], prior: Efficiency, rounds: int = 3, *, engine: str = "", open_samples: Sequence[OpenSample] = ()) -> Efficiency:
    """The efficiencies that best predict ``samples`` (closed loop) and ``open_samples`` served
    by ``engine``; ``prior`` when there are no closed-loop samples.

    Decode speed fits bandwidth and overhead on a grid (and the decode attention's speed and the
    cost per logit, where :data:`DECODE_ATTENTION` and :data:`LOGIT_OVERHEAD` have the engine);
    then the time to first token, with
    decode speed kept in the sum, fits the prefill's parameters (:data:`PREFILL`) together,
    held toward ``prior`` (:data:`PRIOR_WEIGHT`);
    then the open-loop TTFTs fit a request's own cost (:func:`fit_request_cost`); and again,
    until nothing changes. (Where decode is bound by compute, as on a CPU at ten
    users, compute moves decode speed too: fitting it to TTFT alone would make decode wrong.)
    Results of speculative decoding are left out: their speed rests on the drafts their model
    accepted, which a fit would take for bandwidth and bend every other prediction with."""
    samples = [s for s in samples if not s.speculative]
    if not samples:
        return prior
    found = prior
    for _ in range(rounds):
        both = _prefill_descent(samples, _decode_grid(samples, found, engine), prior)
        both = fit_request_cost(open_samples, both) if open_samples else both
        if both == found:
            break
        found = both
    return found


def error_of(samples: Sequence[Sample], efficiency: Efficiency, metric: int) -> float | None:
    """Median absolute % error of one metric (0: tokens/s, 1: TTFT) of ``samples`` at ``efficiency``."""
    errors = [abs(predicted - actual) / actual * 100 for predicted, actual in _pairs(samples, efficiency, metric)]
    return statistics.median(errors) if errors else None


def open_error_of(samples: Sequence[OpenSample], efficiency: Efficiency) -> float:
    """Median absolute % error of the open-loop TTFT p50s of ``samples`` at ``efficiency`` (re-timed)."""
    return statistics.median(abs(sample.ttft_p50(efficiency) - sample.ttft_s) / sample.ttft_s * 100 for sample in samples)

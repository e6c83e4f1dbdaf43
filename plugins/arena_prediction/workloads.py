"""What a workload will do, from the step simulator (:mod:`arena_prediction.simulator`): each
workload's request stream built as its runner builds it, served by the simulated engine, summed
up into the card's figures, each with an interval from the efficiencies' plausible range.

A closed-loop run is ``concurrency`` requests sent together, run after run; a conversation of
several turns sends each turn with the earlier ones, which the server's prefix cache keeps
(``Scheduling.prefix_caching``) or its prefill takes again. An open-loop
workload's requests arrive on the *same* seeded schedule the runner uses
(:func:`~arena_core.loadgen.arrivals.arrival_offsets`), with the random dataset's lengths drawn
as it draws them; ShareGPT's lengths are not known without the data and are taken at their
typical sizes (said in the notes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np

from arena_core import (
    SHAREGPT_TYPICAL_TOKENS,
    ClosedLoopShape,
    Figures,
    HardwareProfile,
    ModelSpec,
    OpenLoopShape,
    Scheduling,
    WorkloadPrediction,
    WorkloadSpec,
    arrival_offsets,
    peak_concurrency,
    percentile,
    random_lengths,
)
from arena_prediction.simulator import Efficiency, Machine, ModelPhysics, Request, Served, Simulation, physics, prior_of, simulate, step_seconds
from arena_prediction.speculative import DRAFT_ACCEPTANCE, tokens_per_step


def prompt_breaks(scheduling: Scheduling, costs: ModelPhysics) -> tuple[int, ...]:
    """Where a prompt's share of a step stops: the engine's checkpoints, for a model with a
    sliding window or a recurrent state (the memory it checkpoints), else nowhere."""
    return scheduling.checkpoints if costs.window or costs.state_bytes else ()


#: The efficiencies' range around the central ones that makes a prediction's 80 % interval: its
#: width set so that 80 % of the seed cohort's closed-loop results, each predicted without its
#: own run (the error ledger), fall inside.
#: tests/test_simulator.py::test_the_80_percent_interval_holds_80_percent_of_the_ledger holds it
#: (80 % ± 5); docs/prediction-notes.md, "The constants' histories", says how it moved.
SPREAD = {"bandwidth": (0.90, 1.14), "compute": (0.80, 1.28), "overhead_s": (0.6, 1.7)}
#: How much further an open-loop result's interval reaches, each way, than the efficiencies' range
#: takes it: a factor on its tokens/s and one on its TTFT. They stand for what no efficiency
#: varies: how soon the answers end, the sample of arrivals and lengths, a request's own cost.
#: Set, like :data:`SPREAD`, on the seed cohort's ledger, so the interval holds 80 % of its
#: open-loop results; the same test holds it, apart from the closed loop's, and the same
#: section of the notes says how it moved.
OPEN_LOOP_SPREAD = {"tps": 1.03, "ttft": 1.08}


def _closed_requests(shape: ClosedLoopShape, prefix_caching: bool = True, template_tokens: int = 0) -> list[list[Request]]:
    """One run's rounds: a single round, or a round per turn of a conversation, whose earlier
    turns the server keeps in its prefix cache (``prefix_caching``) or prefills again.
    ``template_tokens``: what the model's chat template adds to a request without history
    (:attr:`ModelSpec.template_tokens`). llama-benchy's prompt adaptation (which Arena's runner
    reproduces) takes them out of the prompt it sends, down to one token, so such a request
    reaches the server at its stated length, or at the template's and one where that is longer."""
    prompt = shape.prompt_tokens + shape.depth if shape.depth else max(shape.prompt_tokens, template_tokens + 1)
    if shape.turns <= 1:
        return [[Request(arrival_s=0.0, prompt=prompt, output=shape.generated_tokens) for _ in range(shape.concurrency)]]
    rounds = []
    for turn in range(shape.turns):
        history = shape.depth + turn * (shape.prompt_tokens + shape.generated_tokens)
        new, cached = (shape.prompt_tokens, history) if prefix_caching else (shape.prompt_tokens + history, 0)
        rounds.append([Request(arrival_s=0.0, prompt=new, output=shape.generated_tokens, cached=cached) for _ in range(shape.concurrency)])
    return rounds


def open_requests(shape: OpenLoopShape, seed: int) -> tuple[list[Request], list[str]]:
    offsets = arrival_offsets(shape.num_prompts, shape.request_rate, shape.burstiness, seed)
    if shape.dataset == "random":
        assert shape.input_tokens is not None and shape.output_tokens is not None
        rng = np.random.default_rng(seed)  # the random dataset's own draws, in its order
        inputs, outputs = random_lengths(
            rng, count=shape.num_prompts, input_len=shape.input_tokens, output_len=shape.output_tokens, range_ratio=shape.range_ratio
        )
        return [Request(arrival_s=at, prompt=int(i), output=int(o)) for at, i, o in zip(offsets, inputs, outputs)], []
    prompt, output = SHAREGPT_TYPICAL_TOKENS
    return [Request(arrival_s=at, prompt=prompt, output=output) for at in offsets], [f"ShareGPT lengths taken at their typical {prompt} in / {output} out"]


def open_figures(served: Sequence[Served], bound: str, template_tokens: int = 0) -> Figures:
    """``vllm bench serve``'s figures of served requests (medians), each timed from its send: when
    it was due, or, where the client held it back (its ``--max-concurrency``), when it was let
    through. Its total throughput counts each prompt as its dataset does, without the
    ``template_tokens`` the server prefilled beside it."""
    speeds = [s.decode_tps for s in served if s.decode_tps is not None]
    ttfts = [s.ttft_s for s in served]
    span = max(s.end_s for s in served) - min(s.request.arrival_s for s in served)
    tokens = sum(s.request.output for s in served)
    peak = peak_concurrency([(s.sent_s, s.end_s) for s in served])
    everything = sum(s.request.prompt + s.request.cached - template_tokens for s in served) + tokens
    return Figures(
        per_user_tps=percentile(speeds, 50) if speeds else None,
        total_tps=tokens / span if span > 0 else None,
        ttft_p50_s=percentile(ttfts, 50) if ttfts else None,
        bound=bound,
        site_tps=everything / span / peak if span > 0 and peak else None,
    )


def closed_rounds(
    workload: WorkloadSpec, model: ModelSpec, machine: Machine, efficiency: Efficiency, scheduling: Scheduling, *, kv_bytes_per_element: float = 2.0
) -> list[Simulation]:
    """A closed-loop workload's rounds, simulated: their steps do not depend on their timing, so
    :class:`RetimedRounds` serves any other efficiency."""
    assert isinstance(workload.shape, ClosedLoopShape)
    slots = scheduling.slots or workload.shape.concurrency  # more slots than requests change nothing; fewer hold some back
    costs = physics(model, kv_bytes_per_element)
    return [
        simulate(
            round_,
            costs,
            machine,
            efficiency,
            slots=slots,
            token_budget=scheduling.token_budget,
            prompt_breaks=prompt_breaks(scheduling, costs),
            draft_tokens=scheduling.draft_tokens,
        )
        for round_ in _closed_requests(workload.shape, scheduling.prefix_caching, model.template_tokens)
    ]


def closed_figures(rounds: Sequence[Simulation], machine: Machine | None = None, efficiency: Efficiency | None = None) -> Figures:
    """llama-benchy's figures of a closed-loop workload's rounds (means over requests), at the
    efficiency they were simulated with or, re-timed, at ``efficiency``."""
    laid = RetimedRounds(rounds)
    if machine is not None and efficiency is not None:
        return laid.figures(machine, efficiency)
    served = [s for done in rounds for s in done.served]
    return laid.figures_at(np.array([s.first_token_s for s in served]), np.array([s.end_s for s in served]))


def mean_decode_speed(lengths: np.ndarray, spans: np.ndarray) -> np.ndarray:
    """llama-benchy's per-user decode speed: over the requests that decoded (more than one
    token, in a span longer than 0), the mean of their tokens after the first over that span;
    NaN where none did. ``spans`` holds the requests' spans, or rows of them (one per timing)."""
    decoding = (lengths > 1) & (spans > 0)
    speeds = np.where(decoding, (lengths - 1) / np.where(decoding, spans, 1.0), 0.0)
    count = decoding.sum(axis=-1)
    return np.where(count > 0, speeds.sum(axis=-1) / np.maximum(count, 1), np.nan)


#: The timings whose figures :meth:`RetimedRounds.figures` keeps (a pattern search's trials of one
#: parameter at a time, of which many leave a run's steps timed alike)
KEPT_TIMINGS = 64


class RetimedRounds:
    """A closed-loop workload's rounds laid side by side (one row of steps each, zero-padded),
    so that re-timing them at another efficiency is a few array operations instead of a loop
    over rounds: the calibration's search re-times each measured workload thousands of times."""

    def __init__(self, rounds: Sequence[Simulation]) -> None:
        if not rounds or not all(done.served for done in rounds):
            raise ValueError("a closed-loop workload's rounds each serve at least one request")
        width = max(len(done.read) for done in rounds)

        def rows(name: str) -> np.ndarray:
            table = np.zeros((len(rounds), width))
            for row, done in zip(table, rounds):
                row[: len(done.read)] = getattr(done, name)  # a scalar 0.0 (no such FLOPs) fills its steps
            return table

        self.read, self.flops = rows("read"), rows("flops")
        self.ramp_flops, self.scan_flops, self.decode_attention_flops = rows("ramp_flops"), rows("scan_flops"), rows("decode_attention_flops")
        self.sampled_logits = rows("sampled_logits")
        self.layers = rounds[0].layers
        self.round_of = np.array([row for row, done in enumerate(rounds) for _ in done.served])
        self.first_step = np.array([s.first_step for done in rounds for s in done.served])
        self.last_step = np.array([s.last_step for done in rounds for s in done.served])
        self.starts = np.cumsum([0, *(len(done.served) for done in rounds)])[:-1]  # each round's first request
        self.lengths = np.array([s.request.output for done in rounds for s in done.served])
        self.prompts = np.array([s.request.prompt + s.request.cached for done in rounds for s in done.served])  # what each tokenises
        self.decoded = np.add.reduceat(np.maximum(self.lengths - 1, 0), self.starts).tolist()  # tokens after each first, per round
        memory = sum(float(done.memory_bound.sum()) for done in rounds) / max(1, sum(len(done.memory_bound) for done in rounds))
        self.bound = "bandwidth" if memory >= 0.5 else "compute"
        self.scans = bool(self.scan_flops.any())
        self._figures: dict[tuple[object, ...], Figures] = {}  # by Machine.timing_of: a fit tries many efficiencies alike in these steps

    def figures(self, machine: Machine, efficiency: Efficiency) -> Figures:
        """The figures at ``efficiency``: every step re-timed, each round's clock from 0 and its
        first step after its requests' own cost (the same for every request of a round, which
        all send the same prompt: so the steps do not move). Kept for the last
        :data:`KEPT_TIMINGS` timings asked (:meth:`Machine.timing_of`)."""
        timing = (machine, *machine.timing_of(efficiency, scans=self.scans))
        if (found := self._figures.get(timing)) is None:
            found = self._figures[timing] = self._retimed(machine, efficiency)
            if len(self._figures) > KEPT_TIMINGS:
                del self._figures[next(iter(self._figures))]
        return found

    def _retimed(self, machine: Machine, efficiency: Efficiency) -> Figures:
        seconds, _ = step_seconds(
            self.read, self.flops, machine, efficiency, self.layers, self.ramp_flops, self.scan_flops, self.decode_attention_flops, self.sampled_logits
        )
        ends = np.cumsum(seconds, axis=1)  # each row on its own, step by step, as the simulation's clock
        delay = efficiency.own_cost_s(self.prompts)
        return self.figures_at(ends[self.round_of, self.first_step] + delay, ends[self.round_of, self.last_step] + delay)

    def per_user_tps(self, machine: Machine, efficiency: Efficiency, overheads: np.ndarray) -> np.ndarray:
        """:attr:`Figures.per_user_tps` at ``efficiency`` with each of ``overheads`` for its
        ``overhead_s``, from one re-timing (NaN where no request decoded): a step's overhead
        adds the same to every step, so a request's decode span grows by it once a step after
        its first token. The calibration's grid tries ten overheads at each bandwidth."""
        seconds, _ = step_seconds(
            self.read, self.flops, machine, attrs.evolve(efficiency, overhead_s=0.0), self.layers,
            self.ramp_flops, self.scan_flops, self.decode_attention_flops, self.sampled_logits,
        )  # fmt: skip
        ends = np.cumsum(seconds, axis=1)
        spans = ends[self.round_of, self.last_step] - ends[self.round_of, self.first_step]
        return mean_decode_speed(self.lengths, spans + np.multiply.outer(overheads, self.last_step - self.first_step))

    def figures_at(self, first: np.ndarray, end: np.ndarray) -> Figures:
        """The figures of requests (all rounds', in served order) that got their first tokens at
        ``first`` and ended at ``end``, each round timed from its own start."""
        speed = float(mean_decode_speed(self.lengths, end - first))
        last = np.maximum.reduceat(end, self.starts)
        spans = float(last.sum())  # each round's length, one after another
        decode_spans = last - np.minimum.reduceat(first, self.starts)
        # llama-benchy's batch tg of each round: tokens after each first over first first token to last token
        batch_tg = [decoded / span for decoded, span in zip(self.decoded, decode_spans.tolist()) if span > 0]
        return Figures(
            per_user_tps=speed if not math.isnan(speed) else None,
            total_tps=int(self.lengths.sum()) / spans if spans > 0 else None,
            # llama-benchy's "ttfr" is a mean; a sum over the count, as numpy's mean() costs more (thousands of calls a fit)
            ttft_p50_s=float(first.sum()) / len(first),
            bound=self.bound,
            site_tps=sum(batch_tg) / len(batch_tg) if batch_tg else None,
        )


class RetimedOpen:
    """An open-loop run's simulated steps, re-timed at another efficiency *as if* the same steps
    ran (the calibration's estimate: at another efficiency an open-loop run's steps would batch
    somewhat differently, so a prediction simulates it again). A request's TTFT is its own cost,
    the rest of the step running when it was ready, and the steps from its admission to its
    first token."""

    def __init__(self, done: Simulation, efficiency: Efficiency) -> None:
        if not done.served:
            raise ValueError("an open-loop run serves at least one request")
        self.read, self.flops, self.layers = done.read, done.flops, done.layers
        self.ramp_flops, self.scan_flops, self.decode_attention_flops = done.ramp_flops, done.scan_flops, done.decode_attention_flops
        self.sampled_logits = done.sampled_logits
        self.admitted_step = np.array([s.admitted_step for s in done.served])
        self.first_step = np.array([s.first_step for s in done.served])
        self.prompts = np.array([s.request.prompt + s.request.cached for s in done.served])
        # the rest of the step that was running when each request was ready, as simulated
        self.rest = np.maximum(0.0, np.array([s.admitted_s - s.sent_s - efficiency.request_seconds(s.request) for s in done.served]))

    def engine_ttfts(self, machine: Machine, efficiency: Efficiency) -> np.ndarray:
        """Each request's TTFT at ``efficiency`` but its own cost (the send to the first token
        less :meth:`Efficiency.request_seconds`)."""
        seconds, _ = step_seconds(
            self.read, self.flops, machine, efficiency, self.layers, self.ramp_flops, self.scan_flops, self.decode_attention_flops, self.sampled_logits
        )
        ends = np.concatenate(([0.0], np.cumsum(seconds)))
        return self.rest + ends[self.first_step + 1] - ends[self.admitted_step]


def open_simulation(
    workload: WorkloadSpec, model: ModelSpec, machine: Machine, efficiency: Efficiency, scheduling: Scheduling, *, kv_bytes_per_element: float = 2.0
) -> Simulation:
    """An open-loop workload's requests on its own seeded arrivals, served: the client holds
    back what its ``--max-concurrency`` does not let through. Each prompt reaches the server with
    what the model's chat template adds to it (``vllm bench serve`` sends its prompts as they are)."""
    shape = workload.shape
    assert isinstance(shape, OpenLoopShape)
    requests, _ = open_requests(shape, workload.seed)
    if model.template_tokens:
        requests = [attrs.evolve(request, prompt=request.prompt + model.template_tokens) for request in requests]
    costs = physics(model, kv_bytes_per_element)
    return simulate(
        requests,
        costs,
        machine,
        efficiency,
        slots=scheduling.slots or 64,
        token_budget=scheduling.token_budget,
        prompt_breaks=prompt_breaks(scheduling, costs),
        client_limit=shape.max_concurrency,
        draft_tokens=scheduling.draft_tokens,
    )


def open_run(
    workload: WorkloadSpec, model: ModelSpec, machine: Machine, efficiency: Efficiency, scheduling: Scheduling, *, kv_bytes_per_element: float = 2.0
) -> Figures:
    """An open-loop workload simulated on its own seeded arrivals: ``vllm bench serve``'s figures."""
    done = open_simulation(workload, model, machine, efficiency, scheduling, kv_bytes_per_element=kv_bytes_per_element)
    return open_figures(done.served, done.bound(), model.template_tokens)


def speculative(model: ModelSpec) -> bool:
    """Whether ``model`` is a build served with speculative decoding (an MTP build, by its name),
    whose draft tokens a run or a prediction must say for the simulator to cover it."""
    return "mtp" in model.precision.lower() or "mtp" in model.name.lower()


def speculative_note(draft_tokens: int) -> str:
    """What a prediction with speculative decoding says of it."""
    return (
        f"speculative decoding of {draft_tokens} draft tokens a step, each accepted at an assumed {DRAFT_ACCEPTANCE:.0%} "
        f"after the one before it: {tokens_per_step(draft_tokens):.2f} tokens a step (acceptance depends on the drafter and the text; "
        "the interval does not take in its spread)"
    )


def interval_ends(central: Efficiency) -> tuple[Efficiency, Efficiency]:
    """The slow and the fast end of the efficiencies' plausible range around ``central``
    (bandwidth, compute and step overhead as :data:`SPREAD` says): a prediction's interval."""
    slow = attrs.evolve(
        central,
        bandwidth=central.bandwidth * SPREAD["bandwidth"][0],
        compute=central.compute * SPREAD["compute"][0],
        moe_compute=central.moe_compute * SPREAD["compute"][0],
        scan_compute=central.scan_compute * SPREAD["compute"][0],
        ssd_compute=central.ssd_compute * SPREAD["compute"][0],
        overhead_s=central.overhead_s * SPREAD["overhead_s"][1],
        layer_overhead_s=central.layer_overhead_s * SPREAD["overhead_s"][1],
        logit_overhead_s=central.logit_overhead_s * SPREAD["overhead_s"][1],
    )
    fast = attrs.evolve(
        central,
        bandwidth=min(1.0, central.bandwidth * SPREAD["bandwidth"][1]),
        compute=min(1.0, central.compute * SPREAD["compute"][1]),
        moe_compute=min(1.0, central.moe_compute * SPREAD["compute"][1]),
        scan_compute=min(1.0, central.scan_compute * SPREAD["compute"][1]),
        ssd_compute=min(1.0, central.ssd_compute * SPREAD["compute"][1]),
        overhead_s=central.overhead_s * SPREAD["overhead_s"][0],
        layer_overhead_s=central.layer_overhead_s * SPREAD["overhead_s"][0],
        logit_overhead_s=central.logit_overhead_s * SPREAD["overhead_s"][0],
    )
    return slow, fast


def open_interval(slow: Figures, fast: Figures) -> tuple[Figures, Figures]:
    """An open-loop run's interval: its figures simulated at both ends of the efficiencies'
    range, widened by :data:`OPEN_LOOP_SPREAD` (the slow end slower, the fast end faster)."""
    return _widened(slow, 1 / OPEN_LOOP_SPREAD["tps"], OPEN_LOOP_SPREAD["ttft"]), _widened(fast, OPEN_LOOP_SPREAD["tps"], 1 / OPEN_LOOP_SPREAD["ttft"])


def _widened(figures: Figures, tps: float, ttft: float) -> Figures:
    def times(value: float | None, factor: float) -> float | None:
        return None if value is None else value * factor

    return attrs.evolve(
        figures,
        per_user_tps=times(figures.per_user_tps, tps),
        total_tps=times(figures.total_tps, tps),
        site_tps=times(figures.site_tps, tps),
        ttft_p50_s=times(figures.ttft_p50_s, ttft),
    )


def serving_machine(
    hardware: HardwareProfile, model: ModelSpec, scheduling: Scheduling, *, engine_version: str = "", sixteen_bit_compute: bool = False
) -> tuple[Machine, list[str]]:
    """The roofs ``model`` is simulated under on ``hardware``, and what to say of them: in 16 bits
    where the engine's version declares that it computes the precision so (a fact the backend
    states, with its source) or where the server's settings say so (``sixteen_bit_compute``:
    a cards file's, ``arena predict --sixteen-bit-compute``), else at the precision's own roof."""
    declared, said = scheduling.sixteen_bit(model.precision, hardware.name, engine_version)
    notes = [said] if said else []
    if sixteen_bit_compute and not declared and Machine.of(hardware, model).low_precision:
        notes.append(f"{model.precision} computed in 16 bits, through a weight-only kernel, as stated")
    machine = Machine.of(hardware, model, sixteen_bit=declared or sixteen_bit_compute)
    if machine.low_precision and machine.sixteen_bit_share:
        notes.append(
            f"{model.params_sixteen_bit_b:.2f}B parameters its checkpoint keeps in 16 bits: read at two bytes each, multiplied without the {machine.low_precision.upper()} speedup"
        )
    return machine, notes


def predict(
    workload: WorkloadSpec,
    model: ModelSpec,
    hardware: HardwareProfile,
    *,
    scheduling: Scheduling,
    efficiency: Efficiency | None = None,
    kv_bytes_per_element: float = 2.0,
    engine_version: str = "",
    sixteen_bit_compute: bool = False,
) -> WorkloadPrediction:
    """``workload`` on ``model`` served by an engine that schedules as ``scheduling`` on
    ``hardware``: the central figures at ``efficiency`` (default: the engine's prior), and an
    interval from its plausible range (a closed-loop workload simulated once and re-timed at both
    ends; an open-loop one, whose steps depend on their timing, simulated at each and widened by
    :func:`open_interval`); ``sixteen_bit_compute``: the server computes a low-precision
    checkpoint's GEMMs in 16 bits, whatever its version declares."""
    central_eff = efficiency or prior_of(scheduling.engine)
    machine, said = serving_machine(hardware, model, scheduling, engine_version=engine_version, sixteen_bit_compute=sixteen_bit_compute)
    slow, fast = interval_ends(central_eff)
    notes = [*physics(model).notes, *said]
    workload = workload.as_conversation()  # agents: the conversation they resemble
    if isinstance(workload.shape, ClosedLoopShape):
        rounds = closed_rounds(workload, model, machine, central_eff, scheduling, kv_bytes_per_element=kv_bytes_per_element)
        central, low, high = closed_figures(rounds), closed_figures(rounds, machine, slow), closed_figures(rounds, machine, fast)
    else:
        notes += open_requests(workload.shape, workload.seed)[1]
        central, *ends = (open_run(workload, model, machine, e, scheduling, kv_bytes_per_element=kv_bytes_per_element) for e in (central_eff, slow, fast))
        low, high = open_interval(*ends)
    if model.template_tokens:
        notes.append(f"its chat template adds {model.template_tokens:,} tokens to a request without a system message of its own: prefilled with each")
    if scheduling.draft_tokens:
        notes.append(speculative_note(scheduling.draft_tokens))
    elif speculative(model):
        notes.append("an MTP build, served with speculative decoding: predicted without it (--speculative-tokens N simulates N draft tokens a step)")
    return WorkloadPrediction(workload=workload.name, central=central, low=low, high=high, notes=tuple(notes))

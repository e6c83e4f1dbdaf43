"""The step simulator as a predictor (:class:`arena_core.Predictor`): what the default predictor
answers for ``arena predict``, ``arena calibrate``, the cards' "predicted vs measured" and the
site's error ledger."""

from __future__ import annotations

import time
from collections.abc import Sequence

import attrs

from arena_core import (
    ANSWER,
    CONVERTER,
    BackendSpec,
    Calibration,
    CalibrationReport,
    ClosedLoopShape,
    FitCache,
    LedgerLine,
    ModelCard,
    PredictionSetup,
    Registry,
    RequestRecord,
    Scheduling,
    UsageError,
    WorkloadPrediction,
    WorkloadSpec,
)
from arena_prediction.calibration import PRIOR_WEIGHT, error_of, fit, open_error_of, open_results_of, open_samples_of, samples_of, scheduling_of
from arena_prediction.ledger import ledger
from arena_prediction.simulator import Efficiency, Served, blended, prior_of
from arena_prediction.situations import LABELS, UNMEASURED, WIDENINGS, error_cells, measure, situation_lines, situations_of, widened_prediction
from arena_prediction.situations import fitted_to as fitted_to_of
from arena_prediction.workloads import closed_rounds, interval_ends, open_simulation, predict, serving_machine

NAME = "step-simulator"


class StepSimulator:
    """Predicts by simulating the engine step by step at efficiencies fitted to stored runs."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def coverage(self, setup: PredictionSetup) -> str | None:
        if setup.backend.scheduling is None:
            return f"backend {setup.backend.name!r} declares no scheduling: the step simulator does not cover it"
        if not setup.backend.scheduling.chunked_prefill:  # every step it simulates chunks prompts into the budget
            return f"backend {setup.backend.name!r} prefills whole prompts (no chunked prefill): the step simulator does not cover it"
        return None

    def calibrated(self, setup: PredictionSetup) -> Efficiency | None:
        """The stored calibration's efficiencies where it is this predictor's and holds efficiencies
        (a tampered file, 5,000 % of the bandwidth say, is no fit), else None."""
        stored = setup.calibration
        if stored is None or stored.predictor not in (NAME, ""):  # "": stored before predictors had names
            return None
        try:
            return CONVERTER.structure(dict(stored.efficiency), Efficiency)
        except Exception:  # cattrs' validation errors and the bounds' ValueError alike: no fit
            return None

    def efficiency(self, setup: PredictionSetup) -> Efficiency:
        """The calibrated efficiencies, as far from the priors as the prediction's situation
        trusts them (:mod:`arena_prediction.situations`), else the engine's priors."""
        prior = prior_of(self._scheduling(setup).engine)
        fitted = self.calibrated(setup)
        return blended(prior, fitted, self._situation(setup)[1]) if fitted is not None else prior

    def _situation(self, setup: PredictionSetup) -> tuple[list[str], float, float]:
        """The leave-out kinds the prediction is in, the weight of the fit there (the least of
        theirs) and the power of its interval (the most of theirs). No fit in use, or one stored
        before situations were measured: none, and the fit trusted whole."""
        stored = setup.calibration
        if stored is None or not stored.situations or self.calibrated(setup) is None:
            return [], 1.0, 1.0
        kinds = situations_of(setup.model, setup.engine_version, stored.fitted_to)
        measured = [stored.situations.get(kind, UNMEASURED) for kind in kinds]
        weight = min(m.get("weight", 0.0) for m in measured)
        power = max(m.get("widening", 1.0) for m in measured)
        # a stored file is outside data: a weight or a power outside what calibrate tries is the priors' and the plain interval
        return kinds, weight if 0 <= weight <= 1 else 0.0, power if min(WIDENINGS) <= power <= max(WIDENINGS) else 1.0

    def situation_line(self, setup: PredictionSetup) -> str:
        """What situation the prediction is in, and the error the leave-out of each says there."""
        kinds, weight, _ = self._situation(setup)
        stored = setup.calibration
        if not kinds or stored is None:
            return ""
        where = "a model the fit learnt from" if kinds[0] == "run" else "a model outside the fit"
        errors = []
        for kind in kinds:
            cells = error_cells(stored.situations.get(kind, UNMEASURED), ["tps", "ttft"])
            errors.append(f"{', '.join(cells)} ({LABELS[kind]})" if cells else f"not measured ({LABELS[kind]}: the fit's store had nothing to leave out)")
        trust = "" if weight == 1 else f"; the fit trusted {weight:.0%} of the way from the priors there"
        return f"predicted for {where}; median error there: " + "; ".join(errors) + trust

    def basis(self, setup: PredictionSetup) -> str:
        settings = self.efficiency(setup).describe()
        stored = setup.calibration
        if stored is not None and self.calibrated(setup) is not None:
            situation = self.situation_line(setup)
            return (
                f"tier 1: calibrated on {stored.results} results of {stored.runs} runs on {setup.hardware.name} "
                f"({settings}; arena calibrate, {stored.fitted_at})" + (f"; {situation}" if situation else "")
            )
        return f"tier 0: the specs and {setup.backend.name}'s priors ({settings}); arena calibrate fits them to stored runs"

    def predict(self, workload: WorkloadSpec, setup: PredictionSetup) -> WorkloadPrediction:
        return widened_prediction(self._predicted(workload, setup), self._situation(setup)[2])

    def _predicted(self, workload: WorkloadSpec, setup: PredictionSetup) -> WorkloadPrediction:
        return predict(
            workload,
            setup.model,
            setup.hardware,
            scheduling=self._scheduling(setup),
            efficiency=self.efficiency(setup),
            kv_bytes_per_element=setup.kv_bytes_per_element,
            engine_version=setup.engine_version,
            sixteen_bit_compute=setup.sixteen_bit_compute,
        )

    def serve(self, workload: WorkloadSpec, setup: PredictionSetup, *, at: str = "central") -> tuple[RequestRecord, ...]:
        scheduling, efficiency = self._scheduling(setup), self.efficiency(setup)
        if at != "central":
            slow, fast = interval_ends(efficiency)
            efficiency = {"slow": slow, "fast": fast}[at]
        machine, _ = serving_machine(
            setup.hardware, setup.model, scheduling, engine_version=setup.engine_version, sixteen_bit_compute=setup.sixteen_bit_compute
        )
        workload = workload.as_conversation()  # agents: the conversation they resemble
        if isinstance(workload.shape, ClosedLoopShape):
            rounds = closed_rounds(workload, setup.model, machine, efficiency, scheduling, kv_bytes_per_element=setup.kv_bytes_per_element)
            return tuple(record for turn, done in enumerate(rounds) for record in _records(workload.name, done.served, turn=turn, open_loop=False))
        done = open_simulation(workload, setup.model, machine, efficiency, scheduling, kv_bytes_per_element=setup.kv_bytes_per_element)
        return _records(workload.name, done.served, turn=0, open_loop=True)

    def calibrate(self, cards: Sequence[ModelCard], hardware: str, backend: BackendSpec, *, fits: FitCache | None = None) -> CalibrationReport:
        if backend.scheduling is None or scheduling_of(backend.name, self.registry) is None:
            why = "declares no scheduling" if backend.scheduling is None else "prefills whole prompts (no chunked prefill)"
            raise UsageError(f"backend {backend.name!r} {why}: the step simulator does not cover its runs, nothing to fit")
        engine = backend.scheduling.engine
        chosen = [
            c for c in cards if c.hardware == hardware and (s := scheduling_of(c.backend, self.registry, c.backend_facts)) is not None and s.engine == engine
        ]
        samples = samples_of(chosen, self.registry)
        if not samples:
            raise UsageError(
                f"no stored closed-loop results on {hardware} with {backend.name} to fit (of {len(chosen)} runs there; "
                "a run needs a model whose parameters and precision are known)"
            )
        fitted_to = [s for s in samples if not s.speculative]
        if not fitted_to:
            raise UsageError(
                f"the stored results on {hardware} with {backend.name} all decoded speculatively (an MTP build, or a server's stated draft tokens), whose speed rests on the drafts accepted: nothing to fit"
            )
        prior = prior_of(engine)
        opened = [s for s in open_samples_of(open_results_of(chosen, self.registry)) if not s.speculative]
        fitted = fit(fitted_to, prior, engine=engine, open_samples=opened)
        calibration = Calibration(
            predictor=NAME,
            hardware=hardware,
            backend=engine,
            efficiency=CONVERTER.unstructure(fitted),
            runs=len({s.run_id for s in fitted_to}),
            results=len(fitted_to),
            fitted_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            median_error_tps=error_of(fitted_to, fitted, 0),
            median_error_ttft=error_of(fitted_to, fitted, 1),
        )
        measured = measure(chosen, self.registry, fits=fits)
        learnt = {s.run_id for s in fitted_to}  # the runs whose results the fit took (not a speculative one's)
        calibration = attrs.evolve(calibration, situations=measured, fitted_to=fitted_to_of([c for c in chosen if c.run_id in learnt], self.registry))
        lines = [f"fitted to {calibration.results} results of {calibration.runs} runs on {hardware} ({engine}):"]
        if left_out := len(samples) - len(fitted_to):
            lines.append(
                f"  left out: {left_out} results of speculative decoding (an MTP build, or a server's stated draft tokens), whose speed rests on the drafts accepted"
            )
        lines.append(f"  {fitted.describe(prior)}")
        lines.append(f"  the prefill's parameters held toward their priors (weight {PRIOR_WEIGHT:g}: docs/prediction-notes.md, \"The prior's weight\")")
        for metric, index in (("tokens/s per user", 0), ("TTFT", 1)):
            before, after = error_of(fitted_to, prior, index), error_of(fitted_to, fitted, index)
            if before is not None and after is not None:
                lines.append(f"  median error of {metric} on these results: {before:.1f} % with the priors, {after:.1f} % fitted (in-sample)")
        if opened:
            before, after = open_error_of(opened, prior), open_error_of(opened, fitted)
            lines.append(
                f"  median error of open-loop TTFT p50 on {len(opened)} results: {before:.1f} % with the priors, {after:.1f} % fitted (in-sample, re-timed)"
            )
        return CalibrationReport(calibration=calibration, lines=(*lines, *situation_lines(measured)))

    def ledger(self, cards: Sequence[ModelCard], *, only: str | None = None, fits: FitCache | None = None) -> list[LedgerLine]:
        return ledger(cards, self.registry, only, fits=fits)

    def _scheduling(self, setup: PredictionSetup) -> Scheduling:
        if (why := self.coverage(setup)) is not None:
            raise ValueError(why)
        return setup.backend.scheduling


def _records(workload: str, served: Sequence[Served], *, turn: int, open_loop: bool) -> tuple[RequestRecord, ...]:
    """Simulated requests as request records: sent when due (or, held back by the client, when
    let through), the first token and the end as simulated, every output token counted; an
    open-loop request says when it was due, as the open-loop driver's records do."""

    def ns(seconds: float) -> int:
        return round(seconds * 1e9)

    return tuple(
        RequestRecord(
            workload=workload,
            run_index=0,
            request_index=index,
            turn_index=turn,
            scheduled_ns=ns(s.request.arrival_s) if open_loop else None,
            dispatched_ns=ns(s.sent_s) if open_loop else None,
            sent_ns=ns(s.sent_s),
            chunk_ns=(ns(s.first_token_s),),
            chunk_kinds=ANSWER,
            end_ns=ns(s.end_s),
            prompt_tokens_server=s.request.prompt + s.request.cached,
            completion_tokens_server=s.request.output,
            http_status=200,
        )
        for index, s in enumerate(served)
    )

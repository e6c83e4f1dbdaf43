"""The error ledger (``shared/spec/prediction.md`` section 3): every stored result beside the
prediction made *without its run* (fitted to the other runs of its hardware and engine; the
priors when there are none), so the running error of the prediction is always the error on data
it did not see. An open-loop result is simulated again at those efficiencies on its own arrivals.

Fits and the lines made with them are kept (``fits``, the store's cache) under keys that name
what they were made from: each run's card as the simulator reads it, and the code a prediction
depends on (this plugin's and the core's value classes and decode tables, and Arena's version).
A card view then reads its lines instead of simulating and fitting again; a new run, a changed
catalog entry or changed code is a new key, and what is read is checked like any file's.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from functools import cache
from importlib.util import find_spec
from pathlib import Path

import attrs

from arena_core import CONVERTER, Figures, FitCache, LedgerLine, ModelCard, Registry, __version__
from arena_prediction.calibration import OpenResult, OpenSample, Sample, fit, model_of, open_results_of, open_samples_of, samples_of, scheduling_of
from arena_prediction.leave_out import LeaveOut, leave_out
from arena_prediction.simulator import Efficiency, blended, prior_of
from arena_prediction.workloads import interval_ends, open_interval

#: The most fits the ledger makes per hardware and engine. Up to this many runs, each run's
#: results are predicted by a fit to all the others; with more, runs are dealt into this many
#: folds and predicted by a fit to the other folds, so a store of hundreds of runs costs as many
#: fits as one of twenty (each fit searches thousands of efficiencies).
LEDGER_FOLDS = 20
#: What a card's results carry that the ledger reads (the rest, goodput under an SLO say, does not
#: change a prediction and stays out of the keys).
READ_METRICS = ("ttfr_mean_s", "output_tps", "decode_tps_total", "site_tps", "total_tps", "peak_concurrency", "requested_rate")


def ledger_folds(run_ids: Sequence[str], most: int = LEDGER_FOLDS) -> dict[str, int]:
    """Each run's fold: run ids dealt round-robin in sorted order into ``most`` folds at most,
    so a card and the site put a run in the same fold."""
    ordered = sorted(set(run_ids))
    count = max(1, min(len(ordered), most))
    return {run_id: index % count for index, run_id in enumerate(ordered)}


@cache
def source_digest() -> str:
    """The digest of the code a prediction depends on: this plugin's, and the core's value classes
    and decode tables it reads (bytes per weight and per KV element, model layouts, shapes and
    their scaling, a card's figures): a change to any of them is a new key."""
    core = find_spec("arena_core")
    folder = Path(core.submodule_search_locations[0]) if core and core.submodule_search_locations else None
    digest = hashlib.sha256(__version__.encode())
    paths = [
        *Path(__file__).parent.glob("*.py"),
        *((folder / "types").glob("*.py") if folder else ()),
        *((folder / "run").glob("roofline.py") if folder else ()),
    ]
    for path in sorted(paths):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def card_print(card: ModelCard, registry: Registry) -> str:
    """What the ledger reads of ``card``, as one string: its run, model, machine, server and the
    figures and shapes of its results."""
    profile = registry.hardware.get(card.hardware)
    lines = [
        (
            line.name,
            line.scale,
            line.custom,
            line.valid,
            line.tokens_per_second,
            line.ttft_p50_s,
            [(k, line.metrics[k]) for k in READ_METRICS if k in line.metrics],
        )
        for line in card.workloads
    ]
    shapes = {line.name: repr(registry.workloads[line.name].item) for line in card.workloads if line.name in registry.workloads}
    return json.dumps(
        [
            card.run_id,
            card.backend,
            card.hardware,
            repr(model_of(card, registry)),
            repr(attrs.evolve(profile.item, measure=None)) if profile else None,
            repr(scheduling_of(card.backend, registry, card.backend_facts)),
            repr(card.hardware_roofs),
            repr(card.server_settings),
            CONVERTER.unstructure(dict(card.measured_shapes)),
            lines,
            shapes,
        ],
        default=repr,
    )


def _key(kind: str, *parts: str) -> str:
    digest = hashlib.sha256(source_digest().encode())
    for part in parts:
        digest.update(b"\0" + part.encode())
    return f"{kind}--{digest.hexdigest()[:40]}"


class _Kept:
    """The cache's fits and lines, each checked as it is read: a value of the wrong shape or out
    of bounds (a tampered file) is no value, and is made again."""

    def __init__(self, fits: FitCache | None) -> None:
        self.fits = fits

    def efficiency(self, key: str) -> Efficiency | None:
        try:
            return CONVERTER.structure(self.fits[key], Efficiency) if self.fits is not None else None
        except Exception:  # missing, or no efficiency: cattrs' errors and the bounds' ValueError alike
            return None

    def lines(self, key: str, run_id: str) -> list[LedgerLine] | None:
        """The lines kept under ``key``, when they are lines of ``run_id`` whose every figure is
        a finite number of at least 0 (else they are made again)."""
        try:
            found = CONVERTER.structure(self.fits[key]["lines"], list[LedgerLine]) if self.fits is not None else None
        except Exception:  # missing, or not lines
            return None
        figures = [value for line in found or () for value in attrs.astuple(line) if isinstance(value, float | int) and not isinstance(value, bool)]
        if found is None or any(line.run_id != run_id for line in found) or not all(math.isfinite(value) and value >= 0 for value in figures):
            return None
        return found

    def keep(self, key: str, value: dict) -> None:
        if self.fits is not None:
            self.fits[key] = value


def ledger(
    cards: Sequence[ModelCard],
    registry: Registry,
    only: str | None = None,
    *,
    calibrated: bool = True,
    fits: FitCache | None = None,
    leave: str = "run",
    weight: float = 1.0,
) -> list[LedgerLine]:
    """Each result of ``cards`` (or of run ``only``) predicted without its own run: fitted to the
    closed-loop results of the runs outside its fold (:func:`ledger_folds`: up to
    :data:`LEDGER_FOLDS` runs, every other run) of its hardware and engine (tier 1), or, not
    ``calibrated``, at the engine's priors (tier 0); the fit takes the open-loop results of those
    runs for a request's own cost. An open-loop result's tokens/s is its output
    throughput. Runs of a backend that declares no scheduling are not covered. ``fits`` keeps the
    fits and the lines made with them, keyed by what they were made from. ``leave``: which runs
    a fit learns from (:mod:`arena_prediction.leave_out`; a run no fit of that kind predicts has
    no line); ``weight``: how far tier 1 goes from the priors toward the fit (1: all the way)."""
    groups: dict[tuple[str, str], list[ModelCard]] = {}
    for card in cards:
        if (scheduling := scheduling_of(card.backend, registry, card.backend_facts)) is not None:
            groups.setdefault((card.hardware, scheduling.engine), []).append(card)
    lines: list[LedgerLine] = []
    for (hardware, engine), members in groups.items():
        if only is None or only in {c.run_id for c in members}:
            out = leave_out(leave, members, registry, ledger_folds([c.run_id for c in members], LEDGER_FOLDS))
            lines += _group_ledger(members, registry, only, (hardware, engine), calibrated, _Kept(fits), out, weight)
    return lines


def _group_ledger(
    members: Sequence[ModelCard], registry: Registry, only: str | None, group: tuple[str, str], calibrated: bool, kept: _Kept, out: LeaveOut, weight: float
) -> list[LedgerLine]:
    """The ledger of one hardware and engine's runs, run by run in run-id order; each run's lines
    read from ``kept`` where they are, else predicted (simulating every run's results once, when
    first needed, in the order given: a fit sums its errors in that order)."""
    fold_of = out.fold_of
    prints = {c.run_id: card_print(c, registry) for c in members}
    found: list[Sample] | None = None
    found_open: list[OpenSample] | None = None
    fitted: dict[int, Efficiency] = {}  # by fold
    lines = []
    for card in sorted(members, key=lambda c: c.run_id):
        if only is not None and card.run_id != only:
            continue
        fold = fold_of[card.run_id]
        others = [c.run_id for c in members if out.learns(fold, fold_of[c.run_id])] if calibrated else []
        if calibrated and not others and out.kind != "run":
            continue  # a run this kind of leave-out does not predict (the oldest engine version, say)
        fit_key = _key("fit", *group, *(prints[run_id] for run_id in others))
        lines_key = _key("lines", fit_key, prints[card.run_id], *([f"weight {weight}"] if weight != 1 else []))
        if (mine := kept.lines(lines_key, card.run_id)) is None:
            found = samples_of(members, registry) if found is None else found
            trained = [s for s in found if s.run_id in set(others)]
            if fold not in fitted and trained and kept.efficiency(fit_key) is None:
                found_open = open_samples_of(open_results_of(members, registry)) if found_open is None else found_open
            opened = [s for s in found_open or () if s.run_id in set(others)]
            if fold not in fitted:
                fitted[fold] = _fitted(trained, opened, group[1], fit_key, kept) if trained else prior_of(group[1])
            own = [*(s for s in found if s.run_id == card.run_id), *open_results_of([card], registry)]
            efficiency = blended(prior_of(group[1]), fitted[fold], weight) if trained else fitted[fold]
            mine = _ledger_lines(card.run_id, own, efficiency, tier=1 if trained else 0)
            kept.keep(lines_key, {"lines": CONVERTER.unstructure(mine)})
        lines += mine
    return lines


def _fitted(samples: Sequence[Sample], open_samples: Sequence[OpenSample], engine: str, key: str, kept: _Kept) -> Efficiency:
    """:func:`fit` of ``samples`` and ``open_samples``, or the fit kept under ``key``."""
    if (found := kept.efficiency(key)) is None:
        found = fit(samples, prior_of(engine), engine=engine, open_samples=open_samples)
        kept.keep(key, CONVERTER.unstructure(found))
    return found


def _ledger_lines(run_id: str, results: Sequence[Sample | OpenResult], efficiency: Efficiency, *, tier: int) -> list[LedgerLine]:
    lines = []
    for sample in results:
        try:
            figures = sample.figures(efficiency)
        except ValueError:  # an open-loop run the simulator cannot finish: no prediction, never a crash
            continue
        open_loop = isinstance(sample, OpenResult)
        try:  # the interval: a closed-loop round re-timed at both ends, an open-loop run simulated at each
            ends = [sample.figures(end) for end in interval_ends(efficiency)]
            ends = list(open_interval(*ends)) if open_loop else ends
        except ValueError:  # an end the simulator cannot finish: no interval
            ends = []
        lines.append(
            LedgerLine(
                run_id=run_id,
                workload=sample.workload.name if open_loop else sample.workload,
                tier=tier,
                predicted_tps=_tps(figures, open_loop),
                measured_tps=sample.tps,
                predicted_ttft_s=figures.ttft_p50_s,
                measured_ttft_s=sample.ttft_s,
                open_loop=open_loop,
                predicted_site_tps=figures.site_tps,
                measured_site_tps=sample.site_tps,
                predicted_tps_interval=_pair(_tps(end, open_loop) for end in ends),
                predicted_ttft_interval_s=_pair(end.ttft_p50_s for end in ends),
            )
        )
    return lines


def _tps(figures: Figures, open_loop: bool) -> float | None:
    """The tokens/s the ledger judges: an open-loop run's output throughput, a closed-loop one's per user."""
    return figures.total_tps if open_loop else figures.per_user_tps


def _pair(values: Iterable[float | None]) -> tuple[float, float] | None:
    """(least, most) of an interval's two ends, or None where an end is missing."""
    found = list(values)
    return (min(found), max(found)) if len(found) == 2 and None not in found else None  # type: ignore[type-var]

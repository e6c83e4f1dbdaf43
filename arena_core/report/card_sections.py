"""The model card's detail sections, below its figures: attainment within the SLO, the
seed's request-rate sweep, a capacity search's curve, and predicted against measured. Each is a
list of lines (empty where the card has no such figures), in text or markdown as ``table_of``
lays tables out."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from arena_core.report.capacity_card import capacity_headline, capacity_knee_line, capacity_probes
from arena_core.report.formats import fmt_seconds, fmt_shown_error, fmt_tps, shown_seconds, shown_tps
from arena_core.report.sweep import capacity_rows, sweep_steps
from arena_core.results.parity import quality_difference
from arena_core.results.predictions import NO_PREDICTOR
from arena_core.types import LedgerLine, ModelCard

#: Lays out a table of cells already written as the card shows them: (rows, headers) -> text.
TableOf = Callable[[Sequence[Sequence[str]], Sequence[str]], str]


def slo_rows(card: ModelCard) -> list[tuple[str, ...]]:
    """Per workload with stored requests: SLO attainment, goodput, the error-adjusted TTFT p95,
    the queue-inclusive TTFT p50 (open loop) and the time to the first answer token (reasoning)."""
    rows = []
    for line in card.workloads:
        metrics = line.metrics
        if metrics.get("slo_attainment") is None:
            continue
        p95 = metrics.get("ttft_p95_error_adjusted_s")
        rows.append(
            (
                line.name,
                f"{metrics['slo_attainment']:.0%}",
                f"{fmt_tps(metrics.get('goodput_rps'))} req/s, {fmt_tps(metrics.get('goodput_tps'))} tok/s",
                fmt_seconds(p95) if p95 is not None else "∞ (failed requests)",
                fmt_seconds(metrics.get("ttft_queue_inclusive_p50_s")),
                fmt_seconds(metrics.get("ttfa_p50_s")),
            )
        )
    return rows


def slo_section(card: ModelCard, h2: str, table_of: TableOf) -> list[str]:
    rows = slo_rows(card)
    if not rows:
        return []
    objective = card.slo.objective
    headers = ["workload", "attainment", "goodput", "TTFT p95, failures as ∞", "TTFT p50 from the scheduled time", "first answer token p50"]
    return [f"{h2}Within the SLO ({objective})", table_of(rows, headers), ""]


def sweep_section(card: ModelCard, h2: str, table_of: TableOf) -> list[str]:
    """The seed's request-rate sweep: a row per step, then the seed's capacity and Arena's."""
    steps = sweep_steps(card)
    if not steps:
        return []
    rows = [
        (
            f"{s.rate:g}",
            f"{s.achieved:.3f}" + ("" if s.served else " (not served)") if s.achieved is not None else "—",
            f"{s.completed}/{s.sent}",
            " / ".join(fmt_seconds(v) for v in (s.ttft_p50_s, s.ttft_p95_s, s.ttft_p99_s)),
            fmt_tps(s.output_tps),
            f"{s.peak_concurrency:.0f}" if s.peak_concurrency is not None else "—",
        )
        for s in steps
    ]
    capacity = table_of(capacity_rows(steps), ["", "capacity (the seed's rule)", "capacity (Arena: served steps only)"])
    headers = ["req/s asked", "req/s achieved", "completed/sent", "TTFT p50 / p95 / p99", "output tok/s", "peak concurrency"]
    return [f"{h2}Request-rate sweep", table_of(rows, headers), "", capacity, ""]


def capacity_section(card: ModelCard, h2: str, table_of: TableOf) -> list[str]:
    """A capacity search's headline and curve: one row per probe, by load (for a rate, how much
    of it the server kept up with)."""
    probes = capacity_probes(card)
    if not probes:
        return []
    rate = probes[0].unit == "rate"
    rows = [
        (
            f"{p.load:g}",
            f"{p.attainment:.0%}" if p.attainment is not None else "—",
            *([f"{p.served:.0%}" if p.served is not None else "—"] if rate else []),
            "pass" if p.passed else "fail",
            fmt_seconds(p.ttft_p50_s),
            fmt_seconds(p.ttft_p95_s) if p.ttft_p95_s is not None else "∞",
            fmt_tps(p.per_user_tps),
            fmt_tps(p.total_tps),
        )
        for p in probes
    ]
    headers = ["req/s" if rate else probes[0].unit, "within the SLO", *(["kept up"] if rate else []), "", "TTFT p50", "TTFT p95 (failures ∞)"]
    headers += ["tok/s per user", "tok/s total"]
    knee = [line] if (line := capacity_knee_line(card)) else []
    return [f"{h2}{capacity_headline(card)}", *knee, table_of(rows, headers), *under_load_lines(card, table_of), ""]


def under_load_lines(card: ModelCard, table_of: TableOf) -> list[str]:
    """Quality under load: each suite asked one item at a time and at the capacity found, with
    the difference and its interval (Newcombe, as ``compare``), "not told apart" where it holds 0."""
    rows = []
    for loaded in card.quality_under_load:
        alone = next((m for m in card.measured_quality if m.suite == loaded.suite), None)
        if alone is None:
            continue
        difference, low, high = quality_difference(loaded, alone)
        apart = "worse under load" if high < 0 else "better under load" if low > 0 else "not told apart"
        shown = [f"{m.value:.1f} [{m.low:.1f}–{m.high:.1f}]" for m in (alone, loaded)]
        rows.append((loaded.benchmark or loaded.suite, *shown, f"{difference:+.1f} [{low:+.1f}, {high:+.1f}]", apart))
    if not rows:
        return []
    headers = ["quality under load", "1 at once", f"{card.quality_load} at once", "difference, 95 %", ""]
    return ["", table_of(rows, headers)]


def prediction_rows(predictions: Sequence[LedgerLine]) -> list[tuple[str, ...]]:
    """Predicted against measured per workload: the prediction made without this run, each error
    recomputable from the two figures beside it."""
    return [
        (
            line.workload,
            fmt_tps(line.predicted_tps),
            fmt_tps(line.measured_tps),
            fmt_shown_error(line.predicted_tps, line.measured_tps, shown_tps),
            fmt_seconds(line.predicted_ttft_s),
            fmt_seconds(line.measured_ttft_s),
            fmt_shown_error(line.predicted_ttft_s, line.measured_ttft_s, shown_seconds),
            fmt_tps(line.predicted_site_tps),
            fmt_tps(line.measured_site_tps),
            fmt_shown_error(line.predicted_site_tps, line.measured_site_tps, shown_tps),
            f"tier {line.tier}",
        )
        for line in predictions
    ]


PREDICTION_HEADERS = ["workload", "tok/s predicted", "measured", "error", "TTFT predicted", "measured", "error", "G predicted", "measured", "error", ""]
#: What the tokens/s of the table are where open-loop workloads are in it.
PREDICTION_NOTE = "tok/s: one user's decode speed for a closed-loop workload, the output throughput for an open-loop one"
#: What the TTFT compared is, always under the table (as the predictor and the ledger take it).
TTFT_NOTE = "TTFT: the mean over a closed-loop workload's requests (as llama-benchy gives it), the p50 of an open-loop one's"
#: What G is, always under the table.
G_NOTE = "G: the seed site's throughput (closed loop: a round's total decode tok/s; open loop: total tok/s ÷ peak concurrent requests)"


def prediction_section(predictions: Sequence[LedgerLine] | None, h2: str, table_of: TableOf, uncovered: str = "") -> list[str]:
    """Predicted against measured; where there is nothing, why (no predictor, a run not covered)."""
    if predictions is None or (not predictions and uncovered):
        return [f"{h2}Predicted vs measured", uncovered or NO_PREDICTOR, ""]
    if not predictions:
        return []
    title = f"{h2}Predicted vs measured (the default predictor, fitted without this run: arena predict)"
    note = [PREDICTION_NOTE] if any(line.open_loop for line in predictions) else []
    rows = prediction_rows(predictions)
    tiers = sorted({row[10] for row in rows})
    paired = [(row[0], *(f"{row[i]} → {row[i + 1]} ({row[i + 2]})" for i in (1, 4, 7)), *(row[10:] if len(tiers) > 1 else ())) for row in rows]
    headers = ["workload", "tok/s", "TTFT", "G", *([""] if len(tiers) > 1 else [])]
    how = f"Each: predicted → measured (absolute error){'; ' + tiers[0] if len(tiers) == 1 else ''}."
    return [title, table_of(paired, headers), how, *note, TTFT_NOTE, G_NOTE, ""]

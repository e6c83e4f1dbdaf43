"""``arena compare A B``: two stored runs side by side, each figure marked better or worse."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.cli.params import OUTPUT, custom_profiles, results_dir
from arena_core.hookspecs import hookimpl
from arena_core.report import render_table
from arena_core.report.capacity_card import capacity_found, capacity_probes
from arena_core.report.formats import fmt_seconds_within, fmt_tps, fmt_tps_within, shown_seconds_within, shown_tps
from arena_core.report.seed_figures import throughput_headline
from arena_core.report.text import wrap_text
from arena_core.results.cards import load_card, load_cards, scores_for
from arena_core.results.findings import ttft_is_mean
from arena_core.results.parity import HEAD_TOKENS, output_parity, quality_difference
from arena_core.run.store import find_run
from arena_core.types import CardWorkload, ModelCard

#: Which way is better for a row: more (throughput, score, quality) or less (latency, memory).
HIGHER, LOWER = 1, -1


#: A figure and its 95 % interval (None where it has none).
Within = tuple[float | None, float | None, float | None]


def verdict(a: float | None, b: float | None, better: int) -> str:
    """ "1.30x, A better": the ratio A / B, and which run it favours; "same" within 1 %."""
    if a is None or b is None:
        return "—"
    if not b:
        return "—" if not a else ("A better" if better == HIGHER else "B better")
    ratio = a / b
    if abs(ratio - 1) < 0.01:
        return f"{ratio:.2f}x, same"
    return f"{ratio:.2f}x, " + ("A better" if (ratio > 1) == (better == HIGHER) else "B better")


def verdict_within(a: Within, b: Within, better: int) -> str:
    """:func:`verdict` where both figures have 95 % intervals that leave each other out; where
    they overlap, "no difference" (the runs cannot tell them apart); where either has none (an
    imported card's), by the ratio alone, as the table's note says."""
    (value_a, *interval_a), (value_b, *interval_b) = a, b
    if None in (*interval_a, *interval_b) or value_a is None or value_b is None:
        return verdict(value_a, value_b, better)
    (low_a, high_a), (low_b, high_b) = interval_a, interval_b
    if low_a <= high_b and low_b <= high_a:  # type: ignore[operator]
        return f"{value_a / value_b:.2f}x, no difference" if value_b else "no difference"
    return verdict(value_a, value_b, better)


class Rows:
    """The compare table: a label, A's and B's figures as shown, and the verdict."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str]] = []

    def add(self, label: str, a: float | None, b: float | None, shown: Callable[[float | None], str], better: int) -> None:
        if a is None and b is None:
            return
        self.rows.append((label, shown(a), shown(b), verdict(a, b, better)))

    def add_within(
        self,
        label: str,
        a: Within,
        b: Within,
        shown: Callable[[float | None, float | None, float | None], str],
        written: Callable[[Within], Within],
        better: int,
    ) -> None:
        """A row of figures with their 95 % intervals, told apart only where the intervals, as
        the row writes them (``written``), separate: the verdict is one a reader can check."""
        if a[0] is None and b[0] is None:
            return
        self.rows.append((label, shown(*a), shown(*b), verdict_within(written(a), written(b), better)))


def _written_tps(figure: Within) -> Within:
    return tuple(None if v is None else shown_tps(v) for v in figure)  # type: ignore[return-value]


def _written_seconds(figure: Within) -> Within:
    value, low, high = figure
    return shown_seconds_within(value, low, high) if value is not None and low is not None and high is not None else figure


def _gb(value: float | None) -> str:
    return f"{value:.1f} GB" if value is not None else "—"


def _one(value: float | None) -> str:
    return f"{value:.1f}" if value is not None else "—"


def _rate(value: float | None) -> str:
    return f"{value:.2f} req/s" if value is not None else "—"


@click.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@OUTPUT
@click.option("--profile", default="aggregate", show_default=True, help="The score shown: this profile of the default scorer, as each run's card shows it.")
@click.pass_obj
def compare_command(app: CliApp, run_a: str, run_b: str, output: Path | None, profile: str) -> None:
    """Two stored runs side by side: score, quality, throughput G, memory, benches, then per
    workload tokens/s, TTFT p50 and the request rate served, each with the ratio A / B and which
    run it favours (more is better for throughput, less for latency and memory); a figure with
    a 95 % interval is told apart only where the intervals leave each other out ("no
    difference" where they overlap). Each run's
    score is its own card's: scored among the stored runs its card is scored among, not between
    the two. A run is named by its id or a unique start or end of it."""
    store = results_dir(app, output)
    a, b = (load_card(store, run, app.hooks.registry) for run in (run_a, run_b))
    others, _ = load_cards(store, app.hooks.registry)
    scored = [scores_for(card, app.hooks, custom_profiles(app), others) for card in (a, b)]
    if profile not in scored[0]:
        raise click.BadParameter(f"{profile!r} is not a profile of the default scorer (it has {', '.join(scored[0])})", param_hint="--profile")
    sa, sb = (scores[profile] for scores in scored)
    table = Rows()
    table.add(f"score ({profile})", sa.value, sb.value, _one, HIGHER)
    table.add("Q, quality", sa.quality, sb.quality, _one, HIGHER)
    table.add("G, tok/s", throughput_headline(a)[0], throughput_headline(b)[0], fmt_tps, HIGHER)
    if a.model_memory_gb is not None or b.model_memory_gb is not None:  # "estimated" on the figure that is, not the row
        shown = (_gb(card.model_memory_gb) + (" (estimated)" if card.model_memory_estimated and card.model_memory_gb is not None else "") for card in (a, b))
        table.rows.append(("memory", *shown, verdict(a.model_memory_gb, b.model_memory_gb, LOWER)))  # type: ignore[arg-type]
    table.add(f"benches of {len(a.expected)}", *(float(len(card.measured_benches)) for card in (a, b)), lambda v: f"{v:.0f}", HIGHER)
    _quality_rows(table, a, b)
    _parity_rows(table, store, a, b)
    found = [capacity_found(capacity_probes(card))[0] for card in (a, b)]
    if any(found):  # a capacity search: its answer, then its probes with the other workloads
        table.rows.append(("capacity", *(best.label if best else "—" for best in found), verdict(*(best.load if best else None for best in found), HIGHER)))  # type: ignore[misc]
    extra = [line.name for card in (a, b) for line in card.workloads if line.name not in a.expected]
    for name in (*a.expected, *dict.fromkeys(extra)):
        la, lb = a.workload(name), b.workload(name)
        tps = [(line.tokens_per_second, line.tokens_per_second_low, line.tokens_per_second_high) if line else (None, None, None) for line in (la, lb)]
        table.add_within(f"{name} tok/s", *tps, fmt_tps_within, _written_tps, HIGHER)
        ttft = [(line.ttft_p50_s, line.ttft_p50_low_s, line.ttft_p50_high_s) if line else (None, None, None) for line in (la, lb)]
        table.add_within(f"{name} {_ttft_kind((a, la), (b, lb))}", *ttft, fmt_seconds_within, _written_seconds, LOWER)
        table.add(f"{name} served", *(line.metrics.get("request_throughput") if line else None for line in (la, lb)), _rate, HIGHER)
    echo(wrap_text(f"A: {a.model_title} on {a.hardware} ({a.run_id})", hanging="   "))
    echo(wrap_text(f"B: {b.model_title} on {b.hardware} ({b.run_id})", hanging="   "))
    echo(render_table(["", "A", "B", "A / B"], table.rows))
    echo(wrap_text(f"Score: {sa.version}, as each run's card shows it. More is better for scores, quality and throughput; less for TTFT and memory."))
    echo(
        wrap_text(
            "A figure with its 95 % interval in brackets is better or worse only where the two intervals leave each other out; where they overlap the runs cannot tell it apart: no difference. One without an interval is judged by its ratio alone."
        )
    )
    if any(row[0].endswith("output parity (temperature 0)") for row in table.rows):
        echo(
            wrap_text(
                f"Output parity: of the items both runs answered, how many answers share their first {HEAD_TOKENS} tokens (as each server tokenized them); B's column says where the first that differ part."
            )
        )


def _quality_rows(table: Rows, a: ModelCard, b: ModelCard) -> None:
    """Each quality suite measured on either run, and the published figure of its benchmark."""
    for suite in dict.fromkeys(m.suite for card in (a, b) for m in card.measured_quality):
        ma, mb = (next((m for m in card.measured_quality if m.suite == suite), None) for card in (a, b))
        benchmark = (ma or mb).benchmark if (ma or mb) else ""  # type: ignore[union-attr]
        label = f"{benchmark or suite} (measured)"
        shown = [f"{m.value:.1f} [{m.low:.1f}–{m.high:.1f}]" if m else "—" for m in (ma, mb)]
        if ma and mb:  # better or worse only where the difference's interval leaves out 0
            difference, low, high = quality_difference(ma, mb)
            apart = "A better" if low > 0 else "B better" if high < 0 else "not told apart (the interval holds 0)"
            table.rows.append((label, *shown, apart))
            table.rows.append((f"{benchmark or suite}, A − B", f"{difference:+.1f} points", f"95 % [{low:+.1f}, {high:+.1f}]", apart))
        else:
            table.rows.append((label, *shown, "—"))
        if benchmark:
            table.add(f"{benchmark} (published)", a.published(benchmark), b.published(benchmark), _one, HIGHER)


def _parity_rows(table: Rows, store: Path, a: ModelCard, b: ModelCard) -> None:
    """Output parity at temperature 0 of each quality suite both runs measured."""
    suites = [m.suite for m in a.measured_quality if any(n.suite == m.suite for n in b.measured_quality)]
    if not suites:
        return
    folders = [find_run(store, card.run_id, "arena compare") for card in (a, b)]
    for suite in suites:
        parity = output_parity(*folders, suite)
        if parity is not None:
            table.rows.append(
                (
                    f"{suite} output parity (temperature 0)",
                    f"{parity.agree} of {parity.compared}",
                    parity.first_difference or "—",
                    "same" if parity.agree == parity.compared else "differ",
                )
            )


def _ttft_kind(*runs: tuple[ModelCard, CardWorkload | None]) -> str:
    """What a workload's TTFT row compares: "TTFT p50", "TTFT mean" where each figure is a mean
    (an imported closed-loop one: :func:`ttft_is_mean`), and which is which where they differ."""
    kinds = ["mean" if line is not None and ttft_is_mean(card, line) else "p50" for card, line in runs]
    return f"TTFT {kinds[0]}" if kinds[0] == kinds[1] else f"TTFT (A {kinds[0]}, B {kinds[1]})"


@hookimpl
def arena_register_commands(cli: click.Group) -> None:
    cli.add_command(compare_command)

"""``arena compare A B``: two stored runs side by side with ratios."""

from __future__ import annotations

from pathlib import Path

import click

from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.cli.params import OUTPUT, custom_profiles, results_dir
from arena_core.report import render_table
from arena_core.report.capacity_card import capacity_found, capacity_probes
from arena_core.report.formats import fmt_seconds, fmt_tps
from arena_core.results.cards import load_card, load_cards, scores_for


@click.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@OUTPUT
@click.option("--profile", default="aggregate", show_default=True, help="The score shown: this profile of the default scorer, as each run's card shows it.")
@click.pass_obj
def compare_command(app: CliApp, run_a: str, run_b: str, output: Path | None, profile: str) -> None:
    """Two stored runs side by side, per workload, with the ratio A / B. Each run's score is its
    own card's: scored among the stored runs its card is scored among, not between the two."""
    store = results_dir(app, output)
    a, b = (load_card(store, run, app.hooks.registry) for run in (run_a, run_b))
    others, _ = load_cards(store, app.hooks.registry)
    scored = [scores_for(card, app.hooks, custom_profiles(app), others) for card in (a, b)]
    if profile not in scored[0]:
        raise click.BadParameter(f"{profile!r} is not a profile of the default scorer (it has {', '.join(scored[0])})", param_hint="--profile")
    sa, sb = (scores[profile] for scores in scored)

    def ratio(x: float | None, y: float | None) -> str:
        return f"{x / y:.2f}x" if x is not None and y else "—"

    rows = [(f"score ({sa.version}, {profile})", sa.value, sb.value, ratio(sa.value, sb.value))]
    for suite in dict.fromkeys(m.suite for card in (a, b) for m in card.measured_quality):
        ma, mb = (next((m for m in card.measured_quality if m.suite == suite), None) for card in (a, b))
        shown = [f"{m.value:.1f} [{m.low:.1f}–{m.high:.1f}]" if m else "—" for m in (ma, mb)]
        rows.append((f"{(ma or mb).benchmark or suite} (measured)", *shown, ratio(ma and ma.value, mb and mb.value)))  # type: ignore[union-attr]
        benchmark = (ma or mb).benchmark  # type: ignore[union-attr]
        published = [card.published(benchmark) if benchmark else None for card in (a, b)]
        if any(value is not None for value in published):
            rows.append((f"{benchmark} (published)", *(f"{v:.1f}" if v is not None else "—" for v in published), ratio(*published)))
    found = [capacity_found(capacity_probes(card))[0] for card in (a, b)]
    if any(found):  # a capacity search: its answer, then its probes with the other workloads
        rows.append(("capacity", *(best.label if best else "—" for best in found), ratio(*(best.load if best else None for best in found))))
    extra = [line.name for card in (a, b) for line in card.workloads if line.name not in a.expected]
    for name in (*a.expected, *dict.fromkeys(extra)):
        la, lb = a.workload(name), b.workload(name)
        ta, tb = (line.tokens_per_second if line else None for line in (la, lb))
        fa, fb = (line.ttft_p50_s if line else None for line in (la, lb))
        rows.append((f"{name} tok/s", fmt_tps(ta), fmt_tps(tb), ratio(ta, tb)))
        rows.append((f"{name} TTFT p50", fmt_seconds(fa), fmt_seconds(fb), ratio(fa, fb)))
    echo(f"A: {a.model_title} on {a.hardware} ({a.run_id})\nB: {b.model_title} on {b.hardware} ({b.run_id})")
    echo(render_table(["", "A", "B", "A / B"], rows))

"""``arena leaderboard``: stored runs ranked by score, ties where intervals overlap."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import click

from arena_core.cli.app import CliApp
from arena_core.cli.output import echo
from arena_core.cli.params import OUTPUT, custom_profiles, results_dir
from arena_core.errors import UnknownNameError, UsageError
from arena_core.hookspecs import hookimpl
from arena_core.registry import Registry
from arena_core.report import render_json, render_table
from arena_core.report.capacity_card import capacity_and_agents, capacity_column
from arena_core.report.cost import CostLine, cost_of
from arena_core.report.text import WIDEST, wrap_text
from arena_core.results.cards import load_cards, profiles_of, score_cohort, scorer_specs
from arena_core.results.leaderboard import Row, choose, rank, row_dict
from arena_core.results.predictions import NO_PREDICTOR, ledger_of, ledger_summary
from arena_core.types import ModelCard, ScorerSpec


@click.command("leaderboard")
@OUTPUT
@click.option("--scorer", help="Rank by this scorer (default: the seed site's own score, arena-site; arena: Arena's absolute score).")
@click.option("--profile", default="aggregate", show_default=True, help="Scoring profile (arena-site: aggregate, chat, agent, batch, reasoning).")
@click.option("--hardware", help="Only runs on this hardware profile.")
@click.option("--include-scaled", is_flag=True, help="Also rank scaled runs and runs of changed workload shapes (labelled).")
@click.option("--include-invalid", is_flag=True, help="Also rank runs with invalid results (labelled).")
@click.option(
    "--quality",
    "quality_basis",
    type=click.Choice(["any", "published", "measured"]),
    default="any",
    show_default=True,
    help="The quality a score uses: published where a run has it, else measured (any); only published; only measured on the served model (tells quants of one model apart).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--wide", is_flag=True, help="More columns: the score's interval, hardware, backend, capacity, labels (the table still wraps to the terminal).")
@click.option("--prediction-error", is_flag=True, help="Also the error ledger: each result beside the default predictor's prediction made without its run.")
@click.pass_obj
def leaderboard_command(
    app: CliApp,
    output: Path | None,
    scorer: str | None,
    profile: str,
    hardware: str | None,
    include_scaled: bool,
    include_invalid: bool,
    quality_basis: str,
    as_json: bool,
    wide: bool,
    prediction_error: bool,
) -> None:
    """Rank stored runs by score. A relative score (arena-site) is computed within the runs
    shown, the cohort; runs whose score intervals overlap are shown as ties."""
    registry = app.hooks.registry
    if hardware and hardware not in registry.hardware:
        raise UnknownNameError("hardware", hardware, registry.names("hardware"), source="--hardware")
    custom = custom_profiles(app)
    spec = _scorer_of(registry, scorer, profile, custom)
    cards, problems = load_cards(results_dir(app, output), registry)
    for problem in problems:
        echo(f"warning: skipped {problem}", err=True)
    cohort = [with_quality(card, quality_basis) for card in choose(cards, hardware=hardware, include_scaled=include_scaled, include_invalid=include_invalid)]
    rows = rank(cohort, score_cohort(spec, profile, cohort, custom))
    capacity_of, agents_of = capacity_column(cards), capacity_column(cards, agents=True)
    costs = cost_of(cards, app.config.cost) if app.config.cost.given else None

    ledger_lines = ledger_of(results_dir(app, output), cohort, registry) if prediction_error else None
    ledger_rows = ledger_summary(ledger_lines or [])
    if as_json:
        board = [{**row_dict(r), "capacity": capacity_of(r.card), "agents_at_slo": agents_of(r.card), **_cost_json(costs, r.card)} for r in rows]
        names = ("workload", "metric", "results", "median_error_pct", "p90_error_pct")
        echo(render_json({"rows": board, "prediction_error": [dict(zip(names, row)) for row in ledger_rows]} if prediction_error else board))
        return
    if not rows:
        echo("No runs to rank (arena run measures one; arena import --seeds adds the published cards).")
        if problems:
            raise UsageError(f"{len(problems)} stored run(s) could not be read: {problems[0]}")
        return
    _print_board(
        rows, cards, cohort, spec, profile, capacity_and_agents(cards), costs, wide=wide, cost_terms=app.config.cost.terms() if costs is not None else ""
    )
    if prediction_error:
        _print_ledger(ledger_rows, absent=ledger_lines is None)
    if problems:  # the table above is whole for what could be read; say plainly what could not
        raise UsageError(f"{len(problems)} stored run(s) could not be read: {problems[0]}")


def _print_board(
    rows: Sequence[Row],
    cards: Sequence[ModelCard],
    cohort: Sequence[ModelCard],
    spec: ScorerSpec,
    profile: str,
    capacity_of: Callable[[ModelCard], str | None],
    costs: Callable[[ModelCard], CostLine | str] | None,
    *,
    wide: bool,
    cost_terms: str,
) -> None:
    """The ranked table, the runs not ranked and why, and one paragraph saying what the columns
    and marks mean."""
    short = short_ids([card.run_id for card in cards])
    ranked = [row for row in rows if row.rank]
    echo(
        render_table(*_ranked_table(ranked, short, capacity_of, wide=wide, relative=spec.relative, costs=costs), width=WIDEST if wide else None)
    )  # --wide: as wide as it is
    marks = [
        (mark, meaning)
        for mark, meaning in MARKS
        if any(mark in cell for cells in _ranked_table(ranked, short, capacity_of, wide=False)[1] for cell in cells[2:6])
    ]
    unranked = [row for row in rows if not row.rank]
    if unranked:
        echo(f"\nNot ranked ({len(unranked)}):")
        cells = [(row.card.model_title, ", ".join(row.labels).removeprefix("not ranked: "), short[row.card.run_id]) for row in unranked]
        echo(render_table(["model", "why", "run"], cells, whole=("run",)))
    about = f"Score: {rows[0].score.version}, {profile}. Q: quality (the mean of the published scores, else measured); {_second_part(spec.relative)[1]}"
    about += f" (the cohort: the {len(cohort)} runs shown)." if spec.relative else "."
    about += "".join(f" {mark}: {meaning}." for mark, meaning in marks)
    if costs is not None and wide:
        about += f" cost/Mtok: {cost_terms}; arena card RUN writes each sum out."
    about += " arena card RUN shows a run (its id, or a unique start or end of it)." + ("" if wide else " --wide: more columns.")
    echo("\n" + wrap_text(about))


#: The marks of a ranked row's cells, explained once under the table.
MARKS = (
    ("†", "the preset's workload was not measured: G is the mean of the others, ranked after the runs that measured it"),
    ("m", "quality measured by Arena on the served model (none published)"),
    ("*", "memory estimated from the weights' size"),
)


def _cost_json(costs: Callable[[ModelCard], CostLine | str] | None, card: ModelCard) -> dict[str, Any]:
    """A row's cost in the JSON board, where ``[cost]`` is set: the figure and its sum, or why not."""
    if costs is None:
        return {}
    line = costs(card)
    if isinstance(line, CostLine):
        return {"cost_per_million_output_tokens": line.per_million, "cost_currency": line.currency, "cost_explained": line.explained()}
    return {"cost_per_million_output_tokens": None, "cost_explained": line}


def _second_part(relative: bool) -> tuple[str, str]:
    """The score's second part, as its column is headed and what that is: of a scorer relative to
    the cohort (the seed's, as its spec declares), G as a percentage of the best run's ("G" alone
    would read as the card's tok/s); of an absolute one, its performance part P."""
    if not relative:
        return "P", "P: performance, the score's throughput and latency part (arena card RUN writes it out)"
    return "G %", "G %: throughput G as a % of the best run's"


def _ranked_table(
    rows: list[Row],
    short: Mapping[str, str],
    capacity_of: Callable[[ModelCard], str | None],
    *,
    wide: bool,
    relative: bool = True,
    costs: Callable[[ModelCard], CostLine | str] | None = None,
) -> tuple[list[str], list[tuple]]:
    """The ranked rows as a table: rank, model, score, Q, G % (or P), memory, benches, run; ``wide`` adds
    the score's interval, hardware, backend, capacity, the cost per million output tokens at
    that capacity (where ``[cost]`` is set) and labels."""
    headers = ["rank", "model", "score", "Q", _second_part(relative)[0], "memory", "benches", "run"]
    if wide:
        headers += ["interval", "hardware", "backend", "capacity", *(["cost/Mtok"] if costs else []), "labels"]
    table = []
    for row in rows:
        score = row.score
        memory = row.card.model_memory_gb
        cells = [
            f"={row.rank}" if row.tie else str(row.rank),
            row.card.model_title,
            f"{score.value:.1f}" + ("†" if score.unmeasured_focus else ""),
            f"{score.quality:.1f}" + ("m" if score.quality_source == "measured" else "") if score.quality is not None else "—",
            f"{score.performance:.1f}",
            f"{memory:.1f} GB" + ("*" if row.card.model_memory_estimated else "") if memory is not None else "—",
            row.card.benches(),
            short[row.card.run_id],
        ]
        if wide:
            interval = f"{score.low:.1f}–{score.high:.1f}" if score.low != score.high else ""
            cost = costs(row.card) if costs else None
            cells += [interval, row.card.hardware, row.card.backend, capacity_of(row.card) or "—"]
            cells += [cost.cell() if isinstance(cost, CostLine) else "—"] if costs else []
            cells += [", ".join(row.labels)]
        table.append(tuple(cells))
    return headers, table


def short_ids(run_ids: Sequence[str]) -> dict[str, str]:
    """Each run id as short as ``arena card`` takes it: its random end where no other of
    ``run_ids`` ends so, else the whole id."""
    return {run_id: tail if (tail := run_id.rsplit("-", 1)[-1]) and sum(other.endswith(tail) for other in run_ids) == 1 else run_id for run_id in run_ids}


def with_quality(card: ModelCard, basis: str) -> ModelCard:
    """``card`` with only the quality ``basis`` admits: "measured" drops the published scores,
    "published" the measured ones, "any" keeps both (a score uses published first)."""
    if basis == "measured":
        return attrs.evolve(card, quality=())
    if basis == "published":
        return attrs.evolve(card, measured_quality=())
    return card


def _scorer_of(registry: Registry, scorer: str | None, profile: str, custom: Mapping[str, Any]) -> ScorerSpec:
    """The scorer named (default: the first), checked to have ``profile``; a one-line error
    names the scorer that has it otherwise."""
    specs = {spec.name: spec for spec in scorer_specs(registry)}
    spec = specs.get(scorer) if scorer else next(iter(specs.values()))
    if spec is None:
        raise UnknownNameError("scorer", str(scorer), specs, source="--scorer")
    if profile not in profiles_of(spec, custom):
        owners = [name for name, other in specs.items() if profile in profiles_of(other, custom)]
        hint = f"; it is a profile of {owners[0]}: add --scorer {owners[0]}" if owners else ""
        raise UsageError(f"--profile: {spec.name} has no profile {profile!r} (its profiles: {', '.join(profiles_of(spec, custom))}){hint}")
    return spec


def _print_ledger(rows: list[tuple[str, str, int, float, float]], *, absent: bool) -> None:
    if absent:
        echo(f"\nPrediction error: {NO_PREDICTOR}")
    elif rows:
        echo(
            "\nPrediction error (each result predicted without its own run; absolute %; output_tps: an open-loop workload's output throughput; site_tps: the seed's G):"
        )
        echo(render_table(["workload", "metric", "results", "median", "p90"], [(w, m, str(n), f"{a:.1f} %", f"{b:.1f} %") for w, m, n, a, b in rows]))


@hookimpl
def arena_register_commands(cli: click.Group) -> None:
    cli.add_command(leaderboard_command)

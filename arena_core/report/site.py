"""``arena publish DIR``: a self-contained static site -- a leaderboard page per scoring preset
(with size buckets, colour bands, a quality × throughput chart and a per-user × total throughput
chart) and one page per model card, charts as inline SVG, no script and no CDN, so it works from
``file://``.

Templates are Jinja2 with autoescape on: every name and text a plugin supplies is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from arena_core import __version__
from arena_core.registry import Registry
from arena_core.report.capacity_card import capacity_column, capacity_headline, capacity_probes
from arena_core.report.charts import bar_chart, bubble_chart
from arena_core.report.formats import fmt_score, fmt_tps
from arena_core.report.model_card import (
    G_NOTE,
    PREDICTION_HEADERS,
    PREDICTION_NOTE,
    commands_of,
    decode_totals,
    headline_label,
    headline_tps,
    legend_rows,
    memory_rows,
    model_rows,
    platform_rows,
    prediction_rows,
    quality_rows,
    workload_rows,
)
from arena_core.report.seed_figures import seed_rows, throughput_headline
from arena_core.results.leaderboard import Row, rank, row_dict
from arena_core.results.predictions import NO_PREDICTOR, ledger_summary, why_not_predicted
from arena_core.types import LedgerLine, ModelCard, Score


def environment() -> Environment:
    return Environment(
        loader=PackageLoader("arena_core", "report/templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
    )


def _integrity(run_id: str, verified: Mapping[str, str]) -> str:
    return verified.get(run_id, "not checked")


def _leaderboard_rows(rows: Sequence[Row], verified: Mapping[str, str], capacity_of: Callable[[ModelCard], str | None]) -> list[dict]:
    found = []
    for row in rows:
        data = row_dict(row)
        data["capacity"] = capacity_of(row.card) or "—"
        data["integrity"] = _integrity(row.card.run_id, verified)
        data["place"] = "—" if not row.rank else (f"={row.rank}" if row.tie else str(row.rank))
        data["score"] = fmt_score(row.score) if row.score.value is not None else "—"
        measured = " (measured)" if row.score.quality_source == "measured" else ""
        data["quality"] = f"{row.score.quality:.1f}{measured}" if row.score.quality is not None else "—"
        data["performance"] = f"{row.score.performance:.1f}"
        found.append(data)
    return found


def _explained(scores: Mapping[str, Score]) -> list[str]:
    lines = []
    for name, score in scores.items():
        parts = [
            f"Q {score.quality:.1f}" + (" (measured)" if score.quality_source == "measured" else "") if score.quality is not None else "Q missing",
            f"P {score.performance:.1f}",
        ]
        parts += [f"{w} {p:.1f}" for w, p in score.per_workload.items()]
        made = f"{score.arithmetic}; " if score.arithmetic else ""
        lines.append(f"{name}: {made}" + ", ".join(parts) + (f" ({'; '.join(score.notes)})" if score.notes else ""))
    return lines


#: Size buckets by total parameters (billions), as the seed site groups its leaderboard.
SIZE_BUCKETS = (("small", 10.0), ("medium", 50.0), ("large", math.inf))


def size_bucket(card: ModelCard) -> str:
    """The card's size bucket: the publisher's own, else from its total parameters ("—" unknown)."""
    facts = card.model_facts
    if facts.size_bucket:
        return facts.size_bucket
    total = facts.params_total_b
    return next(name for name, below in SIZE_BUCKETS if total < below) if total is not None else "—"


def _band(value: float | None, low: float, high: float) -> str:
    """The seed site's colour bands: top quarter of the score range, bottom quarter, the rest."""
    if value is None:
        return ""
    share = (value - low) / (high - low) if high > low else 1.0
    return "band-top" if share > 0.75 else "band-bottom" if share < 0.25 else "band-middle"


def _preset_pages(profiles: Sequence[str], first: str) -> list[tuple[str, str]]:
    """(profile, file) of every leaderboard page; the ``first`` profile's is index.html."""
    return [(name, "index.html" if name == first else f"leaderboard-{name}.html") for name in profiles]


def _charts(cards: Sequence[ModelCard]) -> dict[str, Markup]:
    quality_points, user_points = [], []
    headline = next((card.layout.headline for card in cards if card.layout.headline), None)
    for card in cards:
        throughput, _ = throughput_headline(card)
        quality, _ = card.quality_basis()
        if throughput is not None and quality:
            quality_points.append((card.model_title, throughput, sum(quality) / len(quality), card.model_memory_gb))
        line = card.workload(headline) if headline else None
        if line is not None and line.tokens_per_second and line.metrics.get("decode_tps_total"):
            user_points.append((card.model_title, line.tokens_per_second, line.metrics["decode_tps_total"], None))
    return {
        "quality_chart": bubble_chart(
            "Quality against throughput; point area: model memory",
            quality_points,
            "throughput G, tok/s (mean over workloads)",
            "quality Q (published, else measured)",
        ),
        "users_chart": bubble_chart(f"Per-user against total throughput, {headline} at c=10", user_points, "tok/s per user", "tok/s total"),
        "users_chart_workload": headline or "",
    }


def publish(
    directory: Path,
    cards: Sequence[ModelCard],
    all_scores: Mapping[str, Mapping[str, Score]],
    found: Mapping[str, list[str]],
    *,
    profile: str = "aggregate",
    integrity: Mapping[str, str] | None = None,
    predictions: Sequence[LedgerLine] | None = (),
    registry: Registry | None = None,
) -> Path:
    """Write the site into ``directory``: a leaderboard page per profile of the default scorer
    (``profile``'s is index.html) and a page per card; ``all_scores[run_id][profile]``;
    ``integrity[run_id]`` is what ``arena verify`` said of the run (absent: not checked);
    ``predictions``: the default predictor's error ledger (:func:`arena_core.results.predictions.ledger_of`;
    ``None``: no predictor, and the pages say so); ``registry``: to say why a card has no
    prediction (a run the predictor does not cover)."""
    verified = integrity or {}
    env = environment()
    versions = sorted({score.version for scores in all_scores.values() for score in scores.values()})
    profiles = [name for name in next(iter(all_scores.values())) if "(" not in name]
    pages = _preset_pages(profiles, profile)
    common = {"version": __version__, "score_version": ", ".join(versions), "nav": [(f"Leaderboard · {name}", href) for name, href in pages]}
    (directory / "cards").mkdir(parents=True, exist_ok=True)
    charts = _charts(cards)
    capacity_of = capacity_column(cards)
    # credit where figures were published by others (the seed site's cohort is CC-BY-4.0)
    attribution = sorted({card.source for card in cards if card.source.startswith("published by")})
    for name, href in pages:
        rows = rank(cards, {c.run_id: all_scores[c.run_id][name] for c in cards})
        (directory / href).write_text(
            env.get_template("leaderboard.html.j2").render(
                **common,
                title=f"Leaderboard · {name}",
                root="",
                profile=name,
                attribution=attribution,
                ledger_rows=ledger_summary(predictions or []),
                prediction_absent=NO_PREDICTOR if predictions is None else "",
                **_board(rows, verified, capacity_of),
                **charts,
            ),
            encoding="utf-8",
        )
    for card in cards:
        mine = None if predictions is None else [line for line in predictions if line.run_id == card.run_id]
        uncovered = why_not_predicted(card, registry) if mine == [] and registry is not None else ""
        page = _card_page(env, common, card, all_scores[card.run_id], found, verified, mine, uncovered)
        (directory / "cards" / f"{card.run_id}.html").write_text(page, encoding="utf-8")
    return directory / "index.html"


def _board(rows: Sequence[Row], verified: Mapping[str, str], capacity_of: Callable[[ModelCard], str | None]) -> dict:
    """The table rows (with size bucket and colour band) and the same rows grouped by size."""
    data = _leaderboard_rows(rows, verified, capacity_of)
    values = [row.score.value for row in rows if row.rank and row.score.value is not None]
    low, high = min(values, default=0.0), max(values, default=0.0)
    for row, shown in zip(rows, data):
        shown["size"] = size_bucket(row.card)
        shown["band"] = _band(row.score.value if row.rank else None, low, high)
    buckets = {name: [d for d in data if d["size"] == name and d["place"] != "—"] for name, _ in SIZE_BUCKETS}
    return {"rows": data, "buckets": [(name, found) for name, found in buckets.items() if found]}


def _capacity(card: ModelCard) -> dict | None:
    """A capacity search's headline, its curve (share within the SLO per load) and the per-user
    against total throughput of its probes; None for a run that searched nothing."""
    probes = capacity_probes(card)
    if not probes:
        return None
    return {
        "headline": capacity_headline(card),
        "curve": bar_chart("Share of requests within the SLO, per probe", [(p.label, (p.attainment or 0.0) * 100) for p in probes], "%"),
        "pareto": bubble_chart(
            "Per-user against total throughput, per probe",
            [(p.label, p.per_user_tps, p.total_tps, None) for p in probes if p.per_user_tps is not None and p.total_tps is not None],
            "tok/s per user",
            "tok/s total",
        ),
    }


def _card_page(
    env: Environment,
    common: dict,
    card: ModelCard,
    scores: Mapping[str, Score],
    found: Mapping[str, list[str]],
    verified: Mapping[str, str],
    predictions: Sequence[LedgerLine] | None = (),
    uncovered: str = "",
) -> str:
    measured = sum(1 for name in card.expected if card.workload(name) is not None)
    lines = [(name, card.workload(name)) for name in card.expected]
    throughput, count = throughput_headline(card)
    return env.get_template("card.html.j2").render(
        **common,
        title=card.model_title,
        root="../",
        card=card,
        scores=[(n, fmt_score(s)) for n, s in scores.items()],
        headline=fmt_tps(headline_tps(card)),
        headline_label=headline_label(card),
        throughput=f"{fmt_tps(throughput)} tok/s (mean G over {count} workloads)",
        memory=f"{card.model_memory_gb:.1f} GB" if card.model_memory_gb is not None else "—",
        measured=f"{measured}/{len(card.expected)}",
        model_rows=model_rows(card),
        quality_rows=quality_rows(card),
        decode_totals=[(label, fmt_tps(total)) for label, total in decode_totals(card)],
        workload_rows=workload_rows(card),
        seed_rows=seed_rows(card),
        legend_rows=legend_rows(card),
        commands=[found for line in card.workloads for found in commands_of(line)],
        findings=found.get(card.run_id, []),
        memory_rows=memory_rows(card),
        platform_rows=platform_rows(card),
        explained=_explained(scores),
        integrity=_integrity(card.run_id, verified),
        capacity=_capacity(card),
        prediction_rows=prediction_rows(predictions or []),
        prediction_headers=PREDICTION_HEADERS,
        prediction_note="; ".join([*([PREDICTION_NOTE] if any(line.open_loop for line in predictions or []) else []), G_NOTE]),
        prediction_absent=NO_PREDICTOR if predictions is None else uncovered,
        tps_chart=bar_chart("Tokens/s per workload", [(n, line.tokens_per_second if line else None) for n, line in lines], "tok/s"),
        ttft_chart=bar_chart("TTFT p50 per workload", [(n, line.ttft_p50_s if line else None) for n, line in lines], "s", log=True),
    )

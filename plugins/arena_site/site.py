"""The ``site`` renderer (``arena publish DIR``): a self-contained static site -- a leaderboard page per scoring preset
(tabs, size buckets, colour bands, a quality × throughput chart with its Pareto frontier and a
per-user × total throughput chart) and one page per model card in the seed card's order. Charts
are SVG drawn by matplotlib at publish time (:mod:`arena_site.charts`); one small script
of the site's own (``site.js``) sorts and filters the leaderboard, and every page reads whole
without it. No CDN: the site works from ``file://``.

Templates are Jinja2 with autoescape on: every name and text a plugin supplies is escaped.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from arena_core import CardView, CostLine, ModelCard, Progress, Score, SiteView, __version__, card_kit
from arena_site.charts import bar_chart, line_chart, scatter_chart

#: The site's one script: sorting and filtering the leaderboard (every page reads whole without it).
SITE_SCRIPT = Path(__file__).parent / "templates" / "site.js"
_URL = re.compile(r"https?://[^\s<>\"'()&]+(?:&amp;[^\s<>\"'()&]+)*")


def links(text: object) -> Markup:
    """``text`` escaped, its http(s) addresses made links (opened in a new tab, no referrer)."""
    escaped = str(escape(str(text)))
    return Markup(_URL.sub(lambda m: f'<a href="{m.group()}" rel="noopener noreferrer" target="_blank">{m.group()}</a>', escaped))


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("arena_site", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters["links"] = links
    return env


def _integrity(run_id: str, verified: Mapping[str, str]) -> str:
    return verified.get(run_id, "not checked")


def _leaderboard_rows(
    rows: Sequence[card_kit.Row],
    verified: Mapping[str, str],
    capacity_of: Callable[[ModelCard], str | None],
    pages_of: Mapping[str, str],
    cost_cell: Callable[[ModelCard], str],
) -> list[dict]:
    found = []
    for row in rows:
        card, score = row.card, row.score
        data = card_kit.row_dict(row)
        headline = card.workload(card.layout.headline) if card.layout.headline else None
        data.update(
            href=f"cards/{pages_of[card.run_id]}.html",
            capacity=capacity_of(card) or "—",
            **{"cost per million output tokens": cost_cell(card)},
            integrity=_integrity(card.run_id, verified),
            place="—" if not row.rank else (f"={row.rank}" if row.tie else str(row.rank)),
            shown_score=(f"{score.value:.1f}" + ("†" if score.unmeasured_focus else "")) if score.value is not None else "—",
            interval=f"{score.low:.1f}–{score.high:.1f}" if score.value is not None and score.low != score.high else "",
            shown_quality=(f"{score.quality:.1f}" + (" m" if score.quality_source == "measured" else "")) if score.quality is not None else "—",
            shown_performance=f"{score.performance:.1f}" if score.value is not None else "—",
            memory=f"{card.model_memory_gb:.1f}" + ("*" if card.model_memory_estimated else "") if card.model_memory_gb is not None else "—",
            chat_tps=card_kit.fmt_tps(headline.tokens_per_second) if headline else "—",
            chat_ttft=card_kit.ttft_cell(card, headline) if headline else "—",
            why=", ".join(label for label in row.labels if label.startswith("not ranked")).removeprefix("not ranked: "),
        )
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


def url_part(text: str) -> str:
    """``text`` as a part of a page's file name: lower case letters, digits and single dashes (no
    dot, unlike a registered name's form, ``identity.slug``)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80] or "run"


def card_pages(cards: Sequence[ModelCard]) -> dict[str, str]:
    """Each card's page name, made from what it is (model, hardware, backend) so that it stays
    the same when the site is published again; the date and then the run id only where two
    runs would share one."""
    first = {card.run_id: url_part(f"{card.model_title} {card.hardware} {card.backend}") for card in cards}
    taken = Counter(first.values())
    dated = {
        run_id: name if taken[name] == 1 else f"{name}-{url_part(card.measured_at)}" for card in cards for run_id, name in [(card.run_id, first[card.run_id])]
    }
    taken = Counter(dated.values())
    return {run_id: name if taken[name] == 1 else f"{name}-{url_part(run_id)}" for run_id, name in dated.items()}


def _charts(cards: Sequence[ModelCard]) -> dict[str, Markup]:
    quality_points, user_points = [], []
    headline = next((card.layout.headline for card in cards if card.layout.headline), None)
    for card in cards:
        throughput, _ = card_kit.throughput_headline(card)
        quality, _ = card.quality_basis()
        if throughput is not None and quality:
            quality_points.append((card.model_title, throughput, sum(quality) / len(quality), card.model_memory_gb))
        line = card.workload(headline) if headline else None
        if line is not None and line.tokens_per_second and line.metrics.get("decode_tps_total"):
            user_points.append((card.model_title, line.tokens_per_second, line.metrics["decode_tps_total"], None))
    return {
        "quality_chart": scatter_chart(
            "Quality against throughput; point area: model memory; dotted: the Pareto frontier",
            quality_points,
            "throughput G, tok/s (mean over the workloads measured), log scale",
            "quality Q (published, else measured)",
            frontier=True,
            x_log=True,
        ),
        "users_chart": scatter_chart(
            f"Per-user against total throughput, {headline} at c=10",
            user_points,
            "tok/s per user (one of ten users)",
            "tok/s in all (ten users)",
            frontier=True,
        ),
        "users_chart_workload": headline or "",
    }


def publish(view: SiteView, directory: Path, progress: Progress | None = None) -> Path:
    """Write the site into ``directory``: a leaderboard page per profile of the default scorer
    (``view.profile``'s is index.html) and a page per card; ``progress(done, total, page)`` after
    each page written. Returns index.html."""
    cards = view.cards
    env = environment()
    first = next(iter(view.views.values()))
    versions = sorted({score.version for card_view in view.views.values() for score in card_view.scores.values()})
    profiles = [name for name in first.scores if "(" not in name]
    pages = _preset_pages(profiles, view.profile)
    common = {"version": __version__, "score_version": ", ".join(versions), "nav": pages, "current": ""}
    (directory / "cards").mkdir(parents=True, exist_ok=True)
    (directory / "site.js").write_text(SITE_SCRIPT.read_text(encoding="utf-8"), encoding="utf-8")
    step = progress or (lambda _done, _total, _what: None)
    total = len(pages) + len(cards)
    charts = _charts(cards)
    capacity_of = card_kit.capacity_and_agents(cards)

    def cost_cell(card: ModelCard) -> str:
        line = view.views[card.run_id].cost
        return line.cell() if isinstance(line, CostLine) else "—"

    pages_of = card_pages(cards)
    # credit where figures were published by others (the seed site's cohort is CC-BY-4.0)
    attribution = sorted({card.source for card in cards if card.source.startswith("published by")})
    for done, (name, href) in enumerate(pages, start=1):
        scores = {c.run_id: view.views[c.run_id].scores[name] for c in cards}
        rows = card_kit.rank(cards, scores)
        (directory / href).write_text(
            env.get_template("leaderboard.html.j2").render(
                **{**common, "current": href},
                title=f"Leaderboard · {name}",
                root="",
                profile=name,
                formula=next((score.formula for score in scores.values() if score.formula), ""),
                attribution=attribution,
                ledger_rows=card_kit.ledger_summary(view.ledger or []),
                prediction_absent=card_kit.NO_PREDICTOR if view.ledger is None else "",
                **_board(rows, view.integrity, capacity_of, pages_of, cost_cell),
                cost_terms=f"{view.cost_terms}; each card writes its sum out." if view.cost_terms else "",
                **charts,
            ),
            encoding="utf-8",
        )
        step(done, total, href)
    for done, card in enumerate(cards, start=len(pages) + 1):
        page = _card_page(env, common, view.views[card.run_id], view.integrity)
        (directory / "cards" / f"{pages_of[card.run_id]}.html").write_text(page, encoding="utf-8")
        step(done, total, f"cards/{pages_of[card.run_id]}.html")
    return directory / "index.html"


#: Columns a leaderboard drops where every row says the same (the page's header says it once,
#: unless it is "—": a cost where no ``[cost]`` was set).
CONSTANT_COLUMNS = (
    ("hardware", "hardware"),
    ("backend", "backend"),
    ("integrity", "integrity"),
    ("cost per million output tokens", "cost per million output tokens"),
)


def _board(
    rows: Sequence[card_kit.Row],
    verified: Mapping[str, str],
    capacity_of: Callable[[ModelCard], str | None],
    pages_of: Mapping[str, str],
    cost_cell: Callable[[ModelCard], str],
) -> dict:
    """The ranked rows (with size bucket and colour band), the unranked ones with their reason,
    the same ranked rows grouped by size, and the columns every row says alike."""
    data = _leaderboard_rows(rows, verified, capacity_of, pages_of, cost_cell)
    values = [row.score.value for row in rows if row.rank and row.score.value is not None]
    low, high = min(values, default=0.0), max(values, default=0.0)
    for row, shown in zip(rows, data):
        shown["size"] = size_bucket(row.card)
        shown["band"] = _band(row.score.value if row.rank else None, low, high)
    ranked = [d for d in data if d["place"] != "—"]
    buckets = {name: [d for d in ranked if d["size"] == name] for name, _ in SIZE_BUCKETS}
    constant = [(label, key) for label, key in CONSTANT_COLUMNS if data and len({d[key] for d in data}) == 1]
    alike = [(label, data[0][key]) for label, key in constant if data[0][key] != "—"]
    varying = [key for label, key in CONSTANT_COLUMNS if (label, key) not in constant]
    return {
        "rows": ranked,
        "unranked": [d for d in data if d["place"] == "—"],
        "buckets": [(name, found) for name, found in buckets.items() if found],
        "sizes": sorted({d["size"] for d in ranked}),
        "alike": alike,
        "varying": varying,
        "marks": {
            "†": any("†" in d["shown_score"] for d in ranked),
            "m": any(" m" in d["shown_quality"] for d in ranked),
            "*": any("*" in d["memory"] for d in ranked),
        },
    }


def _capacity(card: ModelCard) -> dict | None:
    """A capacity search's headline, its curve (share within the SLO per load) and the per-user
    against total throughput of its probes; None for a run that searched nothing."""
    probes = card_kit.capacity_probes(card)
    if not probes:
        return None
    unit = "requests/s offered" if probes[0].unit == "rate" else "concurrent users"
    return {
        "headline": card_kit.capacity_headline(card),
        "curve": line_chart(
            "Share of requests within the SLO, per probe",
            [(p.load, (p.attainment or 0.0) * 100) for p in probes],
            unit,
            "% of requests within the SLO",
            target=(card.slo.target * 100, f"target {card.slo.target:.0%}"),
        ),
        "pareto": scatter_chart(
            "Per-user against total throughput, per probe",
            [(p.label, p.per_user_tps, p.total_tps, None) for p in probes if p.per_user_tps is not None and p.total_tps is not None],
            "tok/s per user",
            "tok/s in all",
            frontier=True,
        ),
    }


def _card_charts(card: ModelCard) -> dict[str, Markup]:
    """A card's three charts, one kind of figure on each axis: one user's decode speed (closed
    loop), throughput in all (every workload), and TTFT on a log axis with the SLO's limit."""
    lines = [(name, card.workload(name)) for name in card.expected]
    closed = [(name, line.tokens_per_second if line else None) for name, line in lines if line is None or not line.open_loop]
    totals = [(name, (line.metrics.get("total_tps") if line.open_loop else line.metrics.get("decode_tps_total")) if line else None) for name, line in lines]
    limit = (card.slo.ttft_s, f"SLO: TTFT ≤ {card.slo.ttft_s:g} s") if card.slo.ttft_s else None
    return {
        "per_user_chart": bar_chart("Decode tok/s of one user, closed-loop workloads (c=10)", closed, "tok/s per user"),
        "total_chart": bar_chart("Throughput in all, every workload (closed loop: decode at c=10; open loop: output and input)", totals, "tok/s in all"),
        "ttft_chart": bar_chart(
            "Time to first token, p50, per workload"
            + (" (closed loop: the mean, as the source gave it)" if any(line and card_kit.ttft_is_mean(card, line) for _, line in lines) else ""),
            [(n, line.ttft_p50_s if line else None) for n, line in lines],
            "s",
            log=True,
            limit=limit,
        ),
    }


def _card_page(env: Environment, common: dict, view: CardView, verified: Mapping[str, str]) -> str:
    """A card page in the seed card's order: the model and four big figures, a two-line summary,
    quality, decode throughput at c=10, a block per workload with its command, findings, charts,
    then the details."""
    card, scores, predictions = view.card, view.scores, view.predictions
    return env.get_template("card.html.j2").render(
        **common,
        title=card.model_title,
        root="../",
        card=card,
        facts=" · ".join(value for _, value in card_kit.model_rows(card)[:4]),
        figures=card_kit.big_figures(card, scores),
        time_line=card_kit.time_line(card),
        quality_heading=card_kit.quality_heading(card),
        memory_heading=card_kit.memory_heading(card),
        summary=card_kit.summary_lines(card, list(view.findings)),
        scores=[(n, card_kit.fmt_score(s)) for n, s in scores.items()],
        headline=card_kit.fmt_tps(card_kit.headline_tps(card)),
        headline_label=card_kit.headline_label(card),
        model_rows=card_kit.model_rows(card),
        quality_rows=card_kit.quality_rows(card),
        decode_totals=[(label, card_kit.fmt_tps(total)) for label, total in card_kit.decode_totals(card)],
        blocks=card_kit.workload_blocks(card),
        turn_columns=card_kit.TURN_COLUMNS,
        workload_columns=card_kit.WORKLOAD_COLUMNS,
        workload_note=card_kit.WORKLOAD_NOTE,
        precision_verdict=card_kit.precision_verdict(card),
        workload_rows=card_kit.workload_rows(card),
        seed_rows=card_kit.seed_rows(card),
        findings=list(view.findings),
        memory_rows=card_kit.memory_rows(card) + card_kit.cost_rows(view.cost),
        platform_rows=card_kit.platform_rows(card),
        explained=_explained(scores),
        integrity=_integrity(card.run_id, verified),
        capacity=_capacity(card),
        prediction_rows=card_kit.prediction_rows(predictions or []),
        prediction_headers=card_kit.PREDICTION_HEADERS,
        prediction_note="; ".join(
            [*([card_kit.PREDICTION_NOTE] if any(line.open_loop for line in predictions or []) else []), card_kit.TTFT_NOTE, card_kit.G_NOTE]
        ),
        prediction_absent=card_kit.NO_PREDICTOR if predictions is None else view.not_predicted,
        **_card_charts(card),
    )

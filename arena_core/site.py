"""``arena publish DIR``: a self-contained static site -- a leaderboard page and one page per
model card, charts as inline SVG, no script and no CDN, so it works from ``file://``.

Templates are Jinja2 with autoescape on: every name and text a plugin supplies is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from arena_core import __version__
from arena_core.leaderboard import Row, rank, row_dict
from arena_core.report.charts import bar_chart, scatter
from arena_core.report.formats import fmt_score, fmt_tps
from arena_core.report.model_card import headline_label, headline_tps, memory_rows, platform_rows, workload_rows
from arena_core.types import ModelCard, Score


def environment() -> Environment:
    return Environment(
        loader=PackageLoader("arena_core", "report/templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
    )


def _integrity(run_id: str, verified: Mapping[str, str]) -> str:
    return verified.get(run_id, "not checked")


def _leaderboard_rows(rows: Sequence[Row], verified: Mapping[str, str]) -> list[dict]:
    found = []
    for row in rows:
        data = row_dict(row)
        data["integrity"] = _integrity(row.card.run_id, verified)
        data["place"] = "—" if not row.rank else (f"={row.rank}" if row.tie else str(row.rank))
        data["score"] = fmt_score(row.score) if row.score.value is not None else "—"
        data["quality"] = f"{row.score.quality:.1f}" if row.score.quality is not None else "—"
        data["performance"] = f"{row.score.performance:.1f}"
        found.append(data)
    return found


def _explained(scores: Mapping[str, Score]) -> list[str]:
    lines = []
    for name, score in scores.items():
        parts = [f"Q {score.quality:.1f}" if score.quality is not None else "Q missing", f"P {score.performance:.1f}"]
        parts += [f"{w} {p:.1f}" for w, p in score.per_workload.items()]
        lines.append(f"{name}: " + ", ".join(parts) + (f" ({'; '.join(score.notes)})" if score.notes else ""))
    return lines


def publish(
    directory: Path,
    cards: Sequence[ModelCard],
    all_scores: Mapping[str, Mapping[str, Score]],
    found: Mapping[str, list[str]],
    *,
    profile: str = "aggregate",
    integrity: Mapping[str, str] | None = None,
) -> Path:
    """Write the site into ``directory``; ``all_scores[run_id][profile]``; ``integrity[run_id]``
    is what ``arena verify`` said of the run (absent: not checked). Returns index.html."""
    verified = integrity or {}
    env = environment()
    versions = sorted({score.version for scores in all_scores.values() for score in scores.values()})
    common = {"version": __version__, "score_version": ", ".join(versions)}
    (directory / "cards").mkdir(parents=True, exist_ok=True)
    rows = rank(cards, {c.run_id: all_scores[c.run_id][profile] for c in cards})
    points = [
        (c.model_title, line.ttft_p50_s, line.tokens_per_second)
        for c in cards
        if (line := c.workload("chat")) is not None and line.ttft_p50_s and line.tokens_per_second
    ]
    index = directory / "index.html"
    index.write_text(
        env.get_template("leaderboard.html.j2").render(
            **common,
            title="Leaderboard",
            root="",
            profile=profile,
            rows=_leaderboard_rows(rows, verified),
            scatter=scatter("Tokens/s against TTFT p50, chat workload", points, "TTFT p50, s", "tokens/s per user"),
        ),
        encoding="utf-8",
    )
    for card in cards:
        scores = all_scores[card.run_id]
        measured = sum(1 for name in card.expected if card.workload(name) is not None)
        lines = [(name, card.workload(name)) for name in card.expected]
        page = env.get_template("card.html.j2").render(
            **common,
            title=card.model_title,
            root="../",
            card=card,
            scores=[(n, fmt_score(s)) for n, s in scores.items()],
            headline=fmt_tps(headline_tps(card)),
            headline_label=headline_label(card),
            memory=f"{card.model_memory_gb:.1f} GB" if card.model_memory_gb is not None else "—",
            measured=f"{measured}/{len(card.expected)}",
            workload_rows=workload_rows(card),
            findings=found.get(card.run_id, []),
            memory_rows=memory_rows(card),
            platform_rows=platform_rows(card),
            explained=_explained(scores),
            integrity=_integrity(card.run_id, verified),
            tps_chart=bar_chart("Tokens/s per workload", [(n, line.tokens_per_second if line else None) for n, line in lines], "tok/s"),
            ttft_chart=bar_chart("TTFT p50 per workload", [(n, line.ttft_p50_s if line else None) for n, line in lines], "s", log=True),
        )
        (directory / "cards" / f"{card.run_id}.html").write_text(page, encoding="utf-8")
    return index

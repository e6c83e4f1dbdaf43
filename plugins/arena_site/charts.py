"""The site's charts, drawn by matplotlib as SVG when the site is published and put inline in the
page: axes with ticks and units, log scales where latencies span decades, the SLO's line.

Why matplotlib: it is the most widely used and maintained plotting library in Python, it draws
ticked linear and log axes itself, and its SVG needs no script, font or network in the page --
a published site works from ``file://`` with its own files alone (a Vega-Lite or Observable Plot
page would carry a JavaScript bundle and draw only where scripts run). Text stays text
(``svg.fonttype: none``) so it is searchable and takes the page's font; math parsing is off so a
model named with ``$`` is shown as written; matplotlib escapes every text it writes into the SVG.
The SVG keeps only its viewBox, so the page's CSS scales it to its box (phones included); every
text is drawn at :data:`FONT_PX` on a figure :data:`WIDTH_IN` wide, so that on a 420 px phone,
where the chart is drawn about 0.9 times its size, no text is under 11 px
(``tests/test_site.py::test_site_in_headless_chromium`` measures it). A scatter's points are
numbered and named in a list under it, in the page's own text.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")  # no display: charts are files

from markupsafe import Markup, escape  # noqa: E402
from matplotlib import pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

#: Every text of a chart, in the SVG's units (the page scales them with the chart), and the
#: figures' width in inches (72 units each): see the module's docstring.
FONT_PX = 12.5
WIDTH_IN = 5.6
#: How the charts look: text as text, no math parsing, the ids in the SVG the same on every run.
STYLE = {
    "svg.fonttype": "none",
    "text.parse_math": False,
    "svg.hashsalt": "arena",
    "font.family": "sans-serif",
    "font.size": FONT_PX,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e3e6ee",
    "grid.linewidth": 0.8,
    "axes.axisbelow": True,
}
BAR, POINT, LINE, SLO = "#3b6fd8", "#d8573b", "#1d2330", "#b00020"


def _svg(figure: Figure, title: str) -> Markup:
    """The figure as inline SVG: its title for screen readers, its viewBox kept and its fixed
    width and height dropped (CSS sizes it), the XML prologue left out."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(figure)
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', r"<svg\1", text, count=1)
    text = text.replace("<svg", f'<svg class="chart" role="img" aria-label="{escape(title)}"', 1)
    head_end = text.index(">") + 1
    return Markup(f"{text[:head_end]}<title>{escape(title)}</title>{text[head_end:]}")


def _log_axis(axis: matplotlib.axis.Axis) -> None:
    """A log axis ticked at 1, 2 and 5 times each power of ten, written as plain numbers
    (matplotlib's own labels are math text, which is off here)."""
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda value, _: _number(value)))
    axis.set_minor_formatter(NullFormatter())


def _figure(width: float, height: float) -> tuple[Figure, plt.Axes]:
    with plt.rc_context(STYLE):
        figure = plt.figure(figsize=(width, height))
        axes = figure.add_subplot()
    return figure, axes


def no_data(title: str) -> Markup:
    return Markup(f'<p class="muted chart-empty" role="img" aria-label="{escape(title)}">no data for this chart</p>')


def _positive(value: float | None) -> float | None:
    return value if value is not None and 0 < value < math.inf else None


def bar_chart(title: str, rows: Sequence[tuple[str, float | None]], unit: str, *, log: bool = False, limit: tuple[float, str] | None = None) -> Markup:
    """Horizontal bars, one per row, each with its value; a row without one says "not measured".
    ``log``: a ticked log axis (latencies that span decades); ``limit``: a line at (value, label),
    an SLO's."""
    rows = [(name, _positive(value)) for name, value in rows]
    values = [v for _, v in rows if v is not None]
    if not values:
        return no_data(title)
    with plt.rc_context(STYLE):
        figure, axes = _figure(WIDTH_IN, 0.42 * len(rows) + 1.0)
        names = [name for name, _ in rows][::-1]
        shown = [value or 0.0 for _, value in rows][::-1]
        axes.barh(names, shown, color=BAR, height=0.6)
        if log:
            axes.set_xscale("log")
            _log_axis(axes.xaxis)
            axes.set_xlim(min(values) / 2, max(values) * 3)
        else:
            axes.set_xlim(0, max(values) * 1.18)
        for y, value in enumerate(shown):
            axes.annotate(
                (f"{_number(value)} {unit}" if log else _number(value)) if value else "not measured",
                (value or axes.get_xlim()[0], y),
                xytext=(4, 0),
                textcoords="offset points",
                va="center",
                fontsize=FONT_PX,
                color="#667" if not value else LINE,
            )
        if limit is not None:
            axes.axvline(limit[0], color=SLO, linestyle="--", linewidth=1.2)
            axes.annotate(
                limit[1],
                (limit[0], len(rows) - 0.5),
                xytext=(3, 0),
                textcoords="offset points",
                color=SLO,
                fontsize=FONT_PX,
                va="bottom",
                annotation_clip=False,
            )
        axes.set_xlabel(f"{unit}, log scale" if log else unit)
        axes.grid(axis="y", visible=False)
        return _svg(figure, title)


def _number(value: float) -> str:
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """The indices of the points no other point beats on both axes (more is better on each),
    by rising x."""
    order = sorted(range(len(points)), key=lambda i: (-points[i][0], -points[i][1]))
    front, best_y = [], -math.inf
    for i in order:
        if points[i][1] > best_y:
            front.append(i)
            best_y = points[i][1]
    return sorted(front, key=lambda i: points[i][0])


def spread_labels(wanted: Sequence[float], gap: float) -> list[float]:
    """Label heights as near to ``wanted`` as they can be while at least ``gap`` apart (in order
    of height, pushed up, then the whole column pulled back down as far as it overshot)."""
    order = sorted(range(len(wanted)), key=lambda i: wanted[i])
    placed = [0.0] * len(wanted)
    last = -math.inf
    for i in order:
        placed[i] = max(wanted[i], last + gap)
        last = placed[i]
    overshoot = max((placed[i] - wanted[i] for i in order), default=0.0) / 2
    return [y - overshoot for y in placed]


def scatter_chart(
    title: str, points: Sequence[tuple[str, float, float, float | None]], x_label: str, y_label: str, *, frontier: bool = False, x_log: bool = False
) -> Markup:
    """Points (name, x, y, size) with ticked axes; a point's area grows with its size (model
    memory; say so in ``title``) where one is given. Each point's number stands in a column to
    the right of the plot, joined to it by a thin line and never on top of another; the names
    follow the chart as a numbered list (text at the page's size, whatever the screen).
    ``frontier``: the Pareto frontier (more is better on both axes) drawn as a step line."""
    points = [p for p in points if _positive(p[1]) is not None and p[2] is not None and 0 <= p[2] < math.inf]
    if not points:
        return no_data(title)
    with plt.rc_context(STYLE):
        figure, axes = _figure(WIDTH_IN, max(3.6, 0.26 * len(points) + 1.2))
        sizes = [p[3] for p in points if p[3]]
        biggest = max(sizes, default=1.0)
        areas = [30 + 400 * (p[3] / biggest) if p[3] else 36 for p in points]
        axes.scatter([p[1] for p in points], [p[2] for p in points], s=areas, color=POINT, alpha=0.55, edgecolors="white", linewidths=0.8, zorder=3)
        if x_log:
            axes.set_xscale("log")
            _log_axis(axes.xaxis)
        else:
            axes.set_xlim(left=0)
        axes.margins(x=0.08, y=0.08)
        axes.set_ylim(min(0.0, min(p[2] for p in points)), max(p[2] for p in points) * 1.08 or 1.0)  # the top tick above the highest point
        if frontier and len(points) > 1:
            front = [points[i] for i in pareto_front([(p[1], p[2]) for p in points])]
            axes.step([p[1] for p in front], [p[2] for p in front], where="post", color=LINE, linewidth=1.0, linestyle=":", label="Pareto frontier", zorder=2)
            axes.legend(loc="lower right", fontsize=FONT_PX, frameon=False)
        axes.set_xlabel(x_label)
        axes.set_ylabel(y_label)
        low, high = axes.get_ylim()
        span = (high - low) or 1.0
        heights = spread_labels([(p[2] - low) / span for p in points], 1.0 / max(14, len(points) + 2))
        for number, ((_, x, y, _), height) in enumerate(zip(points, heights), start=1):
            axes.annotate(
                str(number),
                (x, y),
                xytext=(1.04, height),
                textcoords="axes fraction",
                fontsize=FONT_PX,
                va="center",
                arrowprops={"arrowstyle": "-", "color": "#c9ccd6", "linewidth": 0.7, "shrinkA": 0, "shrinkB": 3},
            )
        key = "".join(f"<li>{escape(name)}</li>" for name, *_ in points)
        return Markup(f'{_svg(figure, title)}<ol class="chart-key" aria-label="{escape(title)}: the points by number">{key}</ol>')


def line_chart(title: str, points: Sequence[tuple[float, float]], x_label: str, y_label: str, *, target: tuple[float, str] | None = None) -> Markup:
    """A curve through (x, y), each point marked; ``target``: a horizontal line at (y, label)."""
    points = sorted((x, y) for x, y in points if math.isfinite(x) and math.isfinite(y))
    if not points:
        return no_data(title)
    with plt.rc_context(STYLE):
        figure, axes = _figure(WIDTH_IN, 3.4)
        axes.plot([x for x, _ in points], [y for _, y in points], color=BAR, marker="o", linewidth=1.6)
        if target is not None:
            axes.axhline(target[0], color=SLO, linestyle="--", linewidth=1.2)
            axes.annotate(target[1], (points[0][0], target[0]), xytext=(0, 4), textcoords="offset points", color=SLO, fontsize=FONT_PX)
        axes.set_xlabel(x_label)
        axes.set_ylabel(y_label)
        axes.set_ylim(bottom=0)
        return _svg(figure, title)

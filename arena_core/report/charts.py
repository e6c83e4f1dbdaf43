"""Charts as inline SVG: no script, no CDN, so a page works from ``file://`` and shows the
same in every browser. Every text that reaches the SVG is escaped here."""

from __future__ import annotations

import math
from collections.abc import Sequence

from markupsafe import Markup, escape

WIDTH, ROW, LABEL, PAD = 640, 24, 150, 8
#: The longest point label a chart's label column holds whole (longer ones end in an ellipsis).
LABEL_CHARS = 34


def _svg(height: int, body: list[str], title: str) -> Markup:
    return Markup(
        f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(title)}</title>{''.join(body)}</svg>"
    )


def bar_chart(title: str, rows: Sequence[tuple[str, float | None]], unit: str, *, log: bool = False) -> Markup:
    """Horizontal bars, one per row; a missing value is drawn as "—". ``log`` for latencies."""
    rows = [(name, v if v is not None and 0 < v < math.inf else None) for name, v in rows]  # a bar has a positive length
    values = [v for _, v in rows if v]
    top = max(values, default=1.0)
    low = min(values, default=1.0)
    span = WIDTH - LABEL - 90

    def length(value: float) -> float:
        if not log:
            return span * value / top
        lo, hi = math.log10(low) - 0.3, math.log10(top)
        return span * (math.log10(value) - lo) / ((hi - lo) or 1.0)

    body = []
    for index, (name, value) in enumerate(rows):
        y = PAD + index * ROW
        body.append(f'<text x="{LABEL - 6}" y="{y + 15}" text-anchor="end">{escape(name)}</text>')
        if value:
            body.append(f'<rect x="{LABEL}" y="{y + 3}" width="{max(1.0, length(value)):.1f}" height="{ROW - 8}" class="bar"/>')
            body.append(f'<text x="{LABEL + max(1.0, length(value)) + 4:.1f}" y="{y + 15}">{escape(_fmt(value))} {escape(unit)}</text>')
        else:
            body.append(f'<text x="{LABEL + 4}" y="{y + 15}" class="missing">—</text>')
    if log:
        body.append(f'<text x="{LABEL}" y="{PAD + len(rows) * ROW + 12}" class="axis">log scale</text>')
    return _svg(PAD * 2 + len(rows) * ROW + 14, body, title)


def _fmt(value: float) -> str:
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2 or 5 times a power of ten) covering ``low``..``high``."""
    if not high > low:
        high = low + 1.0
    raw = (high - low) / max(1, count)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first, last = math.floor(low / step), math.ceil(high / step)  # the ticks enclose low..high
    return [round(index * step, 10) for index in range(first, last + 1)]


def spread_labels(wanted: Sequence[float], gap: float) -> list[float]:
    """Label heights as near to ``wanted`` as they can be while at least ``gap`` apart (in order
    of height, pushed down, then the whole column pulled back up as far as it overshot)."""
    order = sorted(range(len(wanted)), key=lambda i: wanted[i])
    placed = [0.0] * len(wanted)
    last = -math.inf
    for i in order:
        placed[i] = max(wanted[i], last + gap)
        last = placed[i]
    overshoot = max((placed[i] - wanted[i] for i in order), default=0.0) / 2
    return [y - overshoot for y in placed]


def bubble_chart(title: str, points: Sequence[tuple[str, float, float, float | None]], x_label: str, y_label: str, *, height: int = 380) -> Markup:
    """Points at (x, y), their area proportional to a size (memory; say so in ``title``) where one is given; axes with
    ticks and values; labels in a column beside the plot, each joined to its point, never on top
    of one another."""
    points = [p for p in points if 0 <= p[1] < math.inf and 0 <= p[2] < math.inf]
    if not points:
        return _svg(40, ['<text x="10" y="24" class="missing">no data</text>'], title)
    left, right, top, bottom = 56, 270, 16, 44
    x_ticks = nice_ticks(0.0, max(p[1] for p in points))
    y_ticks = nice_ticks(min(0.0, min(p[2] for p in points)), max(p[2] for p in points))
    x_hi, y_lo, y_hi = x_ticks[-1], y_ticks[0], y_ticks[-1]
    plot_w, plot_h = WIDTH - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + plot_w * x / (x_hi or 1.0)

    def py(y: float) -> float:
        return top + plot_h * (1 - (y - y_lo) / ((y_hi - y_lo) or 1.0))

    body = [
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" class="axis-line"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" class="axis-line"/>',
    ]
    for tick in x_ticks:
        body.append(f'<line x1="{px(tick):.1f}" y1="{top + plot_h}" x2="{px(tick):.1f}" y2="{top + plot_h + 4}" class="axis-line"/>')
        body.append(f'<text x="{px(tick):.1f}" y="{top + plot_h + 16}" text-anchor="middle" class="axis">{escape(_fmt(tick))}</text>')
    for tick in y_ticks:
        body.append(f'<line x1="{left - 4}" y1="{py(tick):.1f}" x2="{left}" y2="{py(tick):.1f}" class="axis-line"/>')
        body.append(f'<text x="{left - 6}" y="{py(tick) + 4:.1f}" text-anchor="end" class="axis">{escape(_fmt(tick))}</text>')
    body.append(f'<text x="{left + plot_w / 2:.0f}" y="{height - 8}" text-anchor="middle" class="axis">{escape(x_label)} →</text>')
    body.append(
        f'<text x="12" y="{top + plot_h / 2:.0f}" transform="rotate(-90 12 {top + plot_h / 2:.0f})" text-anchor="middle" class="axis">{escape(y_label)} →</text>'
    )
    sizes = [p[3] for p in points if p[3]]
    biggest = max(sizes, default=1.0)
    label_x = left + plot_w + 24
    heights = spread_labels([py(p[2]) for p in points], 14.0)
    for (name, x, y, size), label_y in zip(points, heights):
        radius = 4 + 14 * math.sqrt(size / biggest) if size else 4
        shown = name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"
        body.append(
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="{radius:.1f}" class="point" fill-opacity="0.55">'
            f"<title>{escape(name)}: {escape(_fmt(x))}, {escape(_fmt(y))}</title></circle>"
        )
        body.append(f'<line x1="{px(x):.1f}" y1="{py(y):.1f}" x2="{label_x - 3}" y2="{label_y - 4:.1f}" class="leader"/>')
        body.append(f'<text x="{label_x}" y="{label_y:.1f}">{escape(shown)}</text>')
    lowest = max([height, *(h + 8 for h in heights)])
    return _svg(int(lowest), body, title)

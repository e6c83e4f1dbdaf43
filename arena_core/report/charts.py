"""Charts as inline SVG: no script, no CDN, so a page works from ``file://`` and shows the
same in every browser. Every text that reaches the SVG is escaped here."""

from __future__ import annotations

import math
from collections.abc import Sequence

from markupsafe import Markup, escape

WIDTH, ROW, LABEL, PAD = 640, 24, 150, 8


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


def scatter(title: str, points: Sequence[tuple[str, float, float]], x_unit: str, y_unit: str) -> Markup:
    """Throughput (y) against TTFT (x, log scale) across models; each point labelled."""
    height, left, bottom = 320, 60, 40
    points = [p for p in points if 0 < p[1] < math.inf and 0 <= p[2] < math.inf]  # on a log axis, x > 0
    if not points:
        return _svg(40, ['<text x="10" y="24" class="missing">no data</text>'], title)
    xs, ys = [math.log10(x) for _, x, _ in points], [y for _, _, y in points]
    x_lo, x_hi = min(xs) - 0.3, max(xs) + 0.3
    y_hi = max(ys) * 1.15 or 1.0

    def px(x: float) -> float:
        return left + (WIDTH - left - 260) * (math.log10(x) - x_lo) / (x_hi - x_lo)

    def py(y: float) -> float:
        return height - bottom - (height - bottom - 20) * y / y_hi

    body = [
        f'<line x1="{left}" y1="{height - bottom}" x2="{WIDTH - 20}" y2="{height - bottom}" class="axis-line"/>',
        f'<line x1="{left}" y1="20" x2="{left}" y2="{height - bottom}" class="axis-line"/>',
        f'<text x="{left}" y="{height - 10}" class="axis">{escape(x_unit)} (log scale) →</text>',
        f'<text x="4" y="14" class="axis">↑ {escape(y_unit)}</text>',
    ]
    for index, (name, x, y) in enumerate(sorted(points, key=lambda p: p[1])):
        body.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="5" class="point"/>')
        # labels alternate above and below their point, so neighbours at one height stay legible
        dy = -9 if index % 2 == 0 else 17
        body.append(f'<text x="{px(x) - 6:.1f}" y="{py(y) + dy:.1f}">{escape(name)} ({escape(_fmt(y))} tok/s, {escape(_fmt(x))} s)</text>')
    return _svg(height, body, title)


def _fmt(value: float) -> str:
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"

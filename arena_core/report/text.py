"""Plain-text renderers for the terminal: tables (tabulate) and JSON, fitted to the terminal.

A table is made to fit the terminal's width (80 columns where it cannot tell: output into a pipe
or a file): the widest text columns wrap first, numbers last, and a word is broken only where
nothing else makes it fit. A column of numbers is
right-aligned, so that digits line up.
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from tabulate import tabulate

#: Where the terminal's width cannot be read (a pipe, a file, CI), and the bounds taken from
#: ``COLUMNS`` (a width of 3 or 30,000 is a mistake, not a terminal).
DEFAULT_WIDTH, NARROWEST, WIDEST = 80, 40, 1000
#: A wrapped text column is never made narrower than this; a column of numbers never narrower than NUMBER_MIN.
TEXT_MIN, NUMBER_MIN = 10, 6
#: The space between two columns in tabulate's "simple" format.
GAP = 2
#: A cell that is a figure: a number with its mark (a rank's "=", a footnote's "*"), a unit, an
#: interval or a note in brackets -- "=3", "8/9", "1.21 s", "73.1 [70.0–75.0] (Q measured)",
#: "145\n[121–176]" -- or no figure ("—", "∞").
_NUMERIC = re.compile(
    r"[=~≈<>+\-−]?\d[\d.,]*(?:/\d+)?[%x×†*m]*(?: ?(?:ms|s|GB|GB\*|tok/s|tok/s/GB|req/s|J|W|µs|%))?(?:\s+[\[(][^\])]{0,30}[\])])*|—|-|∞.*", re.S
)


#: A space that wrapping must not break: between a figure and its unit or per cent sign ("2 %",
#: "23.31 s"), so that "(2 %)" moves to the next line whole instead of leaving "(2" behind. It is
#: glued with a figure space while tabulate wraps (textwrap breaks only at ASCII whitespace) and
#: given back as a space.
_UNIT_SPACE = re.compile(r"(?<=\d) (?=(?:%|ms|s|GB/s|GB|tok/s/GB|tok/s|req/s)(?![\w/]))")
_GLUE = "\u2007"  # a figure space: one column wide, no break; rarer in outside text than a no-break space


def _glued(cell: str) -> str:
    return _UNIT_SPACE.sub(_GLUE, cell)


def terminal_width() -> int:
    """The terminal's width in columns: ``COLUMNS`` when set, else the terminal's own, else 80."""
    return max(NARROWEST, min(WIDEST, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns))


def _cell(value: Any) -> str:
    return "—" if value is None else str(value)


def _is_number_column(cells: Sequence[str]) -> bool:
    shown = [cell for cell in cells if cell not in ("", "—", "-")]
    return bool(shown) and all(_NUMERIC.fullmatch(cell) for cell in shown)


def _line_width(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def _unbroken_width(header: str, cells: Sequence[str], numeric: bool) -> int:
    """How narrow a column can be made without breaking a word: its longest word (of a column of
    numbers, its longest line: a figure and its interval stay whole); its header's longest word
    with tabulate's padding (2), since a header wraps at its spaces."""
    pieces = [line for cell in cells for line in cell.splitlines()] if numeric else [word for cell in cells for word in re.split(r"[ \t\n]+", _glued(cell))]
    return max([len(piece) for piece in pieces] + [len(word) + 2 for word in header.split()] + [1])


def _fitted_widths(natural: list[int], numeric: list[bool], width: int, whole: list[bool], unbroken: list[int]) -> list[int | None]:
    """Column widths that make a table of ``natural`` widths fit ``width``, narrowing the widest
    column one character at a time: text columns first, then numbers, each no narrower than it
    can be without breaking a word (``unbroken``: "long-context-25k" stays on one line); only
    then any column below that, to TEXT_MIN or NUMBER_MIN; never a ``whole`` one. ``None``
    where a column keeps its own width."""
    widths = list(natural)
    excess = sum(widths) + GAP * (len(widths) - 1) - width
    least = [TEXT_MIN if not n else NUMBER_MIN for n in numeric]
    whole_words = [max(floor, words) for floor, words in zip(least, unbroken)]
    text, movable = [not n and not w for n, w in zip(numeric, whole)], [not w for w in whole]
    for allowed, floor in ((text, whole_words), (movable, whole_words), (text, least), (movable, least)):
        while excess > 0:
            candidates = [i for i, ok in enumerate(allowed) if ok and widths[i] > floor[i]]
            if not candidates:
                break
            widest = max(candidates, key=lambda i: widths[i])
            widths[widest] -= 1
            excess -= 1
    return [w if w < n else None for w, n in zip(widths, natural)]


def render_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, width: int | None = None, whole: Collection[str] = ()) -> str:
    """A plain table, fitted to ``width`` (default: the terminal's) by wrapping its widest text
    columns, never those headed as in ``whole`` (a run id, which a reader copies); ``None``
    cells show as a dash; columns of numbers are right-aligned."""
    cells = [[_cell(value) for value in row] for row in rows]
    headers = [str(h) for h in headers]
    count = max([len(headers), *(len(row) for row in cells)])
    headers += [""] * (count - len(headers))
    cells = [row + [""] * (count - len(row)) for row in cells]
    columns = [[row[i] for row in cells] for i in range(count)]
    numeric = [_is_number_column(column) for column in columns]
    align = ["right" if n else "left" for n in numeric]
    # tabulate pads a header by MIN_PADDING (2): a column is at least its header's width plus 2
    natural = [max([_line_width(headers[i]) + (2 if headers[i] else 0), *(_line_width(c) for c in columns[i])]) for i in range(count)]
    limit = width or terminal_width()
    unbroken = [_unbroken_width(headers[i], columns[i], numeric[i]) for i in range(count)]
    fitted = _fitted_widths(natural, numeric, limit, [header in whole for header in headers], unbroken)
    header_widths = [max(1, w - 2) if w is not None else None for w in fitted]
    wrap = {"maxcolwidths": fitted, "maxheadercolwidths": header_widths} if any(fitted) and cells else {}
    glued = [[_glued(cell) for cell in row] for row in cells] if wrap else cells
    if not any(headers):  # a table of names and values: no empty header line
        table = tabulate(glued, tablefmt="plain", disable_numparse=True, colalign=align, **({"maxcolwidths": fitted} if wrap else {}))
    else:
        table = tabulate(glued, headers=headers, tablefmt="simple", disable_numparse=True, colalign=align, **wrap)  # "86.0" stays 86.0
    return table.replace(_GLUE, " ")


def without_empty_columns(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> tuple[list[str], list[list[Any]]]:
    """``headers`` and ``rows`` less the columns in which no row has a figure (every cell "—")."""
    keep = [i for i in range(len(headers)) if any(_cell(row[i]) not in ("—", "") for row in rows)] if rows else list(range(len(headers)))
    return [headers[i] for i in keep], [[row[i] for i in keep] for row in rows]


def wrap_text(text: str, *, width: int | None = None, indent: str = "", hanging: str | None = None) -> str:
    """``text`` wrapped to ``width`` (default: the terminal's), each paragraph on its own; the
    first line indented by ``indent``, the rest by ``hanging`` (default: the same)."""
    limit = width or terminal_width()
    wrapper = textwrap.TextWrapper(width=limit, initial_indent=indent, subsequent_indent=indent if hanging is None else hanging, break_on_hyphens=False)
    return "\n".join(wrapper.fill(_glued(paragraph)).replace(_GLUE, " ") if paragraph.strip() else "" for paragraph in text.split("\n"))


def minutes(seconds: float) -> str:
    """A time as a person reads it: "9 min 40 s", "45 s" (the one formatter of a duration)."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    return f"{seconds // 60} min" + (f" {seconds % 60:02d} s" if seconds % 60 else "")


def render_json(data: Any) -> str:
    """Indented JSON with a stable key order as given."""
    return json.dumps(data, indent=2, ensure_ascii=False)

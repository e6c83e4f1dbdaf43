"""Plain-text renderers for the terminal: tables (tabulate) and JSON."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from tabulate import tabulate


def render_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A plain table; ``None`` cells show as a dash."""
    return tabulate(list(rows), headers=list(headers), tablefmt="simple", missingval="—", disable_numparse=True)  # "86.0" stays 86.0


def render_json(data: Any) -> str:
    """Indented JSON with a stable key order as given."""
    return json.dumps(data, indent=2, ensure_ascii=False)

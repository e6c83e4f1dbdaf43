"""``arena predict``'s answer as text (fitted to the terminal; ``--wide``: one line per
workload, with what bounds it) and as JSON: the built-in renderers of predictions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arena_core import Figures, PredictionView, WorkloadPrediction, card_kit, render_table

#: The figures a prediction shows, each with how it is written.
FIGURES: tuple[tuple[str, Callable[[float | None], str]], ...] = (
    ("per_user_tps", card_kit.fmt_tps),
    ("total_tps", card_kit.fmt_tps),
    ("ttft_p50_s", card_kit.fmt_seconds),
    ("site_tps", card_kit.fmt_tps),
)
ABOUT = (
    "Each figure with its interval [low–high] below it. TTFT: the mean over a closed-loop workload's requests (as llama-benchy gives it), "
    "the p50 of an open-loop one's (as vllm bench serve does). G: the seed site's throughput per workload (closed loop: total decode tok/s "
    "of a round, answers of full length assumed; open loop: total tok/s ÷ peak concurrent requests)."
)


def prediction_text(view: PredictionView) -> str:
    """A line of what was predicted and on what basis, the table, what its figures are, the
    assumptions, the notes and the capacities."""
    wrap = card_kit.wrap_text
    found = view.workloads
    lines = [wrap(f"Predicted: {view.spec.title} on {view.hardware.title} ({view.backend}); {view.tier}; not measured", hanging="  ")]
    rows = [(p.workload, *(_range(p, key, shown, one_line=view.wide) for key, shown in FIGURES), *([p.central.bound] if view.wide else [])) for p in found]
    headers = ["workload", "tok/s per user", "tok/s total", "TTFT", "seed's G", *(["bound by"] if view.wide else [])]
    lines.append(render_table(headers, rows, width=card_kit.WIDEST if view.wide else None))
    lines.append(wrap(ABOUT + ("" if view.wide else " --wide: one line per workload, with what bounds it.")))
    lines += [wrap(f"assumed: {assumed}", hanging="  ") for assumed in view.assumptions]
    lines += [wrap(f"note: {note}", hanging="  ") for note in sorted({note for p in found for note in p.notes})]
    lines += [wrap(f"Predicted capacity: {capacity.describe()}", hanging="  ") for capacity in view.capacity or ()]
    return "\n".join(lines) + "\n"


def _range(prediction: WorkloadPrediction, key: str, shown: Callable[[float | None], str], *, one_line: bool = False) -> str:
    """ "145 [121–176]": the central figure and its interval, on one line or two."""
    central, low, high = (getattr(f, key) for f in (prediction.central, prediction.low, prediction.high))
    if central is None:
        return "—"
    # an open-loop schedule can reorder at other efficiencies: the interval always holds the central figure
    ends = sorted(v for v in (low, central, high) if v is not None)
    return f"{shown(central)}{' ' if one_line else chr(10)}[{shown(ends[0])}–{shown(ends[-1])}]"


def prediction_json(view: PredictionView) -> str:
    """The prediction as one JSON document: each workload's central figures and both ends."""

    def figures(f: Figures) -> dict[str, Any]:
        return {"per_user_tps": f.per_user_tps, "total_tps": f.total_tps, "ttft_p50_s": f.ttft_p50_s, "site_tps": f.site_tps, "bound": f.bound}

    document = {
        "model": view.spec.name,
        "title": view.spec.title,
        "hardware": view.hardware.name,
        "backend": view.backend,
        "tier": view.tier,
        "assumptions": list(view.assumptions),
        "workloads": [
            {"workload": p.workload, "central": figures(p.central), "low": figures(p.low), "high": figures(p.high), "notes": list(p.notes)}
            for p in view.workloads
        ],
        "capacity": None if view.capacity is None else [found.as_dict() for found in view.capacity],
    }
    return card_kit.render_json(document) + "\n"

"""The terminal model card of a run: one row per workload."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from arena_core.report.text import render_table, terminal_width, wrap_text
from arena_core.types import WorkloadResult, benches_count


def _ttft(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _energy(result: WorkloadResult | None) -> str:
    value = result.metrics.get("energy_per_1k_output_tokens_j") if result is not None else None
    return f"{value:.0f}" if value is not None else "—"


def render_card(title: str, results: Sequence[WorkloadResult], expected: Sequence[str], *, server_memory: bool = False) -> str:
    """The end-of-run table. ``server_memory``: the memory column is the resident memory of the
    server's own processes (a server Arena started on a machine without a GPU), else memory in
    use on the whole machine; its header says which."""
    by_name = {r.workload: r for r in results}
    rows = []
    for name in expected:
        result = by_name.get(name)
        if result is None:
            rows.append((name, "—", "—", "", "", "", "", "not completed"))
            continue
        notes = "; ".join((*result.verdict.reasons, *result.verdict.labels))
        rows.append(
            (
                name,
                f"{result.tokens_per_second:.1f}" if result.tokens_per_second is not None else "—",
                _ttft(result.ttft_p50_s),
                f"{result.requests - result.failed}/{result.requests}",
                _memory(result.metrics, server_memory),
                f"{efficiency:.0%}" if (efficiency := result.metrics.get("bandwidth_efficiency")) else "—",
                "valid" if result.verdict.valid else "INVALID",
                notes,
            )
        )
    headers = ["workload", "tok/s", "TTFT p50", "ok", "memory", "bw eff.", "verdict", "notes"]
    if any(r.metrics.get("energy_per_1k_output_tokens_j") is not None for r in results):  # only where a probe reads energy
        headers.insert(6, "J / 1k tokens")
        rows = [(*row[:6], _energy(by_name.get(row[0])), *row[6:]) for row in rows]
    common = [note for note in rows[0][-1].split("; ") if note and all(note in row[-1].split("; ") for row in rows)] if rows else []
    if common:  # said once under the table, not on every row
        rows = [(*row[:-1], "; ".join(note for note in row[-1].split("; ") if note not in common)) for row in rows]
    if not any(row[-1] for row in rows):
        headers, rows = headers[:-1], [row[:-1] for row in rows]
    table = render_table(headers, rows)
    legend = [
        "memory: " + ("server memory, its own processes' peak (RSS)" if server_memory else "machine memory, in use on the whole machine at its peak"),
        "bw eff.: decode's share of the memory-bandwidth ceiling; ok: requests answered of those sent",
        *(f"every workload: {note}" for note in common),
    ]
    count = f"(benches measured {benches_count(expected, by_name)})"
    head = f"{title}  {count}" if len(title) + 2 + len(count) <= terminal_width() else f"{wrap_text(title, hanging='  ')}\n  {count}"
    return f"{head}\n{table}\n" + "\n".join(wrap_text(line, hanging="  ") for line in legend)


def _memory(metrics: Mapping[str, float | None], server_memory: bool) -> str:
    """The peak of the server's own resident memory (``server_memory``), else of memory in use
    on this machine; for a server elsewhere, the KV cache's use that the server's own metrics
    report, which is all that can be known from here."""
    if server_memory and (resident := metrics.get("server_rss_peak_gb")):
        return f"{resident:.1f} GB"
    if peak := metrics.get("peak_memory_gb"):
        return f"{peak:.1f} GB"
    if (kv := metrics.get("kv_cache_usage_peak")) is not None:
        return f"KV cache {kv:.0%}"
    return "—"

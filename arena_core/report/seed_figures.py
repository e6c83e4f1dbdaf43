"""The seed site's figures, computed from Arena's own measurements (workloads.md, "What the seed
site actually ran"), each labelled as what it is:

- closed loop: "tokens/sec" is llama-benchy's per-user t/s at c = 10, "TTFT" its *mean* time to
  first response (the seed cards call it p50; Arena's true p50 stays in the workloads table);
- open loop: "tokens/sec" is total token throughput ÷ peak concurrent requests, TTFT the p50;
- G (the site's throughput per workload): closed-loop total decode t/s at c = 10, open-loop the
  same total ÷ peak figure; the card's headline "Throughput" is the mean G over measured workloads;
- the request rate an open-loop workload was served at against the rate it asked for; a server
  that fell behind over the arrivals (under 90 %, the drain after the last arrival left out)
  saturated, and the card says so.
"""

from __future__ import annotations

from arena_core.report.formats import fmt_seconds, fmt_tps
from arena_core.results.findings import served_over_arrivals
from arena_core.types import CardWorkload, ModelCard


def throughput_headline(card: ModelCard) -> tuple[float | None, int]:
    """The seed's "Throughput": the mean G over the valid measured workloads, and how many."""
    values = [g for line in card.workloads if line.valid and line.name in card.expected and (g := line.site_tps) is not None]
    return (sum(values) / len(values) if values else None), len(values)


def rate_served(line: CardWorkload) -> str:
    """ "0.35 of 1.50 req/s: saturated" for an open-loop workload (the rate over the whole run, as
    the seed shows it; "saturated" judged over the arrivals, not the drain, by
    :func:`~arena_core.results.findings.served_over_arrivals`); "" for a closed-loop one."""
    served, asked = line.metrics.get("request_throughput"), line.metrics.get("requested_rate")
    if served is None:
        return ""
    if not asked:
        return f"{served:.2f} req/s"
    judged = served_over_arrivals(line)
    verdict = ""
    if judged is not None and judged.saturated:
        over = f" ({'at most ' if judged.bound else ''}{judged.served:.2f} over the arrivals)" if judged.served is not None else ""
        verdict = f": saturated{over}"
    return f"{served:.2f} of {asked:.2f} req/s{verdict}"


def seed_rows(card: ModelCard) -> list[tuple[str, ...]]:
    """One row per measured workload: the seed's tokens/sec and TTFT, G, and the rate served."""
    rows = []
    for name in card.expected:
        line = card.workload(name)
        if line is None:
            continue
        if line.open_loop:
            shown, ttft, how = line.site_tps, line.ttft_p50_s, "total ÷ peak concurrency; TTFT p50"
        else:
            shown, ttft, how = line.tokens_per_second, line.metrics.get("ttfr_mean_s"), "per user at c=10; TTFT mean"
        rows.append((name, fmt_tps(shown), fmt_seconds(ttft), fmt_tps(line.site_tps), rate_served(line), how))
    return rows

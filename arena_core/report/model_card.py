"""The model card of a run, as terminal text or markdown (tabulate); JSON lives in cards.py.

Sections as on the published cards: header (Arena score per profile, headline throughput, model
memory, benches measured n/9), quality with provenance, decode throughput total at c=10 for
1k / 8k / 4k+turn / 25k, one line per workload (tokens/s, TTFT p50 with p90/p99 and intervals,
validity, scale), findings, hardware and backend, memory and energy, and each workload's command.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence

from tabulate import tabulate

from arena_core.report.card_sections import capacity_section, prediction_section, slo_section, sweep_section
from arena_core.report.cost import CostLine
from arena_core.report.formats import energy_read_from, fmt_score, fmt_seconds, fmt_seconds_within, fmt_tps, fmt_tps_within, shown_seconds_within, shown_tps
from arena_core.report.seed_figures import seed_rows, throughput_headline
from arena_core.report.text import WIDEST, render_table, without_empty_columns, wrap_text
from arena_core.report.workload_blocks import TURN_COLUMNS, summary_lines, workload_blocks
from arena_core.results.findings import ttft_is_mean
from arena_core.run.budget import minutes
from arena_core.run.launch import MOST_SETTINGS
from arena_core.run.manifest import MEASURED_BY_ARENA
from arena_core.types import CardWorkload, LedgerLine, MeasuredQuality, ModelCard, ModelFacts, Score, ServerSettings


def headline_tps(card: ModelCard) -> float | None:
    """The decode total of the card's headline workload (the workloads plugin names it: chat)."""
    line = card.workload(card.layout.headline) if card.layout.headline else None
    return line.metrics.get("decode_tps_total") if line else None


def headline_label(card: ModelCard) -> str:
    """ "chat total at c=10", with the concurrency it was measured at (a custom shape may differ)."""
    name = card.layout.headline or "headline"
    line = card.workload(name)
    concurrency = line.metrics.get("concurrency") if line else None
    return f"throughput, {name} total at c={int(concurrency) if concurrency else 10}" + (" (custom shape)" if line and line.custom else "")


def decode_totals(card: ModelCard) -> list[tuple[str, float | None]]:
    """The card's "decode throughput, total" row: (label, total tok/s) per workload the row shows."""
    return [(label, line.metrics.get("decode_tps_total") if (line := card.workload(name)) else None) for label, name in card.layout.totals]


#: The workloads table's columns (text, markdown and the site); :data:`WORKLOAD_NOTE` says what the brackets hold.
WORKLOAD_COLUMNS = ("workload", "requests", "tokens/s", "TTFT p50", "TTFT p90", "TTFT p99", "verdict")
WORKLOAD_NOTE = (
    "Each figure with its 95 % interval in brackets, from the workload's own requests. "
    '"max of n": too few requests to bound that percentile from above (36 for a p90, 368 for a p99); the slowest is shown, and nothing ranks it as the percentile.'
)


def _tail(line: CardWorkload, q: int) -> str:
    """A TTFT tail with its 95 % interval; where the samples could not bound it from above,
    what it is: "max of 4: 812 ms" (``loadgen.stats.tail_metrics``)."""
    value, samples, largest = line.metrics.get(f"ttft_p{q}_s"), line.metrics.get("ttft_samples"), line.metrics.get("ttft_max_s")
    if value is None:
        return f"max of {samples:.0f}: {fmt_seconds(largest)}" if samples and largest is not None else "—"
    return fmt_seconds_within(value, line.metrics.get(f"ttft_p{q}_ci_low_s"), line.metrics.get(f"ttft_p{q}_ci_high_s"))


def precision_verdict(card: ModelCard) -> str | None:
    """What the run's sample sizes support, in a line: the widest relative margin among the
    headline figures (a stream's tokens/s and TTFT p50, each at 95 %) and where it is; None
    where no figure has an interval (an imported card)."""
    margins = []
    for line in card.workloads:
        for label, value, low, high in (
            ("tokens/s", line.tokens_per_second, line.tokens_per_second_low, line.tokens_per_second_high),
            ("TTFT p50", line.ttft_p50_s, line.ttft_p50_low_s, line.ttft_p50_high_s),
        ):
            if (margin := _shown_margin(label, value, low, high)) is not None:
                margins.append((margin, f"{line.name} {label}, from {sample_count(line)} requests"))
    if not margins:
        return None
    widest, where = max(margins)
    return (
        f"What this run can support: its headline figures are known to ±{widest * 100:.0f} % at worst ({where}); "
        f"a run within that of it is not told apart (compare says no difference, the leaderboard ties them)."
    )


def _shown_margin(label: str, value: float | None, low: float | None, high: float | None) -> float | None:
    """A figure's relative margin from its interval as the table writes it (tokens/s each to its
    own digits; seconds in the value's unit, :func:`fmt_seconds_within`), so a reader gets the same."""
    if not value or low is None or high is None:
        return None
    written, shown_low, shown_high = (shown_tps(value), shown_tps(low), shown_tps(high)) if label == "tokens/s" else shown_seconds_within(value, low, high)
    return (shown_high - shown_low) / 2 / written if written else None


def sample_count(line: CardWorkload) -> str:
    """How many requests the workload's TTFT figures are from ("—" where a run stored none)."""
    samples = line.metrics.get("ttft_samples")
    return f"{samples:.0f}" if samples else "—"


def workload_rows(card: ModelCard) -> list[tuple[str, ...]]:
    """The scored suite ("—" where missing), then whatever else the run measured (probes,
    optional workloads): requests, tokens/s and TTFT p50 / p90 / p99, each with its 95 % interval."""
    rows = []
    suite = card.expected if any(card.workload(name) for name in card.expected) else ()  # a capacity search measures none of it
    for name in (*suite, *(line.name for line in card.workloads if line.name not in card.expected)):
        line = card.workload(name)
        if line is None:
            rows.append((name, "—", "—", "—", "—", "—", "not completed"))
            continue
        tps = fmt_tps_within(line.tokens_per_second, line.tokens_per_second_low, line.tokens_per_second_high)
        rows.append((name, sample_count(line), tps, ttft_cell(card, line, within=True), _tail(line, 90), _tail(line, 99), "valid" if line.valid else "INVALID"))
    return rows


def ttft_cell(card: ModelCard, line: CardWorkload, *, within: bool = False) -> str:
    """The TTFT p50 column's cell: the p50 (``within``: with its 95 % interval), or the mean
    marked so where the source gave a mean."""
    shown = fmt_seconds_within(line.ttft_p50_s, line.ttft_p50_low_s, line.ttft_p50_high_s) if within else fmt_seconds(line.ttft_p50_s)
    return shown + (" (mean)" if ttft_is_mean(card, line) else "")


def workload_notes(card: ModelCard) -> list[tuple[str, str]]:
    """(workload, what its verdict says) of each line with reasons or labels, less the import's
    attribution, which the card gives once."""
    return [(block.name, block.notes) for block in workload_blocks(card) if block.notes]


def platform_rows(card: ModelCard) -> list[tuple[str, str]]:
    """Hardware and backend: what ran, and how Arena knew which machine it was."""
    rows = [("hardware", f"{card.hardware_title} ({card.hardware})")]
    if card.hardware_memory:
        rows.append(("memory", card.hardware_memory))
    if card.hardware_reason:
        rows.append(("why this profile", card.hardware_reason))
    rows.append(("backend", f"{card.backend}, {card.measured_with}"))
    backend = card.backend_facts
    for key in card.layout.backend_facts:
        if backend.get(key) is not None:
            rows.append((key.replace("_", " "), str(backend[key])))
    if isinstance(backend.get("command"), list):
        rows.append(("server command", shlex.join([*_settings_before(backend.get("environment")), *(str(part) for part in backend["command"])])))
    if settings := server_settings_text(card.server_settings):
        rows.append(("server settings", settings))
    return rows


def _settings_before(environment: object) -> list[str]:
    """``NAME=value`` for each setting the server was started with (its ``environment`` fact),
    as a shell writes them before the command; at most :data:`MOST_SETTINGS`."""
    if not isinstance(environment, dict):
        return []
    return [f"{name}={value}" for name, value in list(environment.items())[:MOST_SETTINGS] if isinstance(name, str) and isinstance(value, str)]


def server_settings_text(settings: ServerSettings) -> str:
    """What a run states of its server beside the backend's defaults, in words ("" for nothing):
    what its prediction simulates (speculative decoding at an assumed acceptance)."""
    parts = [f"KV cache {settings.kv_cache_dtype}"] if settings.kv_cache_dtype else []
    parts += [f"{settings.token_budget:,} tokens a step"] if settings.token_budget else []
    parts += [f"{settings.slots} sequences at once"] if settings.slots else []
    parts += ["prefix caching off"] if settings.prefix_caching is False else []
    said = [f"{', '.join(parts)} (what its prediction simulates)"] if parts else []
    if settings.speculative_tokens:
        said.append(f"speculative decoding of {settings.speculative_tokens} draft tokens a step (simulated at an assumed acceptance: docs/prediction.md)")
    if settings.sixteen_bit_compute:
        said.append("its low-precision weights computed in 16 bits, through a weight-only kernel (simulated at the 16-bit roof)")
    return "; ".join(said)


def seed_meanings(card: ModelCard) -> list[tuple[str, str]]:
    """What the seed's figures are, once per kind of workload (closed, open loop) the card has."""
    kinds = {row[5]: None for row in seed_rows(card)}
    return [("open loop" if "peak" in how else "closed loop", how) for how in kinds]


def memory_rows(card: ModelCard) -> list[tuple[str, str]]:
    source = "as published: see the card's source" if card.model_memory_source == card.source else card.model_memory_source
    rows = [("model memory", f"{card.model_memory_gb:.1f} GB ({source})" if card.model_memory_gb is not None else "—")]
    peaks = [(line.metrics["peak_memory_gb"], line.name) for line in card.workloads if line.metrics.get("peak_memory_gb")]
    if peaks:
        peak, name = max(peaks)
        rows.append(("peak memory in use, whole machine", f"{peak:.1f} GB ({name})"))
    kv = [(line.metrics["kv_cache_usage_peak"], line.name) for line in card.workloads if line.metrics.get("kv_cache_usage_peak") is not None]
    if kv:
        peak, name = max(kv)
        rows.append(("KV cache in use, peak (the server's own metrics)", f"{peak:.1%} ({name})"))
    resident = [(line.metrics["server_rss_peak_gb"], line.name) for line in card.workloads if line.metrics.get("server_rss_peak_gb")]
    if resident:
        peak, name = max(resident)
        rows.append(("peak memory of the server's processes (RSS)", f"{peak:.1f} GB ({name})"))
    return rows + energy_rows(card)


def energy_rows(card: ModelCard) -> list[tuple[str, str]]:
    """Energy per output token and per token, each workload's, with what it was read from; or
    "not measured" and why: never an estimate in its place."""
    rows = []
    for line in card.workloads:
        metrics = line.metrics
        per_output = metrics.get("energy_per_output_token_j")
        if per_output is None and (per_1k := metrics.get("energy_per_1k_output_tokens_j")) is not None:
            per_output = per_1k / 1000  # stored before the per-token figures
        if per_output is None:
            continue
        per_token = metrics.get("energy_per_token_j")
        sources = energy_read_from(metrics)
        said = f"{per_output:.3g} J per output token" + (f", {per_token:.3g} J per token (prompt and output)" if per_token is not None else "")
        rows.append((f"energy, {line.name}", said + (f"; read from {sources}" if sources else "")))
    if not rows and card.source == MEASURED_BY_ARENA:
        why = [note for note in card.telemetry_notes if "energy" in note or "power" in note]
        rows.append(("energy", "not measured" + (f": {'; '.join(why)}" if why else ": this machine's profile names no energy counter")))
    return rows


def header_rows(card: ModelCard, scores: Mapping[str, Score]) -> list[tuple[str, str]]:
    """The card's headline: the score per profile, the seed's Throughput (mean G) and efficiency,
    chat throughput, model memory, benches measured."""
    throughput, count = throughput_headline(card)
    efficiency = throughput / card.model_memory_gb if throughput is not None and card.model_memory_gb else None
    cohort = next((found for score in scores.values() if (found := score.cohort)), None)
    return [
        *((f"Arena score ({name})" if "(" not in name else f"absolute score, {name}", fmt_score(score)) for name, score in scores.items()),
        *([("scored among", cohort)] if cohort else []),
        (f"Throughput (the seed site's G, mean over {count} workloads)", f"{fmt_tps(throughput)} tok/s"),
        ("efficiency (G per GB of model memory)", f"{fmt_tps(efficiency)} tok/s/GB"),
        (headline_label(card), f"{fmt_tps(headline_tps(card))} tok/s"),
        ("model memory", f"{card.model_memory_gb:.1f} GB" if card.model_memory_gb is not None else "—"),
        ("benches measured", card.benches()),
    ]


def quality_rows(card: ModelCard) -> list[tuple[str, str, str]]:
    """Each published quality score with its source ("as above" where the score before it has the
    same), each figure measured on the served model beside the published one, then Q: the
    average the score uses, and of what."""
    rows = [(q.benchmark, "not published" if q.value is None else f"{q.value:.1f}", q.source) for q in card.quality]
    # a source several scores share is said once (a narrow page would repeat a paragraph a row)
    rows = [(name, value, "as above" if i and source and source == rows[i - 1][2] else source) for i, (name, value, source) in enumerate(rows)]
    rows += [measured_row(card, measured) for measured in card.measured_quality]
    values, source = card.quality_basis()
    if values:
        rows.append(("average", f"{sum(values) / len(values):.1f}", f"mean of {len(values)} {source} score{'s' if len(values) != 1 else ''} (Q)"))
    return rows or [("—", "no quality scores: none published, none measured", "")]


def measured_row(card: ModelCard, measured: MeasuredQuality) -> tuple[str, str, str]:
    """A measured figure: value and interval, then how, on how much, against the published
    figure, and the share of answers that failed the format."""
    label = f"{measured.benchmark or measured.suite} (measured)"
    published = card.published(measured.benchmark) if measured.benchmark else None
    against = f"; published {published:.1f}, measured {measured.value - published:+.1f}" if published is not None else ""
    failed = f"; {measured.format_failures} of {measured.items} answers failed the format ({100 * measured.format_failures / measured.items:.0f} %)"
    lost = f"; {measured.failed_requests} requests failed" if measured.failed_requests else ""
    sandbox = f"; sandbox: {measured.isolation}" if measured.isolation else ""
    how = f"{measured.metric} on {measured.size}{against}{failed}{lost}{sandbox}"
    return label, f"{measured.value:.1f} [{measured.low:.1f}–{measured.high:.1f}]", how


#: Facts of the model a card can show, as the seed cards list them.
MODEL_FACTS = (("vendor", "vendor"), ("architecture", "architecture"), ("precision", "precision"), ("size bucket", "size_bucket"))


def model_rows(card: ModelCard) -> list[tuple[str, str]]:
    """What the model is: vendor, parameters (total / active), architecture, precision, weights."""
    facts = card.model_facts
    rows = [(label, str(getattr(facts, key))) for label, key in MODEL_FACTS if getattr(facts, key)]
    total, active = facts.params_total_b, facts.params_active_b
    if total is not None:
        rows.insert(1, ("parameters", f"{total:g}B total" + (f", {active:g}B active" if active is not None and active != total else "")))
    if facts.hf_model:
        rows.append(("weights", f"https://huggingface.co/{facts.hf_model}"))
    rows += served_rows(facts)
    return rows


def served_rows(facts: ModelFacts) -> list[tuple[str, str]]:
    """What the server reported of the model it served: its name for it, its file, a GGUF
    file's name and quantisation, and where the run's model name came from."""
    rows = []
    if facts.served_name:
        rows.append(("served as", facts.served_name + (f" ({facts.served_root})" if facts.served_root else "")))
    if facts.gguf_name or facts.quantisation:
        size = f", {facts.file_gb:g} GB" if facts.file_gb is not None else ""
        rows.append(("GGUF", f"{facts.gguf_name or facts.model_file}, {facts.quantisation or 'quantisation not stated'}{size}"))
    elif facts.model_file:
        rows.append(("model file", facts.model_file))
    if facts.identity:
        rows.append(("named from", facts.identity))
    return rows


def score_lines(scores: Mapping[str, Score]) -> list[str]:
    """How each profile's score is made: its arithmetic written out (weights and parts, so it can
    be recomputed from the card), else Q and P, and what was left out."""
    lines = []
    for name, score in scores.items():
        made = score.arithmetic or (f"Q {score.quality:.1f}, P {score.performance:.1f}" if score.quality is not None else f"P {score.performance:.1f}")
        lines.append(f"- {name}: {made}" + (f"; {'; '.join(score.notes)}" if score.notes else ""))
    return lines


def _tables(markdown: bool, width: int | None) -> Callable[[Sequence[Sequence[str]], Sequence[str]], str]:
    """A table of cells already written as the card shows them ("86.0" must not become 86):
    markdown as it is, text fitted to ``width`` (default: the terminal's)."""

    def table_of(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> str:
        if markdown:
            return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)
        return render_table(headers, rows, width=width)

    return table_of


def quality_heading(card: ModelCard) -> str:
    """ "Quality: published", "... measured by Arena on the served model", or both."""
    kinds = [kind for kind, present in (("published", card.quality), ("measured by Arena on the served model", card.measured_quality)) if present]
    return "Quality: " + (" and ".join(kinds) if kinds else "none published or measured")


def cost_rows(cost: CostLine | str | None) -> list[tuple[str, str]]:
    """The self-host cost's row where ``[cost]`` is set: the sum written out, or why there is none."""
    if cost is None:
        return []
    return [("cost per million output tokens", cost.explained() if isinstance(cost, CostLine) else f"not computed: {cost}")]


def memory_heading(card: ModelCard) -> str:
    """ "Memory and energy" where the card says anything of energy (a figure, or "not measured")."""
    return "Memory and energy" if energy_rows(card) else "Memory"


def time_line(card: ModelCard) -> str:
    """ "Time: 9 min 40 s; expected 9 min 58 s; budget 10 min (--budget)", or "" where unknown."""
    parts = [f"took {minutes(card.took_s)}"] if card.took_s is not None else []
    if card.expected_s is not None:
        parts.append(f"expected {minutes(card.expected_s)} before it started")
    if card.budget_s:
        chosen = max((line.scale for line in card.workloads), default=card.scale)  # the plan's; a workload the budget shrank says so below
        parts.append(f"budget {minutes(card.budget_s)}, the scale x{chosen:g} chosen to fit it")
        parts += [f"to keep it, {change}" for change in card.budget_changes]
        if card.took_s is not None and card.took_s > card.budget_s:
            parts.append(f"over it by {minutes(card.took_s - card.budget_s)}")
        elif card.took_s is not None and not card.budget_changes:
            parts.append("kept, nothing changed while it ran")
    return "Time: " + "; ".join(parts) + "." if parts else ""


def big_figures(card: ModelCard, scores: Mapping[str, Score]) -> list[tuple[str, str, str]]:
    """The card's four big figures, as the seed card leads with them: (figure, value, what it is).
    The score is the first scorer's; where that one is relative and the run was ranked alone (its
    best is itself: 100), the first absolute score's, which means something on its own."""
    first = next(iter(scores.items()), None)
    if first and first[1].ranked_alone:
        first = next(((name, score) for name, score in scores.items() if score.cohort is None and score.value is not None), first)
    throughput, count = throughput_headline(card)
    memory = card.model_memory_gb
    if first is None:
        what = "no scorer"
    elif first[1].cohort is None:
        what = f"absolute score, {first[0]}"
    else:
        what = f"Arena score, {first[0]}" + (" (relative: the only run ranked)" if first[1].ranked_alone else "")
    return [
        ("score", f"{first[1].value:.1f}" if first and first[1].value is not None else "—", what),
        ("throughput", f"{fmt_tps(throughput)} tok/s", f"G, mean of {count} workloads"),
        ("memory", f"{memory:.1f} GB" if memory is not None else "—", "estimated: weights" if card.model_memory_estimated else "model memory"),
        ("benches", card.benches(), "workloads of the standard suite measured"),
    ]


def _block_lines(card: ModelCard, *, markdown: bool, wrap: Callable[..., str], table_of: Callable[[Sequence[Sequence[str]], Sequence[str]], str]) -> list[str]:
    """One block per workload: title and runner, what it is, parameters, figures, the command."""
    out = []
    for block in workload_blocks(card):
        out.append(f"### {block.title} ({block.name}) · {block.runner}" if markdown else f"{block.title} ({block.name}) · {block.runner}")
        said = [block.description, f"parameters: {block.parameters}" if block.parameters else ""]
        figures = f"{block.per_user_tps} {block.per_user_label}, {block.total_tps} {block.total_label} · TTFT {block.ttft}"
        said.append(figures + (f" · served {block.served}" if block.served else "") + f" · {block.verdict}" + (f": {block.notes}" if block.notes else ""))
        said += [block.cache, block.tools]
        out += [wrap(text, indent="  ", hanging="    ") for text in said if text]
        if block.turns:
            out.append(table_of(block.turns, TURN_COLUMNS))
        for label, command in block.commands:
            shown = "\n".join("    " + part for part in command.split("\n"))
            out += [wrap(f"{label}:" if label != block.name else "command:", indent="  ", hanging="    "), f"```\n{command}\n```" if markdown else shown]
        out.append("")
    return out


def _details(
    card: ModelCard,
    scores: Mapping[str, Score],
    *,
    markdown: bool,
    wrap: Callable[..., str],
    table_of: Callable[[Sequence[Sequence[str]], Sequence[str]], str],
    predictions: Sequence[LedgerLine] | None,
    uncovered: str,
    cost: CostLine | str | None,
) -> list[str]:
    """The card's second half: each workload's block and command, SLO, capacity, prediction, the
    seed's figures, hardware, memory and cost, the score's arithmetic."""
    h2 = "## " if markdown else ""
    return [
        f"{h2}Each workload: what it is, how it ran, the exact command",
        *_block_lines(card, markdown=markdown, wrap=wrap, table_of=table_of),
        *slo_section(card, h2, table_of),
        *sweep_section(card, h2, table_of),
        *capacity_section(card, h2, table_of),
        *(wrap(line) for line in prediction_section(predictions, h2, table_of, uncovered)),
        f"{h2}As the seed site counts it",
        table_of([row[:5] for row in seed_rows(card)] or [("—", "", "", "", "")], ["workload", "tok/s", "TTFT", "G", "request rate served"]),
        *(wrap(f"tok/s and TTFT, {kind}: {how}") for kind, how in seed_meanings(card)),
        "",
        f"{h2}Hardware and backend",
        table_of(platform_rows(card), ["", ""]),
        "",
        f"{h2}{memory_heading(card)}",
        table_of(memory_rows(card) + cost_rows(cost), ["", ""]),
        "",
        f"{h2}Score explained",
        *(wrap(line, hanging="  ") for line in score_lines(scores)),
    ]


def render_model_card(
    card: ModelCard,
    scores: Mapping[str, Score],
    findings: Sequence[str],
    *,
    markdown: bool = False,
    predictions: Sequence[LedgerLine] | None = (),
    uncovered: str = "",
    wide: bool = False,
    cost: CostLine | str | None = None,
) -> str:
    """The card in the seed card's order: the model and its four big figures, a two-line summary,
    scores, quality, decode throughput, a table of the workloads, findings; then the details
    (each workload's block and command, SLO, capacity, prediction, the seed's figures, hardware,
    memory, the score's arithmetic). Text fits the terminal's width (``wide``: tables as wide as
    they are)."""
    width = WIDEST if wide or markdown else None
    table_of = _tables(markdown, width)

    def wrap(text: str, indent: str = "", hanging: str | None = None) -> str:
        return text if markdown else wrap_text(text, width=width, indent=indent, hanging=hanging)

    h1, h2 = ("# ", "## ") if markdown else ("", "")
    scale = f" · scaled x{card.scale:g}" if card.scale != 1 else ""
    figures = big_figures(card, scores)
    out = [
        f"{h1}{card.model_title} on {card.hardware_title}",
        wrap(f"{card.backend} · {card.measured_with} · measured {card.measured_at or 'unknown'} · run {card.run_id}{scale}"),
        wrap(f"Figures: {card.source}."),
        *([wrap(line)] if (line := time_line(card)) else []),
        "",
        table_of([[value for _, value, _ in figures], [what for _, _, what in figures]], [name for name, _, _ in figures]),
        "",
        *(wrap(line) for line in summary_lines(card, findings)),
        "",
        f"{h2}Scores",
        table_of(header_rows(card, scores), ["", ""]),
        "",
        f"{h2}Model",
        table_of(model_rows(card) or [("—", "not in the catalog")], ["", ""]),
        "",
        f"{h2}{quality_heading(card)}",
        table_of(quality_rows(card), ["benchmark", "score", "source"]),
        "",
        f"{h2}Decode throughput, total tok/s at c=10",
        table_of([[fmt_tps(total) for _, total in decode_totals(card)]], [label for label, _ in decode_totals(card)]),
        "",
        f"{h2}Workloads",
        # a quality-only run measured none: its empty table's header alone was wider than a terminal
        table_of(*reversed(without_empty_columns(list(WORKLOAD_COLUMNS), rows))) if (rows := workload_rows(card)) else "(none measured)",
        *([wrap(WORKLOAD_NOTE)] if rows else []),
        *([wrap(verdict)] if (verdict := precision_verdict(card)) else []),
        *(wrap(f"- {name}: {notes}", hanging="  ") for name, notes in workload_notes(card)),
        "",
        f"{h2}Findings",
        *(wrap(f"- {finding}", hanging="  ") for finding in findings or ["(none)"]),
        "",
        *_details(card, scores, markdown=markdown, wrap=wrap, table_of=table_of, predictions=predictions, uncovered=uncovered, cost=cost),
    ]
    return "\n".join(out) + "\n"

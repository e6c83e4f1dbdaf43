"""What a card says of each workload, as the seed card does: one block per workload (what it is,
the runner that drove it, its parameters, its figures, the exact command), the two-line summary
at the top, and commands that a reader can paste and run.

Shared by the terminal card and the site's card page, so that both say the same thing.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence

from attrs import frozen

from arena_core.loadgen.cache_state import intended_range
from arena_core.report.capacity_card import capacity_headline, capacity_probes
from arena_core.report.formats import fmt_seconds, fmt_tps
from arena_core.report.seed_figures import rate_served, throughput_headline
from arena_core.results.findings import ttft_is_mean
from arena_core.run.manifest import MEASURED_BY_ARENA
from arena_core.types import CardWorkload, ModelCard

#: How the reference tools name the model: the API name (``--model``), the tokenizer, and the
#: name the server answers to when it is not the model's id (runners.md, A and B).
MODEL_FLAG, TOKENIZER_FLAG, SERVED_FLAG = "--model", "--tokenizer", "--served-model-name"


@frozen(kw_only=True)
class WorkloadBlock:
    """One workload on a card: what it is and how it was driven, its figures as measured, and
    the commands that reproduce it (label, command written on several lines)."""

    name: str
    title: str
    description: str
    runner: str
    parameters: str
    per_user_tps: str
    #: what ``per_user_tps`` is: one user's decode speed (closed loop), the seed's figure (open loop)
    per_user_label: str
    total_tps: str
    #: what ``total_tps`` counts: every user's decode (closed loop), input and output tokens (open loop)
    total_label: str
    ttft: str
    ttft_p50: str
    #: what ``ttft_p50`` is: "TTFT p50", or "TTFT mean" where the source gave a mean (:func:`ttft_is_mean`)
    ttft_label: str
    served: str
    #: the request rate served, and what it is of ("of 0.30 req/s asked"), for a big figure
    served_rate: str
    served_of: str
    verdict: str
    notes: str
    #: what the server's prefix cache did, beside what the workload intends
    cache: str
    #: what its answers did with the tools offered, and its sessions' times (agents); "" for none
    tools: str
    #: its per-turn figures, one row a turn (:data:`TURN_COLUMNS`); empty where it has none
    turns: tuple[tuple[str, ...], ...]
    commands: tuple[tuple[str, str], ...]


def runnable_command(command: str, hf_model: str = "") -> str:
    """``command`` as a reader runs it: the model named by its Hugging Face id (``--model`` and
    ``--tokenizer``; the server's own name for it kept as ``--served-model-name``), every word
    shell-quoted, one option per line."""
    try:
        words = shlex.split(command)
    except ValueError:  # not a shell command (an imported card's text): shown as it is
        return command
    if hf_model and MODEL_FLAG in words[:-1]:
        at = words.index(MODEL_FLAG) + 1
        served = words[at]
        if served != hf_model:
            words[at] = hf_model
            if SERVED_FLAG not in words:
                words[at + 1 : at + 1] = [SERVED_FLAG, served]
        if TOKENIZER_FLAG in words[:-1]:
            words[words.index(TOKENIZER_FLAG) + 1] = hf_model  # a local path means nothing on the reader's machine
        else:
            words[at + 1 : at + 1] = [TOKENIZER_FLAG, hf_model]
    return _one_option_per_line(words)


def _one_option_per_line(words: Sequence[str]) -> str:
    """The program's words on the first line, then each ``--option`` with its values on its own."""
    lines: list[list[str]] = [[]]
    for word in words:
        if word.startswith("--") and lines[-1]:
            lines.append([])
        lines[-1].append(shlex.quote(word))
    return " \\\n  ".join(" ".join(line) for line in lines)


#: The shape of the seed site's literal multi-turn command (``--depth 4``: one turn, 4 tokens of
#: history), as a cards file states what its runs measured (``measured_shapes``).
SEED_LITERAL_SHAPE = {"turns": 1, "depth": 4}


def seed_literal(command: str) -> str | None:
    """The seed site's literal multi-turn command, from Arena's: ``--depth 4`` (llama-benchy reads
    it as 4 tokens of history, not the five turns the seed card describes; workloads.md)."""
    if "--depth 0 2560 5120 7680 10240" not in command:
        return None
    return command.replace("--depth 0 2560 5120 7680 10240", "--depth 4").replace(" --enable-prefix-caching", "")


def commands_of(line: CardWorkload, hf_model: str = "", *, ran_literal: bool = False) -> list[tuple[str, str]]:
    """(label, command) of a workload: Arena's reference command, and for multi-turn the seed's
    literal one beside it, labelled; each runnable as written (:func:`runnable_command`). Where
    the figures were measured by the literal one (``ran_literal``: an imported run whose source
    ran it), that one comes first, labelled as what measured them."""
    if not line.command:
        return []
    found = [(line.name, runnable_command(line.command, hf_model))]
    if literal := seed_literal(line.command):
        if ran_literal:
            return [
                (
                    f"{line.name} as the seed site ran it, which measured these figures (4 tokens of history, not five turns)",
                    runnable_command(literal, hf_model),
                ),
                (f"{line.name} as Arena runs it (five turns)", found[0][1]),
            ]
        found.append((f"{line.name}, the seed site's literal command (measures 4 tokens of history, not five turns)", runnable_command(literal, hf_model)))
    return found


def _ran_literal(card: ModelCard, name: str) -> bool:
    """Whether the card's source ran ``name`` as the seed's literal multi-turn command (its shape
    has :data:`SEED_LITERAL_SHAPE`'s fields, whatever else it says, such as its prompt's tokens)."""
    shape = card.measured_shapes.get(name) or {}
    return all(shape.get(key) == value for key, value in SEED_LITERAL_SHAPE.items())


#: How a shape's changed fields are said (a card's ``measured_shapes``), the rest as "key value".
_SHAPE_WORDS = {
    "turns": lambda n: f"{n} turn{'s' if n != 1 else ''}",
    "depth": lambda n: f"{n} tokens of history",
    "prompt_tokens": lambda n: f"prompts of {n:,} tokens as its server counted them",
}


def _as_measured(card: ModelCard, name: str) -> str:
    """ "Measured as its source ran it: 1 turn, 4 tokens of history." where a card's source ran
    the workload in another shape than Arena's (what the figures are of); else ""."""
    shape = card.measured_shapes.get(name)
    if not shape:
        return ""
    said = ", ".join(_SHAPE_WORDS[key](value) if key in _SHAPE_WORDS else f"{key} {value}" for key, value in shape.items())
    return f"Measured as its source ran it: {said}: the figures below are of that, not of the workload as described."


def _runner(line: CardWorkload) -> str:
    """ "closed loop, as llama-benchy": the loop and the reference tool, the program of its command."""
    tool = line.command.split(" --", 1)[0].strip() if line.command else ""
    kind = "open loop" if line.open_loop else "closed loop"
    return f"{kind}, as {tool}" if tool else kind


def _notes(card: ModelCard, line: CardWorkload) -> str:
    """A line's reasons and labels, less the import's attribution (the card says it once)."""
    said = f"imported: {card.source}"
    return "; ".join(note for note in (*line.reasons, *line.labels) if note != said)


def per_user_figure(line: CardWorkload) -> tuple[float | None, str]:
    """A workload's per-user figure and what it is: one user's decode speed (closed loop), or
    the seed's G of an open-loop run, its total throughput over its peak requests in flight (an
    Arena run's own tokens/s is its output throughput: the G is computed alike for both), the peak
    said so that the figure can be recomputed from the total beside it."""
    if not line.open_loop:
        return line.tokens_per_second, "tok/s per user"
    peak = line.metrics.get("peak_concurrency")
    return line.site_tps, f"tok/s per request in flight (the seed's: the total ÷ {peak:.0f} at peak)" if peak else "tok/s per request in flight (the seed's)"


def workload_blocks(card: ModelCard) -> list[WorkloadBlock]:
    """A block per workload of the suite the run measured, in the suite's order, then any other
    it measured (probes, optional workloads)."""
    blocks = []
    others = sorted((line for line in card.workloads if line.name not in card.expected), key=lambda line: (_probe_load(line.name), line.name))
    names = [name for name in card.expected if card.workload(name)] + [line.name for line in others]
    for name in names:
        line = card.workload(name)
        assert line is not None
        legend = card.legend.get(name)
        total = line.metrics.get("total_tps") if line.open_loop else line.metrics.get("decode_tps_total")
        middle = "mean" if ttft_is_mean(card, line) else "p50"
        per_user, per_user_label = per_user_figure(line)
        ttft = " · ".join(
            f"{label} {fmt_seconds(value)}"
            for label, value in ((middle, line.ttft_p50_s), ("p90", line.metrics.get("ttft_p90_s")), ("p99", line.metrics.get("ttft_p99_s")))
            if value is not None
        )
        blocks.append(
            WorkloadBlock(
                name=name,
                title=legend.title if legend else name,
                description=" ".join(part for part in (legend.description if legend else "", _as_measured(card, name)) if part),
                runner=_runner(line),
                parameters=legend.parameters if legend else "",
                per_user_tps=fmt_tps(per_user),
                per_user_label=per_user_label,
                total_tps=fmt_tps(total),
                total_label="tok/s in all, input and output" if line.open_loop else "tok/s in all",
                ttft=ttft or "—",
                ttft_p50=fmt_seconds(line.ttft_p50_s),
                ttft_label=f"TTFT {middle}",
                served=rate_served(line),
                served_rate=f"{served:.2f}" if (served := line.metrics.get("request_throughput")) is not None else "",
                served_of=f"req/s served of {asked:.2f} asked" if (asked := line.metrics.get("requested_rate")) else "req/s served",
                verdict="valid" if line.valid else "INVALID",
                notes=_notes(card, line),
                cache=cache_line(line.metrics) if card.source == MEASURED_BY_ARENA else "prompt cache: not stated by the source",
                tools=tool_line(line.metrics),
                turns=turn_rows(line.metrics),
                commands=tuple(commands_of(line, card.model_facts.hf_model, ran_literal=_ran_literal(card, name))),
            )
        )
    return blocks


#: A per-turn table's columns (an agents workload's ``turn_N_*`` figures), and each one's metric.
TURN_COLUMNS = ("turn", "answered", "TTFT p50", "context", "prefilled", "cached", "latency p50")
TURN_FIGURES = ("requests", "ttft_p50_s", "context_tokens", "prefilled_tokens", "cache_hit_rate", "latency_p50_s")
#: The most turns a table shows (the rest are in the result's metrics).
MOST_TURNS_SHOWN = 32


def turn_rows(metrics: Mapping[str, float | None]) -> tuple[tuple[str, ...], ...]:
    """One row a turn, from 1, of the ``turn_N_*`` figures a workload measured."""
    rows = []
    for number in range(1, MOST_TURNS_SHOWN + 1):
        if metrics.get(f"turn_{number}_requests") is None:
            break
        answered, first, context, prefilled, hit, latency = (metrics.get(f"turn_{number}_{name}") for name in TURN_FIGURES)
        rows.append((
            str(number), f"{answered:.0f}", fmt_seconds(first), f"{context:,.0f}" if context is not None else "—",
            f"{prefilled:,.0f}" if prefilled is not None else "—", f"{hit:.1%}" if hit is not None else "—", fmt_seconds(latency),
        ))  # fmt: skip
    return tuple(rows)


def tool_line(metrics: Mapping[str, float | None]) -> str:
    """ "tool calls: 51.2 % right (42 of 82 answers); 24.4 % did not parse; …" and the sessions'
    times, for a workload whose requests offered tools; "" for one whose did not."""
    answered = metrics.get("tool_calls_answered")
    if not answered:
        return ""
    right, broken = metrics.get("tool_call_accuracy") or 0.0, metrics.get("tool_call_parse_failure_rate") or 0.0
    text, missing = metrics.get("tool_calls_as_text_rate") or 0.0, metrics.get("tool_calls_missing_rate") or 0.0
    said = f"tool calls: {right:.1%} right ({round(right * answered):.0f} of {answered:.0f} answers); {broken:.1%} did not parse"
    said += f"; {text:.1%} written as text (the server's tool parser is off)" if text else ""
    said += f"; {missing:.1%} made no call" if missing else ""
    if (sessions := metrics.get("sessions")) and (middle := metrics.get("session_seconds_p50")) is not None:
        said += f" · {sessions:.0f} sessions, each {fmt_seconds(middle)} p50 ({fmt_seconds(metrics.get('session_seconds_max'))} at most), tool delays included"
    return said


#: The cache-states runner's TTFTs, in the order the card says them.
CACHE_STATE_TTFTS = (("cold", "ttft_cold_p50_s"), ("uncached", "ttft_uncached_p50_s"), ("prefix hit", "ttft_prefix_p50_s"))


def cache_state_ttfts(metrics: Mapping[str, float | None]) -> str:
    """ "TTFT by cache state (p50): cold 3.09 s · uncached 3.15 s · prefix hit 226 ms · ", where
    the workload measured them ("not measured" for a state it could not, such as cold)."""
    if metrics.get("ttft_uncached_p50_s") is None:
        return ""
    said = " · ".join(f"{label} {fmt_seconds(value) if (value := metrics.get(key)) is not None else 'not measured'}" for label, key in CACHE_STATE_TTFTS)
    return f"TTFT by cache state (p50): {said} · "


def cache_line(metrics: Mapping[str, float | None]) -> str:
    """ "prompt cache: 6.8 % of prompt tokens (intended 0 %; 5.4 % the chat template's opening)",
    with the server's own counters beside it (``/metrics``: agreeing, or the difference said), or
    those alone where the answers' usage did not say (every result states its cache state)."""
    states = cache_state_ttfts(metrics)
    measured = metrics.get("prompt_cache_hit_rate")
    counted = metrics.get("prefix_cache_hit_rate")
    if measured is None:
        if counted is not None:
            return (
                states
                + f"prompt cache: {counted:.1%} of prompt tokens by the server's counters (/metrics, over the workload's window; its answers' usage did not say)"
            )
        return states + "prompt cache: not recorded (the server did not say, or the engine that measured this does not read it)"
    template = metrics.get("prompt_cache_template_rate") or 0.0
    return (
        states
        + f"prompt cache: {measured:.1%} of prompt tokens (intended {intended_range(metrics)}"
        + (f"; {template:.1%} the chat template's opening)" if template >= 0.0005 else ")")
        + _counted_beside(measured, counted)
    )


#: Within this many points the answers' usage and the server's counters are said to agree.
CACHE_COUNTERS_AGREE = 0.02


def _counted_beside(measured: float, counted: float | None) -> str:
    if counted is None:
        return ""
    if abs(counted - measured) <= CACHE_COUNTERS_AGREE:
        return f"; the server's counters agree ({counted:.1%})"
    return f"; the server's counters say {counted:.1%} ({(counted - measured) * 100:+.1f} points: they also count the session's warm-up and probes)"


def _probe_load(name: str) -> float:
    """A capacity probe's load from its name ("chat-users-4" → 4), so probes read in order."""
    tail = name.rsplit("-", 1)[-1]
    try:
        return float(tail)
    except ValueError:
        return math.inf


def summary_lines(card: ModelCard, findings: Sequence[str]) -> list[str]:
    """The card's two-line summary, written from its own figures: the headline workload as one of
    ten users sees it, then what the findings say first (the prefill wall, a saturated workload)."""
    first = []
    line = card.workload(card.layout.headline) if card.layout.headline else None
    if line is not None and line.tokens_per_second is not None:
        total = line.metrics.get("decode_tps_total")
        first.append(
            f"{line.name.capitalize()} for ten users at once: {fmt_tps(line.tokens_per_second)} tok/s each"
            + (f" ({fmt_tps(total)} in all)" if total is not None else "")
            + (f", first token in {fmt_seconds(line.ttft_p50_s)}" if line.ttft_p50_s is not None else "")
        )
    throughput, count = throughput_headline(card)
    if throughput is not None:
        first.append(f"{fmt_tps(throughput)} tok/s mean throughput over {count} workloads ({card.benches()} measured).")
    said = [f for f in findings if f.startswith(("Prefill wall", "Saturated", "Served"))] or [f for f in findings if not f.startswith("Did not")]
    if not first and (probes := capacity_probes(card)):
        first.append(f"A capacity search of {len(probes)} probes, not the standard workloads: {capacity_headline(card)}")
    return [("; ".join(first) if first else "No workload measured."), *said[:1]]

"""Model cards: what a card shows and a scorer reads, one run of one model on one machine."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import field, frozen
from attrs.validators import optional

from arena_core import bounds
from arena_core.types.models import ModelSpec, QualityScore
from arena_core.types.quality import MeasuredQuality


@frozen(kw_only=True)
class CardWorkload:
    """One workload's line on a model card. ``tokens_per_second`` and ``ttft_p50_s`` are the two
    figures the score uses; the ``*_low``/``*_high`` pairs are their 95 % intervals where known."""

    name: str
    tokens_per_second: float | None
    ttft_p50_s: float | None
    valid: bool = True
    scale: float = 1.0
    custom: str = ""
    tokens_per_second_low: float | None = None
    tokens_per_second_high: float | None = None
    ttft_p50_low_s: float | None = None
    ttft_p50_high_s: float | None = None
    reasons: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    command: str | None = None
    metrics: Mapping[str, float | None] = field(factory=dict)

    @property
    def open_loop(self) -> bool:
        """Whether the figures are an open-loop workload's (a request rate, total throughput)."""
        return any(key in self.metrics for key in ("total_tps", "site_tps", "requested_rate"))

    @property
    def site_tps(self) -> float | None:
        """The seed site's throughput G of this workload: open loop, total token throughput ÷ peak
        concurrent requests; closed loop, total decode tokens/s (at c = 10). None when not measured."""
        metrics = self.metrics
        if not self.open_loop:
            return metrics.get("decode_tps_total")
        if metrics.get("site_tps") is not None:
            return metrics["site_tps"]
        total, peak = metrics.get("total_tps"), metrics.get("peak_concurrency")
        return total / peak if total is not None and peak else None


@frozen(kw_only=True)
class ModelFacts:
    """What a run's manifest or an imported card says of its model beyond the catalog entry:
    what the model is (for a card and for a predictor of a model the catalog lacks) and the
    scores the seed site published for it."""

    hf_model: str = ""
    served_name: str = ""
    vendor: str = ""
    architecture: str = ""
    precision: str = ""
    size_bucket: str = ""
    params_total_b: float | None = None
    params_active_b: float | None = None
    context_k: float | None = None
    cohort_confidence: str = ""
    published_scores: Mapping[str, float] = field(factory=dict)
    #: what the server reported of the model it serves (:mod:`arena_core.run.identity`): vLLM's
    #: ``root``, the model file's name, a GGUF file's ``general.name`` and quantisation, its size
    served_root: str = ""
    model_file: str = ""
    gguf_name: str = ""
    quantisation: str = ""
    file_gb: float | None = None
    #: the name a served folder's config.json gives its model (``_name_or_path``)
    config_name: str = ""
    #: where the run's model name came from, and a digest of the facts that tell models apart
    identity: str = ""
    fingerprint: str = ""

    @classmethod
    def of(cls, facts: Mapping[str, Any]) -> ModelFacts:
        """The facts a stored dict holds, each of its type (checked where the dict was written:
        a run's manifest, an import); anything else in it is left out, never guessed."""
        known: dict[str, Any] = {}
        for name, kind in _FACT_KINDS.items():
            value = facts.get(name)
            if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
                known[name] = float(value)
            elif kind is str and isinstance(value, str):
                known[name] = value
        scores = facts.get("published_scores")
        if isinstance(scores, Mapping):
            known["published_scores"] = {str(k): float(v) for k, v in scores.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        return cls(**known)

    def spec(self, name: str, title: str) -> ModelSpec | None:
        """The model these facts describe, for a catalog that lacks it (the physical ceiling, a
        prediction); a model whose active parameters are not stated is taken as dense. None when
        the precision or the parameters are missing, or out of bounds."""
        if not self.precision or self.params_total_b is None:
            return None
        try:
            return ModelSpec(
                name=name,
                title=title,
                description="as its card describes it",
                hf_id=self.hf_model,
                precision=self.precision,
                params_total_b=self.params_total_b,
                params_active_b=self.params_active_b or self.params_total_b,
            )
        except (TypeError, ValueError):
            return None


_FACT_KINDS = {
    "hf_model": str,
    "served_name": str,
    "vendor": str,
    "architecture": str,
    "precision": str,
    "size_bucket": str,
    "params_total_b": float,
    "params_active_b": float,
    "context_k": float,
    "cohort_confidence": str,
    "served_root": str,
    "model_file": str,
    "gguf_name": str,
    "quantisation": str,
    "file_gb": float,
    "identity": str,
    "fingerprint": str,
}


@frozen(kw_only=True)
class HardwareRoofs:
    """The roofs a run ran under, as it measured them (a CPU host's are measured at run time)."""

    memory_bandwidth_gbs: float | None = None
    dense_tflops: Mapping[str, float] = field(factory=dict)


#: The server settings a cards file may state as counts, each with its bounds.
SERVER_COUNTS = {"token_budget": bounds.COUNT, "slots": bounds.CONCURRENCY, "speculative_tokens": bounds.DRAFT_TOKENS}


@frozen(kw_only=True)
class ServerSettings:
    """What a cards file or a backend says of the server's settings a prediction reads: its KV
    cache's type and, where the server was not at its engine's defaults, the tokens one step
    takes (vLLM's ``max_num_batched_tokens``) and the sequences it serves at once
    (``max_num_seqs``); None: the engine's default, as its backend declares it."""

    kv_cache_dtype: str = ""
    token_budget: int | None = field(default=None, validator=optional(SERVER_COUNTS["token_budget"]))
    slots: int | None = field(default=None, validator=optional(SERVER_COUNTS["slots"]))
    #: Draft tokens a step of speculative decoding (vLLM's ``num_speculative_tokens``, as MTP
    #: runs it); None: none. Such a run is simulated with them, at an assumed acceptance, and
    #: left out of every fit, its results in the ledger where their error shows.
    speculative_tokens: int | None = field(default=None, validator=optional(SERVER_COUNTS["speculative_tokens"]))
    #: The server ran its low-precision checkpoint's GEMMs through a weight-only kernel that
    #: computes in 16 bits (vLLM's Marlin, as ``VLLM_NVFP4_GEMM_BACKEND=marlin`` or
    #: ``--moe-backend marlin`` choose it), where its backend's declared precision paths do not
    #: say so: its prefill is simulated at the 16-bit roof.
    sixteen_bit_compute: bool = False
    #: The server kept a conversation's earlier turns in its prefix cache (True) or prefilled
    #: them again each turn (False: vLLM's ``--no-enable-prefix-caching``, as Arena starts it on
    #: a DGX Spark); None: not said, the backend's default.
    prefix_caching: bool | None = None


@frozen(kw_only=True)
class CardSlo:
    """The SLO a card's goodput and capacity are judged by: described, its name, its target share."""

    objective: str = ""
    name: str = ""
    target: float = 0.95
    #: the objective's limit on the time to first token (a TTFT chart draws it)
    ttft_s: float | None = None


@frozen(kw_only=True)
class WorkloadLegend:
    """A workload as a card explains it: title, what it measures, its parameters (standard size)."""

    title: str
    description: str
    parameters: str


@frozen(kw_only=True)
class CardLayout:
    """Which workloads a card's headline, rows and findings read: the roles and labels the
    workload plugins declare (:data:`~arena_core.types.workloads.ROLES`), fixed when the card is
    built so renderers name no workload themselves."""

    headline: str | None = None
    #: (label, workload) of the "decode throughput, total" row, in registration order
    totals: tuple[tuple[str, str], ...] = ()
    #: (short, long): the prefill-wall finding's pair of contexts
    prefill_wall: tuple[str, str] | None = None
    #: findings compare models under the first of these both measured
    compared: tuple[str, ...] = ()
    #: the server's facts shown beside the backend (as the backend declares them)
    backend_facts: tuple[str, ...] = ()

    def label(self, workload: str) -> str:
        """A workload's label in the totals row, else its name."""
        return next((label for label, name in self.totals if name == workload), workload)


def benches_count(expected: Sequence[str], measured: Iterable[str]) -> str:
    """The benches a run measured, as every page counts them: of the standard suite ``expected``
    ("9/9"), the extras apart ("9/9 + 1 extra"), never an extra counted into the suite."""
    done = set(measured)
    extra = len(done - set(expected))
    return f"{sum(1 for name in expected if name in done)}/{len(expected)}" + (f" + {extra} extra" if extra else "")


@frozen(kw_only=True)
class ModelCard:
    """What a model card shows and a scorer reads: one run of one model on one machine.

    ``workloads`` holds what completed; ``expected`` names every workload of the suite, so a
    missing one is shown "—" and scores 0. ``source`` says where the figures came from (measured
    by Arena, or imported from a reference tool's file).
    """

    run_id: str
    model: str
    model_title: str
    hardware: str
    hardware_title: str
    backend: str
    #: How it was measured: ``native``, ``external``, or what an imported card says of its
    #: engine and tools.
    measured_with: str
    measured_at: str
    source: str
    #: for a run imported from a signed bundle: who signed it and what was recomputed ("" otherwise)
    signed_by: str = ""
    expected: tuple[str, ...]
    workloads: tuple[CardWorkload, ...]
    quality: tuple[QualityScore, ...] = ()
    #: quality measured on the served model by the run's quality suites
    measured_quality: tuple[MeasuredQuality, ...] = ()
    #: a capacity search's suites asked again at its capacity, ``quality_load`` at once
    quality_under_load: tuple[MeasuredQuality, ...] = ()
    quality_load: int | None = None
    model_memory_gb: float | None = None
    model_memory_source: str | None = None
    #: no memory was measured or stated: ``model_memory_gb`` is the weights' size (labelled so)
    model_memory_estimated: bool = False
    #: the run's time: the budget its scale was chosen to fit, the time expected before it
    #: started, and the time it took (seconds; None where not known)
    budget_s: float | None = None
    expected_s: float | None = None
    took_s: float | None = None
    #: what keeping the budget changed while the run ran, in words ("" where nothing did)
    budget_changes: tuple[str, ...] = ()
    #: what telemetry could not read (no NVML, RAPL hidden, a server on another machine): why a
    #: card without energy figures says "not measured"
    telemetry_notes: tuple[str, ...] = ()
    #: the run's status in its manifest (complete, interrupted, ...)
    status: str = ""
    #: the address of the server measured, where Arena attached to one ("" for a server it started)
    server: str = ""
    #: what the backend said of the server it ran (version, command, settings): its own words
    backend_facts: Mapping[str, Any] = field(factory=dict)
    hardware_reason: str = ""
    hardware_memory: str | None = None
    hardware_roofs: HardwareRoofs | None = None
    model_facts: ModelFacts = ModelFacts()
    #: an imported card's workloads that ran another shape than Arena's of that name
    measured_shapes: Mapping[str, Mapping[str, int]] = field(factory=dict)
    server_settings: ServerSettings = ServerSettings()
    slo: CardSlo = CardSlo()
    #: each workload of the card explained, by name
    legend: Mapping[str, WorkloadLegend] = field(factory=dict)
    layout: CardLayout = CardLayout()

    def workload(self, name: str) -> CardWorkload | None:
        return next((w for w in self.workloads if w.name == name), None)

    @property
    def measured_benches(self) -> tuple[str, ...]:
        """The standard suite's workloads this run measured (an extra one is not of them)."""
        return tuple(name for name in self.expected if self.workload(name) is not None)

    @property
    def extra_benches(self) -> tuple[str, ...]:
        """The workloads measured beside the standard suite (an optional one, a capacity probe)."""
        return tuple(line.name for line in self.workloads if line.name not in self.expected)

    def benches(self) -> str:
        """The one count every page shows (:func:`benches_count`)."""
        return benches_count(self.expected, [line.name for line in self.workloads])

    def quality_basis(self) -> tuple[tuple[float, ...], str]:
        """The quality figures a score's Q averages, and their kind: the published scores where
        the card has any ("published"), else the measured figures of suites comparable with a
        published benchmark ("measured"), else none ("")."""
        published = tuple(q.value for q in self.quality if q.value is not None)
        if published:
            return published, "published"
        measured = tuple(m.value for m in self.measured_quality if m.benchmark)
        return measured, "measured" if measured else ""

    def published(self, benchmark: str) -> float | None:
        """The published figure of ``benchmark`` on this card, if any."""
        return next((q.value for q in self.quality if q.benchmark == benchmark and q.value is not None), None)

    @property
    def scale(self) -> float:
        return min((w.scale for w in self.workloads), default=1.0)

    @property
    def custom(self) -> tuple[str, ...]:
        """The workloads measured on a changed shape, each with its change ("chat: concurrency=1")."""
        return tuple(f"{w.name}: {w.custom}" for w in self.workloads if w.custom)

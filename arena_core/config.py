"""Configuration: ``arena.toml`` (or ``--config FILE``) into frozen attrs classes.

One cattrs converter, strict: unknown keys are errors, ``"10"`` is not an integer, and every
error names the file and the key path (``arena.toml: $.workloads.chat.concurency: unknown key``).
Checking names against what the plugins registered is a second step, :func:`check_config`.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs
from attrs import field, frozen
from cattrs.errors import ClassValidationError, IterableValidationError
from cattrs.gen import make_dict_structure_fn, override

from arena_core import bounds
from arena_core.converter import CONVERTER, Fraction, Scale, Weight, join_key, structure_problems, with_todays_names
from arena_core.errors import ConfigError, UnknownNameError
from arena_core.files import unreadable
from arena_core.registry import Registry
from arena_core.types import AgentShape, ClosedLoopShape, EndpointSettings, OpenLoopShape, WorkloadSpec

DEFAULT_CONFIG_FILE = "arena.toml"
MAX_CONFIG_BYTES = 2**20


@frozen(kw_only=True)
class RunSection:
    """``[run]``: what ``arena run`` measures when the command line does not say."""

    model: str | None = None
    backend: str | None = None
    hardware: str | None = None  # None: detect
    workloads: tuple[str, ...] = ()  # empty: all registered workloads
    instrument: Literal["native", "external"] = "native"
    scale: Scale = Scale(1.0)
    output: str = "arena-results"
    #: what to call a model the catalog lacks (default: from what its server reports)
    model_title: str | None = None
    #: measure each closed-loop workload until precise to this margin at 95 % ("5%"); see --precision
    precision: str | None = None


#: ``[endpoint]``: an existing server. The key itself never goes in this file.
EndpointSection = EndpointSettings


@frozen(kw_only=True)
class WorkloadOverride:
    """``[workloads.NAME]``: changes to one workload's parameters; unset fields keep the default.

    Only types are checked here; the ranges are the workload shape's own rules, applied (and
    reported with this file's key path) by :func:`apply_override`.
    """

    prompt_tokens: int | None = None
    generated_tokens: int | None = None
    depth: int | None = None
    turns: int | None = None
    concurrency: int | None = None
    runs: int | None = None
    request_rate: float | None = None
    burstiness: float | None = None
    num_prompts: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    range_ratio: float | None = None
    max_concurrency: int | None = None
    agents: int | None = None
    tool_delay_s: tuple[float, float] | None = None
    seed: int | None = None


@frozen(kw_only=True)
class ScoringProfileConfig:
    """``[scoring.profiles.NAME]``: the weights of one scoring profile."""

    quality_weight: Fraction
    speed_share: Fraction
    workload_weights: dict[str, Weight] = field(factory=dict)


@frozen(kw_only=True)
class ScoringSection:
    profiles: dict[str, ScoringProfileConfig] = field(factory=dict)


@frozen(kw_only=True)
class SloSection:
    """``[slo]``: the service-level objective goodput and attainment are judged by (capacity.md):
    a named set (``interactive``, ``relaxed``, ``batch``) or limits, e.g. ``"ttft=2s,tps=10"``."""

    objective: str | None = None  # None: the SLO a run recorded (a capacity search's), else interactive


CURRENCY = re.compile(r"[A-Za-z€$£¥]{1,8}")


def _currency(_: object, __: object, value: str) -> None:
    if not CURRENCY.fullmatch(value):
        raise ValueError(f"a currency is 1 to 8 letters or one of € $ £ ¥, got {value[:40]!r}")


@frozen(kw_only=True)
class CostSection:
    """``[cost]``: what a million output tokens cost on this box at the capacity a search found:
    the electricity its measured power draws at that load (``price_per_kwh``) and, where
    ``hardware_price`` is given, the hardware paid off over ``lifetime_years`` of which it serves
    a ``utilisation`` share of the hours."""

    price_per_kwh: float | None = field(default=None, validator=attrs.validators.optional(bounds.PRICE))
    currency: str = field(default="EUR", validator=_currency)
    hardware_price: float | None = field(default=None, validator=attrs.validators.optional(bounds.PRICE))
    lifetime_years: float = field(default=3.0, validator=bounds.LIFETIME_YEARS)
    utilisation: float = field(default=1.0, validator=bounds.UTILISATION)

    @property
    def given(self) -> bool:
        """Whether the section says anything to cost with."""
        return self.price_per_kwh is not None or self.hardware_price is not None

    def terms(self) -> str:
        """The inputs in one line, said beside every cost figure: "at each run's capacity, from
        electricity at 0.3 EUR/kWh and hardware of 1500 EUR over 3 years at 100% of the hours"."""
        parts = [f"electricity at {self.price_per_kwh:g} {self.currency}/kWh"] if self.price_per_kwh is not None else []
        if self.hardware_price is not None:
            parts.append(
                f"hardware of {self.hardware_price:g} {self.currency} over {self.lifetime_years:g} years at {self.utilisation * 100:.3g}% of the hours"
            )
        return "cost per million output tokens at each run's capacity (its newest capacity search), from " + " and ".join(parts)


@frozen(kw_only=True)
class BundlesSection:
    """``[bundles]``: the keys a store's maintainer trusts (docs/bundles.md): a file of one
    ``SHA256:... name`` a line, and whether ``arena import`` marks (``mark``) or refuses
    (``refuse``) a bundle signed by any other key. ``--trusted-keys`` and ``--untrusted`` win."""

    trusted_keys: str | None = None
    untrusted: Literal["mark", "refuse"] = "mark"

    def trusted_keys_file(self, given: Path | None) -> Path | None:
        """The trusted-keys file: ``given`` (``--trusted-keys``), else the section's, else none."""
        return given or (Path(self.trusted_keys).expanduser() if self.trusted_keys else None)


@frozen(kw_only=True)
class ArenaConfig:
    """The whole configuration file; every section is optional."""

    run: RunSection = RunSection()
    endpoint: EndpointSection = EndpointSection()
    workloads: dict[str, WorkloadOverride] = field(factory=dict)
    scoring: ScoringSection = ScoringSection()
    slo: SloSection = SloSection()
    cost: CostSection = CostSection()
    bundles: BundlesSection = BundlesSection()
    source: str = field(default="<defaults>", eq=False)  # where it was read from, for messages


# --- reading ---------------------------------------------------------------------------------


def parse_config(text: str, *, source: str = "<config>") -> ArenaConfig:
    """Parse and structure TOML text; :class:`ConfigError` names ``source`` and the key path."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"malformed TOML: {exc}", source=source, path=None) from None
    if "endpoint" in data and isinstance(data["endpoint"], dict) and "api_key" in data["endpoint"]:
        raise ConfigError(
            "API keys do not belong in config files; name an environment variable (api_key_env) or a file (api_key_file)",
            source=source,
            path="$.endpoint.api_key",
        )
    return structure_config(data, source=source)


def structure_config(data: Any, *, source: str) -> ArenaConfig:
    """Config data (from TOML, or as a run's manifest recorded it) as an :class:`ArenaConfig`.
    ``[run] engine``, an earlier Arena's name for ``instrument``, is read as that."""
    if isinstance(data, dict) and "run" in data:
        data = {**data, "run": with_todays_names(data["run"])}
    try:
        config = CONVERTER.structure(data, ArenaConfig)
    except (ClassValidationError, IterableValidationError) as exc:
        problems = list(structure_problems(exc, "$"))
        path, problem = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ConfigError(problem + more, source=source, path=path) from None
    return attrs.evolve(config, source=source)


def with_settings(config: ArenaConfig, settings: Sequence[str], workloads: Sequence[WorkloadSpec]) -> ArenaConfig:
    """``config`` with ``--set KEY=VALUE`` applied to each of ``workloads``, over the file's own
    ``[workloads.NAME]`` and by the same rules; a problem names ``--set``."""
    values: dict[str, Any] = {}
    for item in settings:
        key, sep, text = (part.strip() for part in item.partition("="))
        if not sep or not key:
            raise ConfigError(f"{item!r}: expected KEY=VALUE, such as concurrency=1", source="--set", path=None)
        try:
            values[key] = tomllib.loads(f"value = {text}")["value"]
        except tomllib.TOMLDecodeError:
            raise ConfigError(f"{item!r}: {text!r} is not a number", source="--set", path=None) from None
    for spec in workloads:
        for key in values:
            if key != "seed" and key not in attrs.fields_dict(type(spec.shape)):
                raise ConfigError(f"{key} does not apply to {spec.loop}-loop workload {spec.name!r}", source="--set", path=None)
    current = {name: {k: v for k, v in attrs.asdict(change).items() if v is not None} for name, change in config.workloads.items()}
    data = {"workloads": {spec.name: {**current.get(spec.name, {}), **values} for spec in workloads}}
    changed = structure_config(data, source="--set").workloads
    return attrs.evolve(config, workloads={**config.workloads, **changed})


def load_config(path: Path | str | None = None) -> ArenaConfig:
    """Read ``path``; with ``None``, ``./arena.toml`` if it exists, else the defaults."""
    if path is None:
        default = Path(DEFAULT_CONFIG_FILE)
        if not default.is_file():
            return ArenaConfig()
        path = default
    path = Path(path)
    if problem := unreadable(path, MAX_CONFIG_BYTES):
        raise ConfigError(problem, source=str(path), path=None)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("no such file", source=str(path), path=None) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", source=str(path), path=None) from None
    return parse_config(text, source=str(path))


# --- checking names against the registry -----------------------------------------------------


def check_config(config: ArenaConfig, registry: Registry) -> None:
    """Check every name and workload override in ``config`` against what plugins registered."""
    source = config.source
    run = config.run
    for key, kind in (("model", "models"), ("backend", "backends"), ("hardware", "hardware")):
        name = getattr(run, key)
        if name is not None and name not in registry.by_kind[kind]:
            _unknown(registry, kind, name, source, f"$.run.{key}")
    for index, name in enumerate(run.workloads):
        if name not in registry.workloads:
            _unknown(registry, "workloads", name, source, f"$.run.workloads[{index}]")
    for name, change in config.workloads.items():
        if name not in registry.workloads:
            _unknown(registry, "workloads", name, source, join_key("$.workloads", name))
        apply_override(registry.workloads[name].item, change, source=source)
    for profile_name, profile in config.scoring.profiles.items():
        for name in profile.workload_weights:
            if name not in registry.workloads:
                path = join_key(join_key(join_key("$.scoring.profiles", profile_name), "workload_weights"), name)
                _unknown(registry, "workloads", name, source, path)


def _unknown(registry: Registry, kind: str, name: str, source: str, path: str) -> None:
    from arena_core.registry import KINDS

    raise UnknownNameError(KINDS[kind].singular, name, registry.names(kind), source=source, path=path)


def _kind(spec: WorkloadSpec) -> str:
    return "agent-session" if isinstance(spec.shape, AgentShape) else f"{spec.loop}-loop"


def apply_override(spec: WorkloadSpec, change: WorkloadOverride, *, source: str = "<config>") -> WorkloadSpec:
    """``spec`` with the fields ``change`` sets; a field of the other loop kind is an error."""
    values = {key: value for key, value in attrs.asdict(change).items() if value is not None}
    seed = values.pop("seed", spec.seed)
    shape_fields = attrs.fields_dict(type(spec.shape))
    for key in values:
        if key not in shape_fields:
            path = join_key(join_key("$.workloads", spec.name), key)
            raise ConfigError(f"does not apply to {_kind(spec)} workload {spec.name!r}", source=source, path=path)
    try:
        shape = attrs.evolve(spec.shape, **values)
    except (TypeError, ValueError) as exc:  # a rule across fields (the random dataset needs both lengths)
        raise ConfigError(str(exc), source=source, path=join_key("$.workloads", spec.name)) from None
    changed = {key: value for key, value in values.items() if getattr(spec.shape, key) != value}
    if seed != spec.seed:
        changed["seed"] = seed
    custom = ", ".join(filter(None, [spec.custom, *(f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}" for key, value in changed.items())]))
    return attrs.evolve(spec, seed=seed, shape=shape, custom=custom)


def _structure_override() -> Callable[[Any, type], WorkloadOverride]:
    """``[workloads.NAME]`` tables, each value checked by the rule of the shape field of the same
    name (the one place a range is written), so a bad value is reported at parse time with its
    key path."""
    rules = {}
    for shape in (ClosedLoopShape, OpenLoopShape, AgentShape):
        for name, shape_field in attrs.fields_dict(shape).items():
            if shape_field.validator is not None and name in attrs.fields_dict(WorkloadOverride):
                rules[name] = override(struct_hook=_checked(shape_field))
    rules["seed"] = override(struct_hook=_checked(attrs.fields_dict(WorkloadSpec)["seed"]))
    return make_dict_structure_fn(WorkloadOverride, CONVERTER, _cattrs_forbid_extra_keys=True, **rules)


def _checked(shape_field: attrs.Attribute) -> Callable[[Any, type], Any]:
    def structure(value: Any, _: type) -> Any:
        shape_field.validator(None, shape_field, value)  # type: ignore[misc]
        return value

    return structure


CONVERTER.register_structure_hook(WorkloadOverride, _structure_override())

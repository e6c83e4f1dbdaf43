"""Configuration: ``arena.toml`` (or ``--config FILE``) into frozen attrs classes.

One cattrs converter, strict: unknown keys are errors, ``"10"`` is not an integer, and every
error names the file and the key path (``arena.toml: $.workloads.chat.concurency: unknown key``).
Checking names against what the plugins registered is a second step, :func:`check_config`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, NewType, get_origin

import attrs
import cattrs
from attrs import field, frozen
from cattrs.cols import homogenous_tuple_structure_factory, is_sequence, list_structure_factory
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError
from cattrs.gen import make_dict_unstructure_fn, override

from arena_core.errors import ConfigError
from arena_core.registry import Registry
from arena_core.types import ClosedLoopShape, Endpoint, OpenLoopShape, WorkloadSpec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 is not supported, kept for tomli users
    import tomli as tomllib

DEFAULT_CONFIG_FILE = "arena.toml"

PositiveInt = NewType("PositiveInt", int)
NonNegativeInt = NewType("NonNegativeInt", int)
PositiveFloat = NewType("PositiveFloat", float)
NonNegativeFloat = NewType("NonNegativeFloat", float)
Fraction = NewType("Fraction", float)  # 0 <= x <= 1
RangeRatio = NewType("RangeRatio", float)  # 0 <= x < 1


@frozen(kw_only=True)
class RunSection:
    """``[run]``: what ``arena run`` measures when the command line does not say."""

    model: str | None = None
    backend: str | None = None
    hardware: str | None = None  # None: detect
    workloads: tuple[str, ...] = ()  # empty: all registered workloads
    engine: Literal["native", "external"] = "native"
    scale: PositiveFloat = PositiveFloat(1.0)
    output: str = "arena-results"


@frozen(kw_only=True)
class EndpointSection:
    """``[endpoint]``: an existing server. The key itself never goes in this file."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    api_key_file: str | None = None


@frozen(kw_only=True)
class WorkloadOverride:
    """``[workloads.NAME]``: changes to one workload's parameters; unset fields keep the default."""

    prompt_tokens: PositiveInt | None = None
    generated_tokens: PositiveInt | None = None
    depth: NonNegativeInt | None = None
    turns: PositiveInt | None = None
    concurrency: PositiveInt | None = None
    runs: PositiveInt | None = None
    request_rate: PositiveFloat | None = None
    burstiness: PositiveFloat | None = None
    num_prompts: PositiveInt | None = None
    input_tokens: PositiveInt | None = None
    output_tokens: PositiveInt | None = None
    range_ratio: RangeRatio | None = None
    max_concurrency: PositiveInt | None = None
    seed: int | None = None


@frozen(kw_only=True)
class ScoringProfileConfig:
    """``[scoring.profiles.NAME]``: the weights of one scoring profile."""

    quality_weight: Fraction
    speed_share: Fraction
    workload_weights: dict[str, NonNegativeFloat] = field(factory=dict)


@frozen(kw_only=True)
class ScoringSection:
    profiles: dict[str, ScoringProfileConfig] = field(factory=dict)


@frozen(kw_only=True)
class ArenaConfig:
    """The whole configuration file; every section is optional."""

    run: RunSection = RunSection()
    endpoint: EndpointSection = EndpointSection()
    workloads: dict[str, WorkloadOverride] = field(factory=dict)
    scoring: ScoringSection = ScoringSection()
    source: str = field(default="<defaults>", eq=False)  # where it was read from, for messages


# --- the converter ---------------------------------------------------------------------------


def _strict_int(value: Any, _: type) -> int:
    if type(value) is not int:
        raise TypeError(f"expected an integer, got {_describe(value)}")
    return value


def _strict_float(value: Any, _: type) -> float:
    if type(value) not in (int, float):
        raise TypeError(f"expected a number, got {_describe(value)}")
    return float(value)


def _strict_str(value: Any, _: type) -> str:
    if type(value) is not str:
        raise TypeError(f"expected a string, got {_describe(value)}")
    return value


def _strict_bool(value: Any, _: type) -> bool:
    if type(value) is not bool:
        raise TypeError(f"expected true or false, got {_describe(value)}")
    return value


def _bounded(base: Any, check: Any, wording: str) -> Any:
    def structure(value: Any, type_: type) -> Any:
        number = base(value, type_)
        if not check(number):
            raise ValueError(f"must be {wording}, got {value!r}")
        return number

    return structure


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}" if not isinstance(value, (dict, list)) else type(value).__name__


def _list_only(type_: Any, converter: cattrs.Converter) -> Any:
    """Sequences must be TOML arrays: a string is not a list of its characters."""
    factory = homogenous_tuple_structure_factory if get_origin(type_) is tuple else list_structure_factory
    structure_items = factory(type_, converter)

    def structure(value: Any, _: type) -> Any:
        if not isinstance(value, list):
            raise TypeError(f"expected a list, got {_describe(value)}")
        return structure_items(value, type_)

    return structure


def make_converter() -> cattrs.Converter:
    """The one converter between TOML data and Arena's value classes."""
    converter = cattrs.Converter(forbid_extra_keys=True)
    converter.register_structure_hook_factory(is_sequence, _list_only)
    converter.register_structure_hook(int, _strict_int)
    converter.register_structure_hook(float, _strict_float)
    converter.register_structure_hook(str, _strict_str)
    converter.register_structure_hook(bool, _strict_bool)
    converter.register_structure_hook(PositiveInt, _bounded(_strict_int, lambda n: n > 0, "greater than 0"))
    converter.register_structure_hook(NonNegativeInt, _bounded(_strict_int, lambda n: n >= 0, "0 or more"))
    converter.register_structure_hook(PositiveFloat, _bounded(_strict_float, lambda n: n > 0, "greater than 0"))
    converter.register_structure_hook(NonNegativeFloat, _bounded(_strict_float, lambda n: n >= 0, "0 or more"))
    converter.register_structure_hook(Fraction, _bounded(_strict_float, lambda n: 0 <= n <= 1, "between 0 and 1"))
    converter.register_structure_hook(RangeRatio, _bounded(_strict_float, lambda n: 0 <= n < 1, "at least 0 and below 1"))
    # Secrets never leave the process: an endpoint is stored without its key.
    converter.register_unstructure_hook(
        Endpoint, make_dict_unstructure_fn(Endpoint, converter, api_key=override(omit=True))
    )
    return converter


CONVERTER = make_converter()


# --- reading ---------------------------------------------------------------------------------


def parse_config(text: str, *, source: str = "<config>") -> ArenaConfig:
    """Parse and structure TOML text; :class:`ConfigError` names ``source`` and the key path."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"malformed TOML: {exc}", source=source, path=None) from None
    if "endpoint" in data and isinstance(data["endpoint"], dict) and "api_key" in data["endpoint"]:
        raise ConfigError(
            "API keys do not belong in config files; name an environment variable (api_key_env) "
            "or a file (api_key_file)",
            source=source,
            path="$.endpoint.api_key",
        )
    try:
        config = CONVERTER.structure(data, ArenaConfig)
    except (ClassValidationError, IterableValidationError) as exc:
        problems = list(_flatten(exc, "$"))
        path, problem = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ConfigError(problem + more, source=source, path=path) from None
    return attrs.evolve(config, source=source)


def load_config(path: Path | str | None = None) -> ArenaConfig:
    """Read ``path``; with ``None``, ``./arena.toml`` if it exists, else the defaults."""
    if path is None:
        default = Path(DEFAULT_CONFIG_FILE)
        if not default.is_file():
            return ArenaConfig()
        path = default
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("no such file", source=str(path), path=None) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", source=str(path), path=None) from None
    return parse_config(text, source=str(path))


def _flatten(exc: BaseException, path: str) -> Iterator[tuple[str, str]]:
    """(key path, problem) for every leaf error in a cattrs exception group."""
    if isinstance(exc, ForbiddenExtraKeysError):
        for key in sorted(exc.extra_fields):
            yield _join(path, key), "unknown key"
    elif isinstance(exc, ClassValidationError):
        with_notes, without = exc.group_exceptions()
        for sub, note in with_notes:
            yield from _flatten(sub, _join(path, note.name))
        for sub in without:
            yield from _flatten(sub, path)
    elif isinstance(exc, IterableValidationError):
        with_notes, without = exc.group_exceptions()
        for sub, note in with_notes:
            index = note.index
            yield from _flatten(sub, _join(path, index) if isinstance(index, str) else f"{path}[{index}]")
        for sub in without:
            yield from _flatten(sub, path)
    elif isinstance(exc, AttributeError) and "items" in str(exc):
        yield path, "expected a table"
    elif isinstance(exc, KeyError):  # cattrs has already put the missing key on the path
        yield path, "required key missing"
    else:
        yield path, str(exc) or type(exc).__name__


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if key.replace("-", "_").replace(".", "_").isidentifier() else f"{path}[{key!r}]"


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
            _unknown(registry, "workloads", name, source, _join("$.workloads", name))
        apply_override(registry.workloads[name].item, change, source=source)
    for profile_name, profile in config.scoring.profiles.items():
        for name in profile.workload_weights:
            if name not in registry.workloads:
                path = _join(_join(_join("$.scoring.profiles", profile_name), "workload_weights"), name)
                _unknown(registry, "workloads", name, source, path)


def _unknown(registry: Registry, kind: str, name: str, source: str, path: str) -> None:
    from arena_core.registry import KINDS

    known = ", ".join(registry.names(kind)) or "none registered"
    raise ConfigError(f"unknown {KINDS[kind].singular} {name!r} (known: {known})", source=source, path=path)


_CLOSED_FIELDS = frozenset(attrs.fields_dict(ClosedLoopShape))
_OPEN_FIELDS = frozenset(attrs.fields_dict(OpenLoopShape))


def apply_override(spec: WorkloadSpec, change: WorkloadOverride, *, source: str = "<config>") -> WorkloadSpec:
    """``spec`` with the fields ``change`` sets; a field of the other loop kind is an error."""
    values = {key: value for key, value in attrs.asdict(change).items() if value is not None}
    seed = values.pop("seed", spec.seed)
    shape_fields = _CLOSED_FIELDS if spec.closed_loop is not None else _OPEN_FIELDS
    for key in values:
        if key not in shape_fields:
            raise ConfigError(
                f"does not apply to {spec.loop}-loop workload {spec.name!r}",
                source=source,
                path=_join(_join("$.workloads", spec.name), key),
            )
    try:
        if spec.closed_loop is not None:
            return attrs.evolve(spec, seed=seed, closed_loop=attrs.evolve(spec.closed_loop, **values))
        assert spec.open_loop is not None
        return attrs.evolve(spec, seed=seed, open_loop=attrs.evolve(spec.open_loop, **values))
    except ValueError as exc:
        raise ConfigError(str(exc), source=source, path=_join("$.workloads", spec.name)) from None

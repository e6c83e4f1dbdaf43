"""The one cattrs converter between plain data (TOML, JSON on disk) and Arena's value classes.

Strict at the edges: unknown keys are errors, ``"10"`` is not an integer, a string is not a list
of its characters. Range rules of workload shapes live in their attrs validators; the bounded
types here are for configuration sections that are not shapes (scale, scoring weights). Secrets
never leave the process: an :class:`~arena_core.types.Endpoint` is unstructured without its key.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NewType, get_origin

import cattrs
from cattrs.cols import homogenous_tuple_structure_factory, is_sequence, list_structure_factory
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError
from cattrs.gen import make_dict_unstructure_fn, override

from arena_core import bounds
from arena_core.bounds import Bound
from arena_core.types import Endpoint, HardwareProfile

#: Config numbers whose range is a :class:`~arena_core.bounds.Bound` of their own.
Scale = NewType("Scale", float)
Weight = NewType("Weight", float)
Fraction = NewType("Fraction", float)  # 0 <= x <= 1


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


def _within(bound: Bound) -> Any:
    def structure(value: Any, type_: type) -> Any:
        number = _strict_float(value, type_)
        bound(None, None, number)
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
    converter.register_structure_hook(Scale, _within(bounds.SCALE))
    converter.register_structure_hook(Weight, _within(bounds.WEIGHT))
    converter.register_structure_hook(Fraction, _within(bounds.FRACTION))
    # Secrets never leave the process: an endpoint is stored without its key.
    converter.register_unstructure_hook(Endpoint, make_dict_unstructure_fn(Endpoint, converter, api_key=override(omit=True)))
    # A profile's run-time measurement is code, not a figure: it is not stored.
    converter.register_unstructure_hook(HardwareProfile, make_dict_unstructure_fn(HardwareProfile, converter, measure=override(omit=True)))
    return converter


CONVERTER = make_converter()

#: Keys an earlier Arena wrote (a run's manifest and results, a config file's ``[run]``), by
#: today's name for them.
EARLIER_NAMES: Mapping[str, str] = {"engine": "instrument", "engine_description": "measured_with"}


def with_todays_names(data: Any) -> Any:
    """``data`` (an object read from a file) with each key of :data:`EARLIER_NAMES` under
    today's name, unless today's is there too; anything else as it is."""
    if not isinstance(data, dict):
        return data
    return {EARLIER_NAMES[key] if key in EARLIER_NAMES and EARLIER_NAMES[key] not in data else key: value for key, value in data.items()}


def structure_problems(exc: BaseException, path: str) -> Iterator[tuple[str, str]]:
    """(key path, problem) for every leaf error in a cattrs exception group: what a one-line
    error about a config file or a stored JSON names."""
    if isinstance(exc, ForbiddenExtraKeysError):
        for key in sorted(exc.extra_fields):
            yield join_key(path, key), "unknown key"
    elif isinstance(exc, ClassValidationError):
        with_notes, without = exc.group_exceptions()
        for sub, note in with_notes:
            yield from structure_problems(sub, join_key(path, note.name))
        for sub in without:
            yield from structure_problems(sub, path)
    elif isinstance(exc, IterableValidationError):
        with_notes, without = exc.group_exceptions()
        for sub, note in with_notes:
            index = note.index
            yield from structure_problems(sub, join_key(path, index) if isinstance(index, str) else f"{path}[{index}]")
        for sub in without:
            yield from structure_problems(sub, path)
    elif isinstance(exc, AttributeError) and "items" in str(exc):
        yield path, "expected a table"
    elif isinstance(exc, KeyError):  # cattrs has already put the missing key on the path
        yield path, "required key missing"
    else:  # a validator's ValueError carries its message first, then the attribute and the value
        yield path, exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc) or type(exc).__name__


def join_key(path: str, key: str) -> str:
    return f"{path}.{key}" if key.replace("-", "_").replace(".", "_").isidentifier() else f"{path}[{key!r}]"

"""Turning registered value objects into plain data for ``arena show`` and JSON output."""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from typing import Any

import attrs


def describe(value: Any) -> Any:
    """JSON-ready data for an attrs object; a callable becomes the first paragraph of its docstring.

    Fields marked ``repr=False`` (secrets such as API keys) are left out.
    """
    if attrs.has(type(value)):
        return {field.name: describe(getattr(value, field.name)) for field in attrs.fields(type(value)) if field.repr is not False}
    if isinstance(value, Mapping):
        return {str(key): describe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [describe(item) for item in value]
    if callable(value):  # code, not a figure: what it does, in its own words, never its internal name
        doc = inspect.getdoc(value) if not isinstance(value, type) else None
        return doc.split("\n\n")[0].replace("\n", " ") if doc else "provided by the plugin"
    return value


def flatten(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted.key, value)`` pairs for nested dicts and lists, for a two-column table."""
    if isinstance(data, dict) and data:
        for key, value in data.items():
            yield from flatten(value, f"{prefix}.{key}" if prefix else key)
    elif isinstance(data, list) and data and any(isinstance(item, (dict, list)) for item in data):
        for index, value in enumerate(data):
            yield from flatten(value, f"{prefix}[{index}]")
    elif isinstance(data, list):
        yield prefix, ", ".join(str(item) for item in data)
    else:
        yield prefix, data

"""Tool calls in a chat answer: collected from the stream, then read.

An OpenAI-compatible server streams a tool call as ``delta.tool_calls`` fragments: the first of
each call carries its ``index``, ``id`` and ``function.name``, later ones more of
``function.arguments``, a JSON text cut anywhere (the older ``delta.function_call`` is one call
of the same form). :class:`ToolCallCollector` joins the fragments within bounds, so a server that
streams without end fills no memory; :func:`read_tool_calls` says what the answer did:

- ``called``: every call names a function and its arguments are a JSON object;
- ``malformed``: a call without a name, or with arguments that are not a JSON object;
- ``as-text``: no tool call, but the answer's text writes one out (``<tool_call>{...}</tool_call>``,
  or a JSON object with ``name`` and ``arguments``), as a server does whose tool parser is off;
- ``none``: a plain answer.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from attrs import frozen

from arena_core.files import parse_json
from arena_core.types import ToolCall

#: The most calls one answer may make, and the longest name and arguments of one: beyond any
#: real tool call, and what keeps a hostile stream's fragments bounded.
MAX_CALLS = 16
MAX_NAME_CHARS = 256
MAX_ARGUMENT_CHARS = 64 * 2**10
#: The most of an answer's text searched for a call written out as text.
MAX_TEXT_SEARCHED = 64 * 2**10

Outcome = Literal["called", "malformed", "as-text", "none"]


@frozen(kw_only=True)
class ToolCallsRead:
    """What an answer's tool calls say: the ``outcome``, each call's name and parsed arguments
    (for ``called`` and ``as-text``), and for ``malformed`` what was wrong."""

    outcome: Outcome
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    problem: str = ""


class ToolCallCollector:
    """Joins one streamed answer's tool-call fragments; ``add`` takes a delta's ``tool_calls``
    (or ``function_call``) and says False for a fragment of the wrong shape."""

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        self._calls: dict[int, list[str]] = {}  # index -> [call_id, name, arguments]

    def add(self, fragments: Any, *, legacy: bool = False) -> bool:
        if legacy:  # function_call: one call, no index, no id
            fragments = [{"index": 0, "function": fragments}]
        if type(fragments) is not list:
            return False
        shaped = True
        for position, fragment in enumerate(fragments[:MAX_CALLS]):
            function = fragment.get("function") if type(fragment) is dict else None
            if type(function) is not dict:
                shaped = False
                continue
            index = fragment.get("index", position)
            if type(index) is not int or not 0 <= index < MAX_CALLS:
                shaped = False
                continue
            call = self._calls.setdefault(index, ["", "", ""])
            for slot, value, most in ((0, fragment.get("id"), MAX_NAME_CHARS), (1, function.get("name"), MAX_NAME_CHARS)):
                if type(value) is str and value and not call[slot]:
                    call[slot] = value[:most]
            arguments = function.get("arguments")
            if type(arguments) is str:
                call[2] += arguments[: max(0, MAX_ARGUMENT_CHARS + 1 - len(call[2]))]  # one past the bound: too long, not cut to fit
            elif arguments is not None:
                shaped = False
        return shaped

    def calls(self) -> tuple[ToolCall, ...]:
        return tuple(ToolCall(call_id=c[0], name=c[1], arguments=c[2]) for _, c in sorted(self._calls.items()))


def _arguments(text: str) -> dict[str, Any] | None:
    """A call's arguments as a JSON object, or None: empty text is no arguments (``{}``)."""
    if not text.strip():
        return {}
    try:
        parsed = parse_json(text, max_bytes=MAX_ARGUMENT_CHARS)
    except ValueError:
        return None
    return parsed if type(parsed) is dict else None


_TAGGED = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)
_FENCED = re.compile(r"^\s*(?:```(?:json)?\s*)?(\{.*\})\s*(?:```)?\s*$", re.DOTALL)


def _written_out(content: str) -> tuple[tuple[str, dict[str, Any]], ...]:
    """The calls an answer's text writes out: Hermes-style tags, or the whole text one JSON
    object (fenced or not) with a ``name`` and ``arguments`` (or ``parameters``)."""
    text = content[:MAX_TEXT_SEARCHED]
    found = _TAGGED.findall(text)[:MAX_CALLS] or [m.group(1) for m in [_FENCED.match(text)] if m]
    calls = []
    for candidate in found:
        try:
            parsed = parse_json(candidate, max_bytes=MAX_TEXT_SEARCHED)
        except ValueError:
            continue
        if type(parsed) is not dict or type(name := parsed.get("name")) is not str or not name:
            continue
        arguments = parsed.get("arguments", parsed.get("parameters", {}))
        if type(arguments) is str:
            arguments = _arguments(arguments)
        if type(arguments) is dict:
            calls.append((name[:MAX_NAME_CHARS], arguments))
    return tuple(calls)


def read_tool_calls(calls: tuple[ToolCall, ...], content: str) -> ToolCallsRead:
    """What an answer did with its tools (see the module's text)."""
    if not calls:
        written = _written_out(content)
        return ToolCallsRead(outcome="as-text", calls=written) if written else ToolCallsRead(outcome="none")
    read = []
    for number, call in enumerate(calls, 1):
        if not call.name:
            return ToolCallsRead(outcome="malformed", problem=f"call {number} names no function")
        if len(call.arguments) > MAX_ARGUMENT_CHARS:
            return ToolCallsRead(outcome="malformed", problem=f"call {number} ({call.name}): arguments longer than {MAX_ARGUMENT_CHARS:,} characters")
        arguments = _arguments(call.arguments)
        if arguments is None:
            return ToolCallsRead(outcome="malformed", problem=f"call {number} ({call.name}): arguments are not a JSON object")
        read.append((call.name, arguments))
    return ToolCallsRead(outcome="called", calls=tuple(read))

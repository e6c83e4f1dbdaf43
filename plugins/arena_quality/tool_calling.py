"""Tool-calling accuracy graded by structure, as the Berkeley Function Calling Leaderboard's AST
check grades its ``simple`` category: the model is given one function and a question, and its
answer must be one call of that function whose arguments the possible answers allow.

The items are BFCL's own (``data/bfcl-simple-python.jsonl``, see ``data/BFCL-NOTICE.md``). A
function named with dots (``math.factorial``) is offered as ``math_factorial``: OpenAI's tool
names allow letters, digits, ``_`` and ``-`` only. Its parameter types are BFCL's (``dict``,
``float``, ``tuple``, ``any``), offered as JSON Schema's (``object``, ``number``, ``array``, any).

A call passes when its name is the function's; every argument it gives is a parameter of the
function; every parameter the possible answers require is given; and each given value is one of
the allowed ones: an integer where a float is allowed counts, strings are compared without case,
spaces or the punctuation ``,./-_*^`` (BFCL's own leniency), lists item by item, and objects key
by key by the same rules.
"""

from __future__ import annotations

import json
import re
import time
from functools import cache
from pathlib import Path
from typing import Any

from attrs import frozen

from arena_core import MeasuredQuality, QualityRequest
from arena_quality.asking import Answer, Pace, ask_all, asked_within
from arena_quality.records import measured_from

NAME = "tool-calls"
#: the subset: every second of the 50 items (BFCL's every sixteenth simple_python item)
SUBSET_SIZE, FULL_SIZE = 25, 50
#: a call with its arguments, far more than any of these items' answers needs
MAX_TOKENS = 256
#: the most of a call's arguments a record keeps
RECORD_CHARS = 2000
DATA = Path(__file__).resolve().parent / "data" / "bfcl-simple-python.jsonl"
#: BFCL's parameter types as JSON Schema names them (``any``: no type given)
SCHEMA_TYPES = {"dict": "object", "float": "number", "tuple": "array"}
#: what string comparison ignores besides case
_IGNORED = re.compile(r"[ ,./\-_*^]")


@frozen(kw_only=True)
class ToolItem:
    """One BFCL item: its id, the user's question, the function offered, and for each allowed
    function name the allowed values of each parameter (``""`` among them: it may be left out)."""

    id: str
    question: str
    function: dict[str, Any]
    truth: dict[str, dict[str, list[Any]]]


@cache
def items() -> tuple[ToolItem, ...]:
    """The 50 items, in BFCL's order."""
    found = []
    for line in DATA.read_text(encoding="utf-8").splitlines():
        raw = json.loads(line)
        ((message,),) = raw["question"]
        (function,) = raw["function"]
        (truth,) = raw["ground_truth"]
        found.append(ToolItem(id=raw["id"], question=message["content"], function=function, truth=truth))
    return tuple(found)


def tool_name(name: str) -> str:
    """The name a function is offered under (OpenAI's tool names have no dots)."""
    return name.replace(".", "_")


def _schema(schema: dict[str, Any]) -> dict[str, Any]:
    converted = {key: value for key, value in schema.items() if key != "type"}
    kind = schema.get("type")
    if kind != "any":
        converted["type"] = SCHEMA_TYPES.get(kind, kind)
    if isinstance(schema.get("properties"), dict):
        converted["properties"] = {name: _schema(each) for name, each in schema["properties"].items()}
    if isinstance(schema.get("items"), dict):
        converted["items"] = _schema(schema["items"])
    return converted


def openai_tool(function: dict[str, Any]) -> dict[str, Any]:
    """``function`` as a chat request's ``tools`` entry."""
    return {
        "type": "function",
        "function": {"name": tool_name(function["name"]), "description": function.get("description", ""), "parameters": _schema(function["parameters"])},
    }


def _standard(text: str) -> str:
    return _IGNORED.sub("", text).lower()


def _allowed(value: Any, allowed: Any, kind: str = "") -> bool:
    """Whether ``value`` (from the call's JSON) is the allowed value ``allowed`` of a parameter
    of type ``kind``: a float one takes an integer, an integer one no float."""
    if isinstance(allowed, bool) or isinstance(value, bool):
        return value is allowed
    if isinstance(allowed, (int, float)):
        whole = isinstance(value, int) or isinstance(allowed, float) or kind in ("float", "number")
        return isinstance(value, (int, float)) and whole and value == allowed
    if isinstance(allowed, str):
        return isinstance(value, str) and _standard(value) == _standard(allowed)
    if isinstance(allowed, list):
        return isinstance(value, list) and len(value) == len(allowed) and all(_allowed(v, a) for v, a in zip(value, allowed))
    if isinstance(allowed, dict):
        return isinstance(value, dict) and _arguments_problem(value, allowed, dict.fromkeys(allowed, "")) == ""
    return value == allowed


def _arguments_problem(arguments: dict[str, Any], truth: dict[str, list[Any]], kinds: dict[str, str]) -> str:
    for name in arguments:
        if name not in kinds:
            return f"argument {name!r} is not a parameter of the function"
    for name, allowed in truth.items():
        if name not in arguments:
            if "" not in allowed:
                return f"argument {name!r} is missing"
        elif not any(_allowed(arguments[name], each, kinds[name]) for each in allowed if each != ""):
            return f"argument {name!r} is {json.dumps(arguments[name])[:80]}, not one the answer allows"
    return ""


def judge(calls: tuple[tuple[str, dict[str, Any]], ...], item: ToolItem) -> str:
    """Why the calls an answer made fail ``item`` ("" when they pass): one call of its function
    with arguments its possible answers allow."""
    if len(calls) != 1:
        return f"{len(calls)} calls, not one"
    ((name, arguments),) = calls
    names = {tool_name(allowed): allowed for allowed in item.truth}
    if name not in names:
        return f"called {name[:80]!r}, not {', '.join(names)}"
    kinds = {parameter: str(schema.get("type", "")) for parameter, schema in item.function["parameters"].get("properties", {}).items()}
    return _arguments_problem(arguments, item.truth[names[name]], kinds)


class ToolsRefused(Exception):
    """The server answered every request that offered tools with a refusal."""


#: why an answer that made no well-formed call failed
_NOT_CALLED = {"as-text": "the call written in the text, not as a tool call", "none": "no tool call"}


def _record(item: ToolItem, answer: Answer) -> dict[str, Any]:
    read = answer.tool_calls
    outcome = read.outcome if read is not None and not answer.error else ""
    if answer.error or read is None:
        why = answer.error or "no answer"
    elif outcome == "called":
        why = judge(read.calls, item)
    else:
        why = read.problem if outcome == "malformed" else _NOT_CALLED[outcome]
    calls = [[name, json.dumps(arguments, ensure_ascii=False)[:RECORD_CHARS]] for name, arguments in (read.calls if read is not None else ())]
    return {
        "item": item.id,
        "passed": outcome == "called" and why == "",
        "format_failure": outcome in ("malformed", "as-text"),
        "request_failed": bool(answer.error),
        "outcome": outcome,
        "status": why,
        "question": item.question,
        "calls": calls,
        "answer": answer.text[:RECORD_CHARS],
    }


def run(request: QualityRequest) -> MeasuredQuality:
    started = time.monotonic()
    chosen = list(items() if request.full else items()[::2])
    request.progress(f"quality: tool calls, {len(chosen)} of {FULL_SIZE} BFCL simple-python items")
    tools = [[openai_tool(item.function)] for item in chosen]
    answers = ask_all(
        request.endpoint, [i.question for i in chosen], max_tokens=MAX_TOKENS, pace=Pace.of(request), timeout_s=request.request_timeout_s, tools=tools
    )
    chosen, asked = asked_within(request, NAME, chosen, answers)
    if asked and all(answer.error.startswith("HTTP 4") for answer in asked):
        raise ToolsRefused(f"the server refused every request that offered tools: {asked[0].error}")
    return measured_from(
        request.output_dir,
        [_record(item, answer) for item, answer in zip(chosen, asked, strict=True)],
        started=started,
        suite=NAME,
        benchmark="BFCL",
        metric="calls correct",
        of_total=FULL_SIZE,
        method="one call of the offered function with arguments BFCL's possible answers allow (its AST check, simple category), 95 % Wilson interval",
    )

"""Tool-calling accuracy graded by structure (plugins/arena_quality/tool_calling.py): BFCL's
items offered as OpenAI tools, the possible answers pass, each way of being wrong fails, and the
``tool-calls`` suite on the rig measures exactly the share of right calls it was told to give."""

from __future__ import annotations

import json

import pytest

from arena_core.testing import arena
from arena_core.testing.fake_server import FakeServerProcess
from arena_quality.tool_calling import items, judge, openai_tool, tool_name


def _types(schema: dict) -> set[str]:
    found = {schema["type"]} if "type" in schema else set()
    for each in schema.get("properties", {}).values():
        found |= _types(each)
    return found | (_types(schema["items"]) if isinstance(schema.get("items"), dict) else set())


def _first(alternatives: list):
    """The first allowed value of ``alternatives``, an object's own keys chosen the same way."""
    return _resolved(next(each for each in alternatives if each != ""))


def _resolved(value):
    if isinstance(value, dict):
        return {key: _first(alternatives) for key, alternatives in value.items() if alternatives != [""]}
    return [_resolved(each) for each in value] if isinstance(value, list) else value


def _canonical(item) -> tuple:
    """One call of the item's function with the first allowed value of each parameter given."""
    ((name, truth),) = item.truth.items()
    return ((tool_name(name), {param: _first(allowed) for param, allowed in truth.items() if allowed != [""]}),)


def test_fifty_bfcl_items_each_offered_as_one_openai_tool():
    chosen = items()
    assert len(chosen) == 50 and chosen[0].id == "simple_python_0" and chosen[1].id == "simple_python_8"
    for item in chosen:
        tool = openai_tool(item.function)["function"]
        assert "." not in tool["name"] and tool["parameters"]["type"] == "object"
        assert _types(tool["parameters"]) <= {"object", "integer", "number", "string", "boolean", "array"}, item.id
    assert any("." in item.function["name"] for item in chosen)  # the dotted names are there, and offered without dots


def test_the_possible_answers_pass_every_item():
    assert {item.id: judge(_canonical(item), item) for item in items()} == {item.id: "" for item in items()}


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda calls: (("area_of_circle", calls[0][1]),), "called 'area_of_circle', not calculate_triangle_area"),
        (lambda calls: calls * 2, "2 calls, not one"),
        (lambda calls: (), "0 calls, not one"),
        (lambda calls: ((calls[0][0], {"height": 5}),), "argument 'base' is missing"),
        (lambda calls: ((calls[0][0], {**calls[0][1], "colour": "red"}),), "argument 'colour' is not a parameter of the function"),
        (lambda calls: ((calls[0][0], {**calls[0][1], "base": 11}),), "argument 'base' is 11, not one the answer allows"),
        (lambda calls: ((calls[0][0], {**calls[0][1], "base": 10.5}),), "argument 'base' is 10.5, not one the answer allows"),
        (lambda calls: ((calls[0][0], {**calls[0][1], "base": 10.0}),), "argument 'base' is 10.0, not one the answer allows"),  # a float for an integer
        (lambda calls: ((calls[0][0], {**calls[0][1], "base": "10"}),), "argument 'base' is \"10\", not one the answer allows"),
        (lambda calls: ((calls[0][0], {**calls[0][1], "unit": "metres"}),), "argument 'unit' is \"metres\", not one the answer allows"),
    ],
)
def test_each_way_of_being_wrong_fails_with_its_reason(change, said):
    item = items()[0]  # calculate_triangle_area(base=10, height=5, unit="units" or left out)
    assert judge(change(_canonical(item)), item) == said


def test_what_bfcl_allows_passes():
    item = items()[0]
    name = tool_name(item.function["name"])
    assert judge(((name, {"base": 10, "height": 5}),), item) == ""  # an optional argument left out
    assert judge(((name, {"base": 10, "height": 5, "unit": " Units."}),), item) == ""  # case, spaces and dots aside
    floats = next(i for i in items() if any(s.get("type") == "float" for s in i.function["parameters"]["properties"].values()))
    ((fname, call),) = _canonical(floats)
    param = next(p for p, s in floats.function["parameters"]["properties"].items() if s.get("type") == "float" and p in call)
    as_int = {**call, param: int(call[param])} if float(call[param]).is_integer() else call
    assert judge(((fname, as_int),), floats) == "", (floats.id, json.dumps(as_int))  # an integer where a float is allowed


def test_lists_and_objects_are_judged_item_by_item():
    nested = next(item for item in items() if item.id == "simple_python_96")  # a list of objects, each key with its allowed values
    ((name, call),) = _canonical(nested)
    param = next(p for p, v in call.items() if isinstance(v, list) and v and isinstance(v[0], dict))
    first = call[param][0]
    key = next(iter(first))
    changed = {**call, param: [{**first, key: "something else"}, *call[param][1:]]}
    assert judge(((name, changed),), nested).startswith(f"argument {param!r} is ")
    assert judge(((name, {**call, param: call[param][:1]}),), nested).startswith(f"argument {param!r} is ")  # one object short
    pair = next(item for item in items() if item.id == "simple_python_192")  # two coordinates as a list of floats
    ((name, call),) = _canonical(pair)
    assert judge(((name, {**call, "point1": list(reversed(call["point1"]))}),), pair) == (
        f"argument 'point1' is {json.dumps(list(reversed(call['point1'])))}, not one the answer allows"
    )


def _rig_quality(tmp_path, *rig_args: str) -> tuple:
    tmp_path.mkdir(exist_ok=True)
    known = tmp_path / "known-calls.json"
    calls = {item.question: {"name": name, "arguments": arguments} for item in items() for ((name, arguments),) in [_canonical(item)]}
    known.write_text(json.dumps(calls))
    with FakeServerProcess(["--decode-gap-ms", "0", "--known-calls", str(known), *rig_args]) as rig:
        done = arena("quality", "--base-url", rig.url, "--quality-suite", "tool-calls", "--output", str(tmp_path / "store"))
    (manifest,) = (tmp_path / "store").glob("*/manifest.json")
    return done, json.loads(manifest.read_text())


@pytest.mark.slow
def test_the_suite_on_the_rig_measures_the_share_of_right_calls_exactly(tmp_path):
    """25 items answered in turn right, right, with an argument the function lacks, with its
    arguments cut short: 13 right (52.0 %), 6 format failures (the cut ones); then every call
    written in the text (a server without its tool parser): none right, 25 format failures."""
    done, manifest = _rig_quality(tmp_path / "cycle", "--tool-answers", "correct,correct,wrong,malformed")
    assert done.returncode == 0, done.stderr
    (measured,) = manifest["measured_quality"]
    assert (measured["suite"], measured["items"], measured["passed"], measured["value"], measured["format_failures"]) == ("tool-calls", 25, 13, 52.0, 6)
    records = [json.loads(line) for line in next((tmp_path / "cycle" / "store").glob("*/quality/tool-calls/records.jsonl")).read_text().splitlines()]
    assert {r["outcome"] for r in records} == {"called", "malformed"}
    assert sum("argument 'unasked' is not a parameter of the function" == r["status"] for r in records) == 6
    done, manifest = _rig_quality(tmp_path / "text", "--tool-answers", "text")
    (measured,) = manifest["measured_quality"]
    assert (measured["passed"], measured["format_failures"]) == (0, 25)


@pytest.mark.slow
def test_a_server_that_refuses_tools_is_one_line_quoting_it(tmp_path):
    done, manifest = _rig_quality(tmp_path, "--refuse-tools")
    assert done.returncode == 0 and manifest["measured_quality"] == [], done.stderr
    (line,) = [line for line in done.stderr.splitlines() if "tool-calls could not be measured" in line]
    assert "the server refused every request that offered tools: HTTP 400" in line and "--enable-auto-tool-choice" in line, line

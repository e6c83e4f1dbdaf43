"""Tool calls read from a chat stream (issue 57): joined from their fragments as OpenAI-compatible
servers stream them, judged called / malformed / written as text / none, bounded against a
server that streams without end, and kept in the request record through a write and a read."""

from __future__ import annotations

import asyncio
import collections
import json

import pytest

from arena_core.loadgen.chat import ChatClient, record_from
from arena_core.loadgen.http import Exchange
from arena_core.loadgen.records_io import RecordWriter, read_records
from arena_core.loadgen.stream import ChatStreamSink
from arena_core.loadgen.tool_calls import MAX_ARGUMENT_CHARS, MAX_CALLS, ToolCallCollector, read_tool_calls
from arena_core.testing.fake_server import NO_TOOL_PARSER, FakeServerConfig, serve_in_thread
from arena_core.types import Endpoint, ToolCall


def streamed(deltas: list[dict], *, content_type: str = "text/event-stream"):
    """The record of a stream whose chunks carry ``deltas``, one event each."""
    sink = ChatStreamSink()
    sink.on_head(0, 200, {"content-type": content_type})
    events = [{"choices": [{"delta": {"role": "assistant"}}]}, *({"choices": [{"delta": delta}]} for delta in deltas)]
    for t, event in enumerate(events, start=1):
        sink.on_body(t, f"data: {json.dumps(event)}\n\n".encode())
    sink.on_body(len(events) + 1, b"data: [DONE]\n\n")
    exchange = Exchange(sent_ns=0, head_ns=0, end_ns=len(events) + 2, status=200)
    return record_from(exchange, sink, workload="agents", run_index=1, request_index=0, max_tokens=100)


def fragments(index: int, *pieces: str, name: str = "", call_id: str = "") -> list[dict]:
    """One call streamed as vLLM and OpenAI stream it: its id and name first, then its arguments in pieces."""
    first = {"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]}
    return [first, *({"tool_calls": [{"index": index, "function": {"arguments": piece}}]} for piece in pieces)]


def test_a_call_streamed_in_fragments_is_joined_and_read():
    record = streamed(fragments(0, '{"ci', 'ty": "Par', 'is", "days": 3}', name="get_weather", call_id="call_1"))
    assert record.tool_calls == (ToolCall(name="get_weather", arguments='{"city": "Paris", "days": 3}', call_id="call_1"),)
    assert record.chunk_kinds == "ttt" + "t" and record.malformed_events == 0
    read = read_tool_calls(record.tool_calls, record.content)
    assert read.outcome == "called" and read.calls == (("get_weather", {"city": "Paris", "days": 3}),)


def test_parallel_calls_interleaved_keep_their_order_and_the_legacy_form_is_one_call():
    a, b = fragments(0, '{"q": ', '"x"}', name="search", call_id="a"), fragments(1, "{}", name="list_files", call_id="b")
    record = streamed([a[0], b[0], a[1], b[1], a[2]])
    assert [c.name for c in record.tool_calls] == ["search", "list_files"]
    assert read_tool_calls(record.tool_calls, "").calls == (("search", {"q": "x"}), ("list_files", {}))
    legacy = streamed([{"function_call": {"name": "f", "arguments": '{"n"'}}, {"function_call": {"arguments": ": 1}"}}])
    assert read_tool_calls(legacy.tool_calls, "").calls == (("f", {"n": 1}),)


def test_arguments_that_are_not_a_json_object_or_a_call_without_a_name_are_malformed():
    cut = read_tool_calls((ToolCall(name="get_weather", arguments='{"city": "Par'),), "")
    assert cut.outcome == "malformed" and cut.problem == "call 1 (get_weather): arguments are not a JSON object"
    assert read_tool_calls((ToolCall(name="f", arguments="[1, 2]"),), "").outcome == "malformed"
    assert read_tool_calls((ToolCall(name="", arguments="{}"),), "").problem == "call 1 names no function"
    # one bad call of two makes the answer malformed: an agent cannot run half an answer
    assert read_tool_calls((ToolCall(name="f", arguments="{}"), ToolCall(name="g", arguments="{")), "").outcome == "malformed"


def test_a_call_written_as_text_is_told_from_a_call_and_from_prose():
    tagged = 'I will look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    assert read_tool_calls((), tagged).outcome == "as-text" and read_tool_calls((), tagged).calls == (("get_weather", {"city": "Oslo"}),)
    fenced = '```json\n{"name": "read_file", "parameters": {"path": "a.py"}}\n```'
    assert read_tool_calls((), fenced).calls == (("read_file", {"path": "a.py"}),)
    assert read_tool_calls((), "The weather in Oslo is mild.").outcome == "none"
    assert read_tool_calls((), '{"answer": 42}').outcome == "none"  # JSON, but no call


def test_a_hostile_stream_is_bounded_and_counted():
    collector = ToolCallCollector()
    for _ in range(200):  # arguments without end: kept to one past the bound, then judged too long
        collector.add([{"index": 0, "function": {"name": "f", "arguments": "x" * 4096}}])
    (call,) = collector.calls()
    assert len(call.arguments) == MAX_ARGUMENT_CHARS + 1
    assert read_tool_calls((call,), "").problem == f"call 1 (f): arguments longer than {MAX_ARGUMENT_CHARS:,} characters"
    many = ToolCallCollector()
    many.add([{"index": i, "function": {"name": "f", "arguments": "{}"}} for i in range(10_000)])
    assert len(many.calls()) == MAX_CALLS
    assert many.add([{"index": 10**9, "function": {"name": "f"}}]) is False  # an index past the bound
    # fragments of the wrong shape are malformed events, never a crash; the good ones are kept
    record = streamed([{"tool_calls": "call f"}, {"tool_calls": [{"index": "0", "function": {"name": "f"}}]}, *fragments(0, "{}", name="g")])
    assert record.malformed_events == 2 and [c.name for c in record.tool_calls] == ["g"]
    long_name = streamed(fragments(0, "{}", name="n" * 100_000))
    assert len(long_name.tool_calls[0].name) == 256


def test_a_record_keeps_its_tool_calls_through_a_write_and_a_read(tmp_path):
    record = streamed(fragments(0, '{"path": "src/main.py"}', name="read_file", call_id="call_7"))
    plain = streamed([{"content": "Done."}])
    writer = RecordWriter(tmp_path / "records.jsonl")
    writer.append([record, plain])
    assert read_records(tmp_path / "records.jsonl") == [record, plain]
    assert plain.tool_calls == () and '"tool_calls":[]' in (tmp_path / "records.jsonl").read_text().splitlines()[1]


READ_FILE = {
    "type": "function",
    "function": {"name": "read_file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
}


def ask_with_tools(url: str, count: int, *, stream: bool = True) -> list:
    """``count`` requests offering read_file, each asking for a call of it on a file of its own:
    the records (streamed) or the parsed answers (not streamed)."""

    async def go() -> list:
        client = ChatClient(Endpoint(base_url=url, model="m"), request_timeout=30)
        answers = []
        try:
            for index in range(count):
                asked = f'The tests fail in module {index}.\nCall read_file with {{"path": "src/m{index}.py"}}.'
                body = {"model": "m", "messages": [{"role": "user", "content": asked}], "tools": [READ_FILE], "max_tokens": 64, "stream": stream}
                if stream:
                    exchange, sink = await client.stream(client.prepare({**body, "stream_options": {"include_usage": True}}))
                    answers.append(record_from(exchange, sink, workload="agents", run_index=0, request_index=index, max_tokens=64))
                else:
                    answers.append((await client.call("POST", "/v1/chat/completions", body))[1])
        finally:
            await client.close()
        return answers

    return asyncio.run(go())


def test_the_rig_gives_the_tool_answers_it_is_told_in_turn():
    config = FakeServerConfig(decode_gap_s=0.001, tool_answers=("correct", "correct", "wrong", "malformed", "text"))
    with serve_in_thread(config) as (url, server):
        records = ask_with_tools(url, 10)
    reads = [read_tool_calls(r.tool_calls, r.content) for r in records]
    assert [r.outcome for r in reads] == ["called", "called", "called", "malformed", "as-text"] * 2
    assert reads[0].calls == (("read_file", {"path": "src/m0.py"}),) and reads[5].calls == (("read_file", {"path": "src/m5.py"}),)
    assert reads[2].calls == (("read_file", {"unasked": True}),)  # the right function, arguments not asked for
    assert reads[4].calls == (("read_file", {"path": "src/m4.py"}),)  # written out: the call is there, not as a call
    assert all(r.ok and r.malformed_events == 0 for r in records)  # a cut argument text is the answer's fault, not the stream's
    assert [r.completion_tokens_server for r in records[:2]] == [4, 4] and records[0].chunk_kinds == "tttt"
    assert collections.Counter(e.get("tool_answer") for e in server.log if "tool_answer" in e) == {"correct": 4, "wrong": 2, "malformed": 2, "text": 2}


def test_the_rig_answers_tools_unstreamed_and_refuses_them_as_vllm_does():
    with serve_in_thread(FakeServerConfig(tool_answers=("correct",))) as (url, _):
        (answer,) = ask_with_tools(url, 1, stream=False)
    (call,) = answer["choices"][0]["message"]["tool_calls"]
    assert call["function"] == {"name": "read_file", "arguments": '{"path": "src/m0.py"}'} and answer["choices"][0]["finish_reason"] == "tool_calls"
    with serve_in_thread(FakeServerConfig(refuse_tools=True)) as (url, _):
        (refused,) = ask_with_tools(url, 1)
    assert refused.http_status == 400 and NO_TOOL_PARSER in refused.error
    with pytest.raises(ValueError, match="tool answers must be among"):
        FakeServerConfig(tool_answers=("right",))

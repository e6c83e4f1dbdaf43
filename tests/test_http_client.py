"""The streaming client against the rig: framing, keep-alive, timestamps, and every fault."""

from __future__ import annotations

import asyncio
import socket

import pytest

from arena_core import Endpoint
from arena_core.loadgen import ChatClient, ServerRefused, record_from
from arena_core.loadgen.http import BufferSink, HttpClient
from arena_core.testing.fake_server import FakeServerConfig, serve_in_thread

BODY = {
    "model": "fake-org/fake-model",
    "messages": [{"role": "user", "content": "hello there"}],
    "max_tokens": 12,
    "stream": True,
    "return_token_ids": True,
    "stream_options": {"include_usage": True},
}


def stream_once(url: str, body: dict = BODY, *, api_key: str | None = None, timeout: float = 30.0):
    async def go():
        client = ChatClient(Endpoint(base_url=url, model="fake-org/fake-model", api_key=api_key), request_timeout=timeout)
        try:
            exchange, sink = await client.stream(client.prepare(body))
            return record_from(exchange, sink, workload="w", run_index=1, request_index=0)
        finally:
            await client.close()

    return asyncio.run(go())


def test_stream_is_parsed_into_a_record(tokenizer_path):
    config = FakeServerConfig(tokenizer_path=str(tokenizer_path), decode_gap_s=0.002, token_ids=True, tokens_per_chunk=3)
    with serve_in_thread(config) as (url, server):
        record = stream_once(url)
    assert record.ok and record.http_status == 200
    assert record.chunk_tokens == (3, 3, 3, 3) and record.chunk_kinds == "cccc"
    assert record.completion_tokens_server == 12 and record.prompt_tokens_server == server.log[-1]["prompt_tokens"]
    assert record.content == " the" * 12
    assert record.sent_ns < record.first_byte_ns <= record.first_response_ns <= record.chunk_ns[0] <= record.end_ns
    assert list(record.chunk_ns) == sorted(record.chunk_ns)


def test_role_chunk_is_not_a_token_and_timestamps_follow_the_injected_wait(tokenizer_path):
    config = FakeServerConfig(tokenizer_path=str(tokenizer_path), early_role_chunk=True, prefill_base_s=0.08, decode_gap_s=0.0)
    with serve_in_thread(config) as (url, server):
        record = stream_once(url)
    entry = server.log[-1]
    # the early role chunk is the first response: read after the rig wrote it, before it wrote any content
    assert entry["role_ns"] <= record.first_response_ns < entry["first_content_ns"] <= record.chunk_ns[0]
    ttft_ms = (record.chunk_ns[0] - record.sent_ns) / 1e6
    server_ms = (entry["first_content_ns"] - entry["received_ns"]) / 1e6
    assert server_ms >= 80 and ttft_ms >= server_ms  # the client cannot see the token before it is sent


def test_keep_alive_reuses_one_connection(tokenizer_path):
    config = FakeServerConfig(tokenizer_path=str(tokenizer_path), decode_gap_s=0.0)

    async def go(url):
        client = ChatClient(Endpoint(base_url=url, model="m"))
        request = client.prepare(BODY)
        for _ in range(5):
            exchange, _ = await client.stream(request)
            assert not exchange.error
        count = len(client.http._all)
        await client.close()
        return count

    with serve_in_thread(config) as (url, _):
        assert asyncio.run(go(url)) == 1


def test_content_length_and_until_close_bodies():
    async def serve(reader, writer):
        while True:  # keep-alive: answer every request on the connection
            request = await reader.readuntil(b"\r\n\r\n")
            if b"/length" in request:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
                await writer.drain()
            else:
                writer.write(b"HTTP/1.0 200 OK\r\n\r\nuntil close")
                await writer.drain()
                writer.close()
                return

    async def go():
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = HttpClient(f"http://127.0.0.1:{port}")
        bodies = []
        for path in ("/length", "/close"):
            sink = BufferSink()
            exchange = await client.exchange(client.build_request("GET", path), sink)
            assert not exchange.error and exchange.status == 200
            bodies.append(sink.body)
        await client.close()
        server.close()
        return bodies

    assert asyncio.run(go()) == [b"hello", b"until close"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_connection_refused_is_a_failed_record():
    record = stream_once(f"http://127.0.0.1:{free_port()}")
    assert not record.ok and "cannot connect" in record.error and record.http_status is None


@pytest.mark.parametrize("status", [429, 500])
def test_http_errors_are_failed_records(tokenizer_path, status):
    config = FakeServerConfig(tokenizer_path=str(tokenizer_path), fault="http", fail_every=1, fail_status=status)
    with serve_in_thread(config) as (url, _):
        record = stream_once(url)
    assert not record.ok and record.error.startswith(f"HTTP {status}: ") and "injected" in record.error


def test_reset_mid_stream_keeps_what_arrived(tokenizer_path):
    config = FakeServerConfig(tokenizer_path=str(tokenizer_path), fault="reset", fail_every=1, decode_gap_s=0.001)
    with serve_in_thread(config) as (url, _):
        record = stream_once(url)
    assert not record.ok and "connection" in record.error
    assert 0 < len(record.chunk_ns) < 12


def test_malformed_sse_is_counted_and_the_stream_goes_on(tokenizer_path):
    config = FakeServerConfig(tokenizer_path=str(tokenizer_path), fault="malformed", fail_every=1, decode_gap_s=0.0)
    with serve_in_thread(config) as (url, _):
        record = stream_once(url)
    assert record.ok and record.malformed_events == 1 and len(record.chunk_ns) == 12


def test_missing_usage_leaves_server_counts_empty(tokenizer_path):
    config = FakeServerConfig(tokenizer_path=str(tokenizer_path), usage=False, decode_gap_s=0.0)
    with serve_in_thread(config) as (url, _):
        record = stream_once(url)
    assert record.ok and record.completion_tokens_server is None and record.prompt_tokens_server is None


def test_stall_hits_the_request_timeout(tokenizer_path):
    config = FakeServerConfig(tokenizer_path=str(tokenizer_path), fault="stall", fail_every=1, decode_gap_s=0.0)
    with serve_in_thread(config) as (url, _):
        record = stream_once(url, timeout=0.5)
    assert not record.ok and record.error == "timed out after 0.5 s" and len(record.chunk_ns) > 0


def test_wrong_api_key_is_one_line(tokenizer_path):
    config = FakeServerConfig(tokenizer_path=str(tokenizer_path), api_key="right-key")
    with serve_in_thread(config) as (url, _):
        assert stream_once(url, api_key="right-key").ok

        async def probe():
            client = ChatClient(Endpoint(base_url=url, model="m", api_key="wrong-key"))
            try:
                await client.call_ok("GET", "/v1/models")
            finally:
                await client.close()

        with pytest.raises(ServerRefused) as raised:
            asyncio.run(probe())
    message = str(raised.value)
    assert message == f"{url} rejected the API key (HTTP 401 on /v1/models)" and "wrong-key" not in message


def test_the_parse_queue_parses_every_connection_in_arrival_order_across_slices(monkeypatch):
    """With a slice too short for even one parse, every connection still gets parsed, one per
    loop iteration, in the order its bytes arrived."""
    from arena_core.loadgen import http

    monkeypatch.setattr(http, "PARSE_SLICE_NS", 0)
    parsed: list[str] = []

    class Connection:
        def __init__(self, name):
            self.name, self._loop = name, asyncio.get_running_loop()

        def _parse_reads(self):
            parsed.append(self.name)

    async def go():
        queue = http.ParseQueue()
        for name in "abc":
            queue.add(Connection(name))
        await asyncio.sleep(0)
        first = list(parsed)  # after one iteration: one slice
        for _ in range(5):
            await asyncio.sleep(0)
        return first

    first = asyncio.run(go())
    assert first == ["a"] and parsed == ["a", "b", "c"]


def test_a_malformed_content_length_is_one_failed_request_not_a_traceback(caplog):
    async def serve(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 12abc\r\n\r\nhello")
        await writer.drain()
        writer.close()

    async def go():
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        client = ChatClient(Endpoint(base_url=url, model="m"))
        try:
            exchange, _ = await client.stream(client.prepare(BODY))
        finally:
            await client.close()
            server.close()
        return exchange

    exchange = asyncio.run(go())
    assert exchange.error == "malformed Content-Length '12abc'"
    assert not [r for r in caplog.records if "Exception in callback" in r.getMessage()]

"""A small HTTP/1.1 client on asyncio protocols, built for measuring streams.

Why not aiohttp or httpx: both hand each network read to a coroutine through a stream reader
and a task wake-up, so the timestamp is taken when the consumer resumes, not when the bytes
arrived, and each read costs several times more CPU (``bench/client_overhead.py`` measures the
three side by side). Here ``data_received`` takes ``perf_counter_ns()`` first, in the loop that
owns the socket, and hands the de-chunked body bytes to a *sink* with that timestamp.

One request at a time per connection; connections are kept alive and pooled. Proxies are not
used (benchmark targets are addressed directly).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from collections.abc import Mapping
from typing import Protocol
from urllib.parse import urlsplit

from attrs import frozen

from arena_core.errors import ServerLost


class BodySink(Protocol):
    """Receives one response as it arrives; every call carries the arrival time in ns."""

    def on_head(self, t_ns: int, status: int, headers: Mapping[str, str]) -> None: ...

    def on_body(self, t_ns: int, data: bytes) -> None: ...


MAX_RESPONSE_BYTES = 256 * 2**20


class BufferSink:
    """Keeps the whole body: for small JSON calls (probes, /tokenize, /v1/models)."""

    def __init__(self, *, max_bytes: int = MAX_RESPONSE_BYTES) -> None:
        self.status = 0
        self.headers: Mapping[str, str] = {}
        self.parts: list[bytes] = []
        self.first_body_ns: int | None = None
        #: a response past this many bytes fails the exchange (a small call's answer is small)
        self.max_bytes = max_bytes

    def on_head(self, t_ns: int, status: int, headers: Mapping[str, str]) -> None:
        self.status, self.headers = status, headers

    def on_body(self, t_ns: int, data: bytes) -> None:
        if self.first_body_ns is None:
            self.first_body_ns = t_ns
        self.parts.append(data)

    @property
    def body(self) -> bytes:
        return b"".join(self.parts)


@frozen(kw_only=True)
class Exchange:
    """Times of one request/response: sent just before the write, head and end on arrival."""

    sent_ns: int
    head_ns: int | None
    end_ns: int | None
    status: int
    error: str = ""


class HttpError(ServerLost):
    """The connection failed (refused, reset, closed early, timed out): the server is gone, which
    is no fault of the user's input (exit 5; the run session adds the resume command)."""


_HEAD, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_TRAILER, _LENGTH, _UNTIL_CLOSE, _DONE = range(7)
#: What one response may be, or it is a failed request: a server that sends without end must not
#: fill the client's memory (a streamed answer of 100,000 tokens is about 30 MB of events).
MAX_HEAD_BYTES = 64 * 2**10
MAX_CHUNK_SIZE_LINE = 64  # a hexadecimal size and an extension, in chunked transfer encoding

#: The longest stretch of parsing before the loop polls its sockets again. Parsing (SSE events,
#: JSON) is the client's main work; done in one go for many streams it would hold back the
#: timestamps of bytes arriving meanwhile. In slices, a new arrival waits at most about this long.
PARSE_SLICE_NS = 200_000


class ParseQueue:
    """The connections of one client that have bytes waiting to be parsed, parsed in arrival
    order in slices of at most :data:`PARSE_SLICE_NS`. Between slices the loop polls its sockets
    (a callback queued during a slice runs in the next iteration, after the poll), so every
    arrival is stamped within about one slice, however many streams are busy."""

    def __init__(self) -> None:
        self._waiting: deque[_Connection] = deque()
        self._scheduled = False

    def add(self, connection: _Connection) -> None:
        self._waiting.append(connection)
        if not self._scheduled:
            self._scheduled = True
            connection._loop.call_soon(self._parse_slice)

    def _parse_slice(self) -> None:
        self._scheduled = False
        deadline = time.perf_counter_ns() + PARSE_SLICE_NS
        waiting = self._waiting
        while waiting:
            waiting.popleft()._parse_reads()
            if waiting and time.perf_counter_ns() > deadline:
                self._scheduled = True
                asyncio.get_running_loop().call_soon(self._parse_slice)
                return


class _Connection(asyncio.Protocol):
    """One connection. Arrival times are taken first thing in ``data_received``; parsing waits
    in the client's :class:`ParseQueue`, so when many sockets are readable at once every one of
    them is timestamped before any of them is parsed."""

    def __init__(self, parse_queue: ParseQueue) -> None:
        self._loop = asyncio.get_running_loop()
        self._parse_queue = parse_queue
        self.transport: asyncio.Transport | None = None
        self.closed = self._loop.create_future()
        self._reads: list[tuple[int, bytes]] = []
        self._parse_scheduled = False
        self.used = False  # has carried a request before (a kept-alive connection)
        self._sink: BodySink | None = None
        self._done: asyncio.Future[Exchange] | None = None
        self._buffer = b""
        self._state = _DONE
        self._remaining = 0
        self._sent_ns = 0
        self._head_ns: int | None = None
        self._status = 0
        self._keep_alive = True
        self._received = 0
        self._limit = MAX_RESPONSE_BYTES

    # --- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        t = time.perf_counter_ns()
        self._parse_reads()
        if self._state == _UNTIL_CLOSE and exc is None:
            self._finish(t)
        elif self._done is not None and not self._done.done():
            reason = f"connection lost: {exc}" if exc else "connection closed by server before the response ended"
            self._done.set_result(self._exchange(t, error=reason))
        if not self.closed.done():
            self.closed.set_result(None)

    def data_received(self, data: bytes) -> None:
        self._reads.append((time.perf_counter_ns(), data))  # first: the arrival time of these bytes
        if not self._parse_scheduled:
            self._parse_scheduled = True
            self._parse_queue.add(self)

    def _parse_reads(self) -> None:
        self._parse_scheduled = False
        reads, self._reads = self._reads, []
        for t, data in reads:
            self._parse(t, data)

    def _parse(self, t: int, data: bytes) -> None:
        if self._state == _DONE:
            return  # bytes after a finished response on a connection we no longer trust
        self._received += len(data)
        if self._received > self._limit:
            self._fail(t, f"response larger than {self._limit // 2**20 or 1} MiB")
            return
        if self._buffer:
            data = self._buffer + data
            self._buffer = b""
        if self._state == _HEAD:
            end = data.find(b"\r\n\r\n")
            if end < 0:
                if len(data) > MAX_HEAD_BYTES:
                    self._fail(t, f"response head longer than {MAX_HEAD_BYTES // 2**10} KiB")
                    return
                self._buffer = data
                return
            self._head_ns = t
            self._parse_head(t, data[:end])
            data = data[end + 4 :]
            if self._state == _DONE:
                return
        self._feed_body(t, data)

    # --- request -------------------------------------------------------------------------

    def send(self, request: bytes, sink: BodySink) -> asyncio.Future[Exchange]:
        assert self.transport is not None and self._state == _DONE
        self._sink = sink
        self._limit = getattr(sink, "max_bytes", MAX_RESPONSE_BYTES)  # a small call's sink says its own
        self._done = asyncio.get_running_loop().create_future()
        self._state, self._buffer, self._head_ns, self._status, self._received = _HEAD, b"", None, 0, 0
        self._sent_ns = time.perf_counter_ns()
        self.transport.write(request)
        return self._done

    @property
    def reusable(self) -> bool:
        return self._keep_alive and self._state == _DONE and not self.closed.done() and self.transport is not None

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    # --- parsing -------------------------------------------------------------------------

    def _parse_head(self, t: int, head: bytes) -> None:
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        try:
            self._status = int(parts[1])
        except (IndexError, ValueError):
            self._fail(t, f"malformed status line {lines[0]!r}")
            return
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        self._keep_alive = headers.get("connection", "").lower() != "close" and parts[0] == "HTTP/1.1"
        assert self._sink is not None
        self._sink.on_head(t, self._status, headers)
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self._state = _CHUNK_SIZE
        elif "content-length" in headers:
            length = headers["content-length"]
            if not length.isdigit() or len(length) > 12:  # a bound: no body Arena reads is near a terabyte
                self._fail(t, f"malformed Content-Length {length[:40]!r}")
                return
            self._remaining = int(length)
            self._state = _LENGTH
            if self._remaining == 0:
                self._finish(t)
        elif self._status in (204, 304) or 100 <= self._status < 200:
            self._finish(t)
        else:
            self._state = _UNTIL_CLOSE
            self._keep_alive = False

    def _feed_body(self, t: int, data: bytes) -> None:
        sink = self._sink
        assert sink is not None
        if self._state == _LENGTH:
            piece = data[: self._remaining]
            self._remaining -= len(piece)
            if piece:
                sink.on_body(t, piece)
            if self._remaining == 0:
                self._finish(t)
            return
        if self._state == _UNTIL_CLOSE:
            if data:
                sink.on_body(t, data)
            return
        # chunked transfer encoding, de-chunked into one piece per network read
        out: list[bytes] = []
        position, size = 0, len(data)
        while position < size:
            if self._state == _CHUNK_DATA:
                take = min(self._remaining, size - position)
                out.append(data[position : position + take])
                position += take
                self._remaining -= take
                if self._remaining == 0:
                    self._state = _CHUNK_TRAILER
            elif self._state == _CHUNK_TRAILER:
                if size - position < 2:
                    self._buffer = data[position:]
                    break
                position += 2  # the CRLF after a chunk's data
                self._state = _CHUNK_SIZE
            else:  # _CHUNK_SIZE
                line_end = data.find(b"\r\n", position)
                if line_end < 0 or line_end - position > MAX_CHUNK_SIZE_LINE:
                    if size - position > MAX_CHUNK_SIZE_LINE:
                        self._fail(t, "malformed chunked encoding (a chunk size line without end)")
                        return
                    self._buffer = data[position:]
                    break
                try:
                    self._remaining = int(data[position:line_end].split(b";", 1)[0], 16)
                except ValueError:
                    self._fail(t, "malformed chunked encoding")
                    return
                position = line_end + 2
                if self._remaining == 0:
                    if out:
                        sink.on_body(t, b"".join(out))
                    # the terminal chunk's final CRLF (trailers are not used by servers we measure)
                    self._finish(t)
                    return
                self._state = _CHUNK_DATA
        if out:
            sink.on_body(t, b"".join(out) if len(out) > 1 else out[0])

    def _exchange(self, t: int, error: str = "") -> Exchange:
        return Exchange(sent_ns=self._sent_ns, head_ns=self._head_ns, end_ns=t, status=self._status, error=error)

    def _finish(self, t: int) -> None:
        self._state = _DONE
        if self._done is not None and not self._done.done():
            self._done.set_result(self._exchange(t))

    def _fail(self, t: int, reason: str) -> None:
        self._state = _DONE
        self._keep_alive = False
        if self._done is not None and not self._done.done():
            self._done.set_result(self._exchange(t, error=reason))
        self.close()


class HttpClient:
    """A keep-alive connection pool to one server (scheme, host, port)."""

    def __init__(self, base_url: str, *, headers: Mapping[str, str] | None = None, connect_timeout: float = 10.0) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        self._ssl = ssl.create_default_context() if parts.scheme == "https" else None
        host_header = self.host if parts.port is None else f"{self.host}:{self.port}"
        fixed = {"Host": host_header, "Connection": "keep-alive", **(headers or {})}
        self._fixed_headers = "".join(f"{name}: {value}\r\n" for name, value in fixed.items())
        self._connect_timeout = connect_timeout
        self._idle: list[_Connection] = []
        self._all: set[_Connection] = set()
        self._parse_queue = ParseQueue()

    def build_request(self, method: str, path: str, body: bytes | None = None, content_type: str = "application/json") -> bytes:
        """The request bytes, built once so the measured send is a single write."""
        head = f"{method} {self.prefix}{path} HTTP/1.1\r\n{self._fixed_headers}"
        if body is not None:
            head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        return (head + "\r\n").encode("latin-1") + (body or b"")

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._connect_timeout):
                _, connection = await loop.create_connection(lambda: _Connection(self._parse_queue), self.host, self.port, ssl=self._ssl)
        except (OSError, TimeoutError) as exc:
            raise HttpError(f"cannot connect to {self.host}:{self.port}: {exc or 'timed out'}") from None
        self._all.add(connection)
        return connection

    async def _acquire(self, fresh: bool = False) -> _Connection:
        while self._idle and not fresh:
            connection = self._idle.pop()
            if connection.reusable:
                return connection
            self._all.discard(connection)
        return await self._connect()

    def _release(self, connection: _Connection) -> None:
        if connection.reusable:
            self._idle.append(connection)
        else:
            connection.close()
            self._all.discard(connection)

    async def warm(self, count: int, path: str = "/v1/models") -> None:
        """Have ``count`` open connections, each proven by one cheap request, before measuring."""
        connections = [await self._acquire() for _ in range(count)]
        request = self.build_request("GET", path)
        try:  # a server that accepts connections and never answers must not hold the run for ever
            async with asyncio.timeout(self._connect_timeout):
                await asyncio.gather(*(connection.send(request, BufferSink()) for connection in connections))
        except TimeoutError:
            for connection in connections:
                connection.close()
            raise HttpError(f"{self.host}:{self.port} accepted connections but did not answer GET {path} within {self._connect_timeout:g} s") from None
        for connection in connections:
            self._release(connection)

    async def exchange(self, request: bytes, sink: BodySink, *, timeout: float | None = None) -> Exchange:
        """Send prepared ``request`` bytes; the sink receives the response as it arrives.

        Never raises for server or network failures: they come back as ``Exchange.error``. A
        kept-alive connection that the server had already closed (llama.cpp's server closes idle
        ones after 5 s, and every connection after 5 requests) gets one retry on a fresh one, with
        fresh timestamps, when not a byte of the response had arrived.
        """
        for attempt in range(2):
            try:
                connection = await self._acquire(fresh=attempt > 0)
            except HttpError as exc:
                now = time.perf_counter_ns()
                return Exchange(sent_ns=now, head_ns=None, end_ns=now, status=0, error=str(exc))
            reused = connection.used
            connection.used = True
            done = connection.send(request, sink)
            try:
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a
                # cancellation that arrives as the response completes, and Ctrl-C would be lost.
                async with asyncio.timeout(timeout):
                    result = await asyncio.shield(done)
            except TimeoutError:
                connection.close()
                now = time.perf_counter_ns()
                result = Exchange(
                    sent_ns=connection._sent_ns, head_ns=connection._head_ns, end_ns=now, status=connection._status, error=f"timed out after {timeout:g} s"
                )
            self._release(connection)
            if not (reused and result.error and result.head_ns is None and connection.closed.done()):
                return result
        return result

    async def close(self) -> None:
        for connection in list(self._all):
            connection.close()
        self._all.clear()
        self._idle.clear()

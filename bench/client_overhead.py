"""How much does the measuring client cost, and how exact is it? Side by side, in one run.

Clients: Arena's native closed-loop engine, the real llama-benchy 0.4.0, and minimal aiohttp and
httpx streaming loops (read, split SSE, json.loads, timestamp: the floor each library allows), on
asyncio's loop and on uvloop -- the measurement behind Arena's choice of neither library.
The rig (``arena_core.testing.fake_server``) runs pinned to CPU 0, every client pinned to CPU 1.

1. Saturated streaming: the rig sends tokens as fast as it can (one token per SSE message);
   client CPU seconds per million tokens, and the token rate the client sustained on its core.
2. Paced streaming: 64 streams at 200 tokens/s each, the shape of a real busy server.
3. TTFT error: the rig waits exactly 50 ms before the first token; each client's measured TTFT
   minus the rig's own logged interval, at c = 1, 10, 64.

CPU is the client process's user + system time (``os.wait4``); fixed start-up costs cancel by
running each case twice (long and short generations) and dividing the difference. Absolute
numbers on a shared machine are noise; the printed ratios are the result.

    python bench/client_overhead.py            # about 3 minutes
    python bench/client_overhead.py --quick    # smaller token counts, for a smoke test
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import SERVER_CORE, run_measured  # noqa: E402

from arena_core.testing.fake_server import FakeServerProcess  # noqa: E402
from arena_core.testing.text import english_like_text, write_test_tokenizer  # noqa: E402

MODEL = "fake-org/fake-model"
PROMPT_TOKENS = 32
BODY_KEYS = {"model": MODEL, "stream": True, "stream_options": {"include_usage": True}}


# --- the clients, each run as a child process ---------------------------------------------------


async def _arena(url: str, concurrency: int, tokens: int, workdir: Path) -> dict:
    from arena_core import ChatClient, ClosedLoopDriver, ClosedLoopPlan, ClosedLoopShape, Endpoint, PromptBuilder, choose_codec

    client = ChatClient(Endpoint(base_url=url, model=MODEL))
    codec = await choose_codec(client, None, "")
    text = (workdir / "corpus.txt").read_text()
    prompts = PromptBuilder(await codec.encode(text), codec, seed=1)
    plan = ClosedLoopPlan(
        workload="bench",
        model=MODEL,
        shape=ClosedLoopShape(prompt_tokens=PROMPT_TOKENS, generated_tokens=tokens, concurrency=concurrency, runs=1, latency_mode="none"),
        warmup=False,
        adapt_prompt=False,
    )

    async def keep(records):
        return records

    start = time.perf_counter()
    _, records = await ClosedLoopDriver(client, plan, prompts, codec, keep).run()
    wall = time.perf_counter() - start
    await client.close()
    firsts = [(r.chunk_ns[0] - r.sent_ns) / 1e6 for r in records if r.chunk_ns]
    return {"tokens": sum(len(r.chunk_ns) for r in records), "wall_s": wall, "ttft_ms": firsts, "failed": sum(not r.ok for r in records)}


def _line_counter():
    count = 0

    def feed(line: str) -> None:
        nonlocal count
        line = line.strip()
        if line.startswith("data:") and line != "data: [DONE]":
            event = json.loads(line[5:])
            time.perf_counter()
            if event.get("choices") and event["choices"][0]["delta"].get("content"):
                count += 1

    return feed, lambda: count


async def _aiohttp(url: str, concurrency: int, tokens: int, workdir: Path) -> dict:
    import codecs

    import aiohttp

    body = {**BODY_KEYS, "messages": [{"role": "user", "content": "hi"}], "max_tokens": tokens}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency + 5)) as session:
        await asyncio.gather(*(session.get(f"{url}/v1/models") for _ in range(concurrency)))

        async def one() -> int:
            feed, total = _line_counter()
            async with session.post(f"{url}/v1/chat/completions", json=body) as response:
                decoder, buffer = codecs.getincrementaldecoder("utf-8")(), ""
                async for chunk in response.content.iter_any():
                    buffer += decoder.decode(chunk)
                    while "\n" in buffer:
                        line, buffer = buffer.split("\n", 1)
                        feed(line)
            return total()

        start = time.perf_counter()
        counts = await asyncio.gather(*(one() for _ in range(concurrency)))
        return {"tokens": sum(counts), "wall_s": time.perf_counter() - start}


async def _httpx(url: str, concurrency: int, tokens: int, workdir: Path) -> dict:
    import httpx

    body = {**BODY_KEYS, "messages": [{"role": "user", "content": "hi"}], "max_tokens": tokens}
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=concurrency + 5), timeout=None) as session:
        await asyncio.gather(*(session.get(f"{url}/v1/models") for _ in range(concurrency)))

        async def one() -> int:
            feed, total = _line_counter()
            async with session.stream("POST", f"{url}/v1/chat/completions", json=body) as response:
                async for line in response.aiter_lines():
                    feed(line)
            return total()

        start = time.perf_counter()
        counts = await asyncio.gather(*(one() for _ in range(concurrency)))
        return {"tokens": sum(counts), "wall_s": time.perf_counter() - start}


CHILDREN = {"arena": _arena, "aiohttp": _aiohttp, "httpx": _httpx}


def child_main(name: str, url: str, concurrency: int, tokens: int, workdir: Path) -> None:
    """Arena runs on the loop it uses for real (uvloop when installed); a library loop runs on
    asyncio's own, or on uvloop when its name ends in ``+uvloop``."""
    library, _, loop = name.partition("+")
    coroutine = CHILDREN[library](url, concurrency, tokens, workdir)
    if library == "arena" or loop == "uvloop":
        from arena_core.loadgen.loop import run

        result = run(coroutine)
    else:
        result = asyncio.run(coroutine)
    print(json.dumps(result))


# --- running children and measuring their CPU ------------------------------------------------


def client(name: str, url: str, concurrency: int, tokens: int, workdir: Path) -> tuple[float, dict]:
    if name == "llama-benchy":
        return llama_benchy(url, concurrency, tokens, workdir)
    cpu, out = run_measured([sys.executable, __file__, "--child", name, url, str(concurrency), str(tokens), str(workdir)])
    return cpu, json.loads(out.strip().splitlines()[-1])


def llama_benchy(url: str, concurrency: int, tokens: int, workdir: Path) -> tuple[float, dict]:
    executable = shutil.which("llama-benchy") or str(Path(sys.executable).parent / "llama-benchy")
    result = workdir / f"llama-benchy-{concurrency}-{tokens}.json"
    command = [
        executable,
        "--base-url",
        f"{url}/v1",
        "--model",
        MODEL,
        "--tokenizer",
        str(workdir / "tokenizer.json"),
        "--book-url",
        "arena-bench",
        "--pp",
        str(PROMPT_TOKENS),
        "--tg",
        str(tokens),
        "--concurrency",
        str(concurrency),
        "--runs",
        "1",
        "--no-warmup",
        "--latency-mode",
        "none",
        "--skip-coherence",
        "--format",
        "json",
        "--save-result",
        str(result),
    ]
    env = {**os.environ, "HOME": str(workdir), "HF_HUB_OFFLINE": "1"}
    cpu, _ = run_measured(command, env)
    entry = json.loads(result.read_text())["benchmarks"][0]
    return cpu, {
        "tokens": concurrency * tokens,
        "tokens_per_s": entry["tg_throughput"]["mean"] if entry["tg_throughput"] else 0.0,
        "ttft_ms": entry["e2e_ttft"]["values"] if entry["e2e_ttft"] else [],
    }


def cpu_per_mtok(name: str, url: str, concurrency: int, tokens: int, workdir: Path) -> tuple[float, float]:
    """Client CPU s per million tokens (difference of a long and a short run), and tokens/s."""
    short = max(1, tokens // 10)
    cpu_long, long = client(name, url, concurrency, tokens, workdir)
    cpu_short, _ = client(name, url, concurrency, short, workdir)
    per_mtok = (cpu_long - cpu_short) / (concurrency * (tokens - short)) * 1e6
    rate = long.get("tokens_per_s") or long["tokens"] / long["wall_s"]
    return per_mtok, rate


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def ttft_errors(name: str, concurrency: int, batches: int, workdir: Path, tokenizer: Path) -> list[float]:
    """Client TTFT minus the rig's logged wait, quantile by quantile, for ``batches`` batches."""
    measured: list[float] = []
    truth: list[float] = []
    for _ in range(batches):
        with FakeServerProcess(["--tokenizer", str(tokenizer), "--prefill-base-ms", "50", "--decode-gap-ms", "5"], cpu_core=SERVER_CORE) as rig:
            _, out = client(name, rig.url, concurrency, 4, workdir)
            log = [e for e in rig.stop() if e.get("stream") and e.get("max_tokens") == 4]
        measured += out["ttft_ms"]
        truth += [(e["first_content_ns"] - e["received_ns"]) / 1e6 for e in log]
    return [m - t for m, t in zip(sorted(measured), sorted(truth))]


def main() -> None:
    parser = argparse.ArgumentParser(description="client overhead, side by side")
    parser.add_argument("--quick", action="store_true", help="small token counts (a smoke test, not a result)")
    parser.add_argument("--child", nargs=5, metavar=("CLIENT", "URL", "C", "TOKENS", "WORKDIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, url, concurrency, tokens, workdir = args.child
        child_main(name, url, int(concurrency), int(tokens), Path(workdir))
        return
    scale = 0.2 if args.quick else 1.0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        workdir = Path(tmp)
        tokenizer = write_test_tokenizer(workdir / "tokenizer.json")
        text = english_like_text(20000, seed=5)
        (workdir / "corpus.txt").write_text(text)
        cache = workdir / ".cache" / "llama-benchy" / f"{hashlib.md5(b'arena-bench').hexdigest()}.txt"
        cache.parent.mkdir(parents=True)
        cache.write_text(text)

        print("1. saturated streaming (one token per SSE message, rig on CPU 0, client on CPU 1)")
        clients = ["arena", "llama-benchy", "aiohttp", "httpx", "aiohttp+uvloop", "httpx+uvloop"]
        saturated: dict[tuple[str, int], tuple[float, float]] = {}
        for concurrency, tokens in ((10, int(20000 * scale)), (64, int(3000 * scale))):
            with FakeServerProcess(["--tokenizer", str(tokenizer), "--decode-gap-ms", "0", "--messages-per-write", "16"], cpu_core=SERVER_CORE) as rig:
                for name in clients:
                    saturated[name, concurrency] = cpu_per_mtok(name, rig.url, concurrency, tokens, workdir)
                    per, rate = saturated[name, concurrency]
                    print(f"   c={concurrency:<3} {name:15s} {per:6.2f} s/Mtok   {rate / 1000:6.1f}k tok/s")

        print("2. paced streaming (64 streams x 200 tok/s)")
        paced: dict[str, float] = {}
        with FakeServerProcess(["--tokenizer", str(tokenizer), "--decode-gap-ms", "5"], cpu_core=SERVER_CORE) as rig:
            for name in ("arena", "llama-benchy"):
                paced[name], _ = cpu_per_mtok(name, rig.url, 64, int(1000 * scale), workdir)
                print(f"   c=64  {name:13s} {paced[name]:6.2f} s/Mtok")

        print("3. TTFT error: measured minus the rig's logged 50 ms wait (ms)")
        errors: dict[tuple[str, int], list[float]] = {}
        for concurrency, batches in ((1, 20), (10, 4), (64, 2)):
            for name in ("arena", "llama-benchy"):
                errors[name, concurrency] = ttft_errors(name, concurrency, max(1, int(batches * scale)), workdir, tokenizer)
                values = errors[name, concurrency]
                print(f"   c={concurrency:<3} {name:13s} p50 {percentile(values, 50):+7.2f}   p99 {percentile(values, 99):+7.2f}   (n={len(values)})")

        print("\nratios (Arena / llama-benchy; below 1 is better)")
        for concurrency in (10, 64):
            arena, benchy = saturated["arena", concurrency][0], saturated["llama-benchy", concurrency][0]
            print(f"   CPU per token, saturated, c={concurrency}:   {arena / benchy:.2f}   (target <= 0.50)")
            print(
                f"   tokens/s sustained, c={concurrency}:         {saturated['arena', concurrency][1] / saturated['llama-benchy', concurrency][1]:.2f}x llama-benchy"
            )
            for library in ("aiohttp", "httpx", "aiohttp+uvloop", "httpx+uvloop"):
                print(f"   CPU per token vs minimal {library:14s} loop, c={concurrency}: {arena / saturated[library, concurrency][0]:.2f}")
        print(f"   CPU per token, paced, c=64:        {paced['arena'] / paced['llama-benchy']:.2f}")
        for concurrency in (1, 10, 64):
            ours, theirs = errors["arena", concurrency], errors["llama-benchy", concurrency]
            print(
                f"   TTFT error p99, c={concurrency:<3}            {percentile(ours, 99):+.2f} ms vs {percentile(theirs, 99):+.2f} ms"
                + ("   (target < 1 ms)" if concurrency == 64 else "")
            )
    print(f"\ntook {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

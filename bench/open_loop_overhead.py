"""The open-loop client, side by side with ``vllm bench serve``: schedule lateness, CPU per
token, and memory over a long run.

1. Lateness (actual send minus scheduled send) at 10, 100 and 500 requests/s, short requests.
   Arena's is exact (it records the schedule); vLLM saves no schedule origin, so its lateness is
   measured against its own first request (a lower bound), from ``--save-detailed`` times.
2. Client CPU seconds per million streamed tokens (the rig streams as fast as it can; 64 requests
   at once; the difference of a long and a short run cancels start-up costs).
3. Memory: 100,000 short requests (rate inf, 64 in flight), records streaming to disk; the peak
   RSS of Arena's process.

The rig runs on CPU 0, clients on CPU 1. vLLM columns appear when ``vllm`` is on PATH (or
``--vllm PATH``); it is several GB and not a dependency.

    python bench/open_loop_overhead.py          # about 3 minutes with vLLM, 1 without
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import SERVER_CORE, run_measured  # noqa: E402

from arena_core.loadgen.arrivals import arrival_offsets  # noqa: E402
from arena_core.testing.fake_server import FakeServerProcess  # noqa: E402

TOKENIZER = ROOT / "tests" / "fixtures" / "vllm" / "tokenizer"
MODEL = "fake-org/fake-model"
SEED = 42


def arena_child(url: str, rate: float, count: int, input_len: int, output_len: int, cap: int, out: Path) -> None:
    """Run Arena's vllm-bench native engine once and print what the parent needs."""
    from arena_core import ArenaHooks, Endpoint, OpenLoopShape, RunContext, RunOptions, WorkloadSpec, make_plugin_manager

    runner = ArenaHooks(make_plugin_manager(autoload=False)).registry.get("runners", "vllm-bench")
    shape = OpenLoopShape(
        dataset="random",
        input_tokens=input_len,
        output_tokens=output_len,
        range_ratio=0.0,
        request_rate=rate,
        burstiness=1.0,
        num_prompts=count,
        max_concurrency=cap or None,
    )
    spec = WorkloadSpec(name="bench", title="bench", description="bench", runner="vllm-bench", shape=shape, seed=SEED)
    context = RunContext(endpoint=Endpoint(base_url=url, model=MODEL), output_dir=out, options=RunOptions(tokenizer=TOKENIZER))
    started = time.perf_counter()
    result = runner.create("native").run(spec, context)
    # lateness as the server sees it: from the due time to just before the request's write
    from arena_core import percentile, read_records

    sent = [(r.sent_ns - r.scheduled_ns) / 1e6 for r in read_records(out / "records.jsonl") if r.scheduled_ns is not None] if not cap else [0.0]
    print(
        json.dumps(
            {
                "lateness_p50_ms": result.metrics["lateness_p50_s"] * 1000,
                "lateness_p99_ms": result.metrics["lateness_p99_s"] * 1000,
                "send_lateness_p50_ms": percentile(sent, 50),
                "send_lateness_p99_ms": percentile(sent, 99),
                "tokens": result.metrics["output_tokens"],
                "failed": result.failed,
                "wall_s": time.perf_counter() - started,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "records": sum(1 for _ in open(out / "records.jsonl")),
            }
        )
    )


def arena(url: str, rate: float, count: int, input_len: int, output_len: int, cap: int, work: Path) -> tuple[float, dict]:
    out = work / f"arena-{rate}-{count}-{output_len}"
    cpu, text = run_measured([sys.executable, __file__, "--child", url, str(rate), str(count), str(input_len), str(output_len), str(cap), str(out)])
    shutil.rmtree(out, ignore_errors=True)
    return cpu, json.loads(text.strip().splitlines()[-1])


def vllm(binary: str, url: str, rate: float, count: int, input_len: int, output_len: int, cap: int, work: Path) -> tuple[float, dict]:
    name = f"vllm-{rate}-{count}-{output_len}.json"
    command = [
        binary,
        "bench",
        "serve",
        "--backend",
        "openai-chat",
        "--base-url",
        url,
        "--endpoint",
        "/v1/chat/completions",
        "--model",
        MODEL,
        "--tokenizer",
        str(TOKENIZER),
        "--dataset-name",
        "random",
        "--random-input-len",
        str(input_len),
        "--random-output-len",
        str(output_len),
        "--num-prompts",
        str(count),
        "--request-rate",
        str(rate),
        "--seed",
        str(SEED),
        "--save-result",
        "--save-detailed",
        "--result-dir",
        str(work),
        "--result-filename",
        name,
        "--disable-tqdm",
    ] + (["--max-concurrency", str(cap)] if cap else [])
    cpu, _ = run_measured(command, {**os.environ, "HF_HUB_OFFLINE": "1"})
    report = json.loads((work / name).read_text())
    arrivals = [s - q for s, q in zip(report["start_times"], report["queue_times"])]
    offsets = arrival_offsets(count, rate, 1.0, SEED) if rate != float("inf") else [0.0] * count
    late = sorted(max(0.0, (a - arrivals[0]) - (o - offsets[0])) * 1000 for a, o in zip(arrivals, offsets))
    return cpu, {
        "lateness_p50_ms": late[len(late) // 2],
        "lateness_p99_ms": late[int(0.99 * (len(late) - 1))],
        "tokens": report["total_output_tokens"],
        "failed": report["failed"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="open-loop client overhead, side by side")
    parser.add_argument("--vllm", default=shutil.which("vllm"), help="the vllm executable (default: from PATH)")
    parser.add_argument("--child", nargs=7, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        url, rate, count, input_len, output_len, cap, out = args.child
        arena_child(url, float(rate), int(count), int(input_len), int(output_len), int(cap), Path(out))
        return
    clients = {"arena": arena} | ({"vllm": lambda *a: vllm(args.vllm, *a)} if args.vllm else {})
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="arena-open-bench-") as scratch:
        work = Path(scratch)
        rig_args = ["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "1"]
        print("1. schedule lateness, 5 s of short requests (16 in / 8 out)")
        lateness = {}
        for rate in (10, 100, 500):
            for name, client in clients.items():
                with FakeServerProcess(rig_args, cpu_core=SERVER_CORE) as rig:
                    _, result = client(rig.url, float(rate), rate * 5, 16, 8, 0, work)
                lateness[name, rate] = result
                print(
                    f"   {rate:4d} req/s  {name:6s} p50 {result['lateness_p50_ms']:6.2f} ms  p99 {result['lateness_p99_ms']:6.2f} ms  failed {result['failed']}"
                    + (
                        f"   (to the write: p50 {result['send_lateness_p50_ms']:.2f} ms, p99 {result['send_lateness_p99_ms']:.2f} ms)"
                        if "send_lateness_p99_ms" in result
                        else ""
                    )
                )
        print("2. client CPU per million tokens (64 requests at once, rig as fast as it can)")
        cpu = {}
        with FakeServerProcess(
            ["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "0", "--messages-per-write", "16"], cpu_core=SERVER_CORE
        ) as rig:
            for name, client in clients.items():
                long_cpu, long = client(rig.url, float("inf"), 64, 16, 4000, 0, work)
                short_cpu, short = client(rig.url, float("inf"), 64, 16, 400, 0, work)
                cpu[name] = (long_cpu - short_cpu) / (long["tokens"] - short["tokens"]) * 1e6
                print(f"   {name:6s} {cpu[name]:6.2f} s/Mtok")
        print("3. memory: 100,000 short requests, rate inf, 64 in flight, records to disk")
        with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "0"], cpu_core=SERVER_CORE) as rig:
            _, big = arena(rig.url, float("inf"), 100_000, 16, 4, 64, work)
        print(
            f"   arena  peak RSS {big['peak_rss_mb']:.0f} MB, {big['records']} records on disk, {big['failed']} failed, {big['wall_s']:.0f} s   (target < 200 MB)"
        )
        print("\nratios and targets")
        print(f"   lateness p99 at 100 req/s: {lateness['arena', 100]['lateness_p99_ms']:.2f} ms   (target < 2 ms)")
        if "vllm" in cpu:
            print(f"   client CPU per token, Arena / vLLM: {cpu['arena'] / cpu['vllm']:.2f}   (target <= 0.50)")
            for rate in (10, 100, 500):
                print(
                    f"   lateness p99 at {rate} req/s, Arena vs vLLM (lower bound): {lateness['arena', rate]['lateness_p99_ms']:.2f} vs {lateness['vllm', rate]['lateness_p99_ms']:.2f} ms"
                )
    print(f"\ntook {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

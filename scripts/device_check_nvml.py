"""A GPU check, run by hand on a machine with an NVIDIA GPU (not part of the test suite):
detection through NVML, then the NVML probe sampled by Arena's telemetry while a GPU load runs
in a child process (PyTorch matmuls holding about 8 GiB), summarised as a workload's figures.

    PYTHONPATH=.:plugins python3 scripts/device_check_nvml.py OUT.json
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from arena_core import ArenaHooks, make_plugin_manager
from arena_core.config import ArenaConfig
from arena_core.run.probes import probes_for, throttle_reason_names
from arena_core.run.telemetry import TelemetrySampler, summarise

LOAD = """
import time, torch
x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
hold = torch.empty(8 * 2**30, dtype=torch.uint8, device="cuda")
end = time.time() + 8
n = 0
while time.time() < end:
    y = x @ x
    n += 1
torch.cuda.synchronize()
print(n)
"""


def main(out: Path) -> None:
    report: dict = {}
    hooks = ArenaHooks(make_plugin_manager(autoload=False))
    detected = hooks.detect_hardware(ArenaConfig())
    report["detected"] = {"profile": detected.profile.name, "reason": detected.reason, "probes": list(detected.profile.probes)}
    child = subprocess.Popen([sys.executable, "-c", LOAD], stdout=subprocess.PIPE, text=True)
    probes, notes = probes_for(detected.profile.probes, server_pid=lambda: child.pid)
    report["notes"] = notes
    with tempfile.TemporaryDirectory() as tmp:
        sampler = TelemetrySampler(Path(tmp) / "telemetry.jsonl", metrics_url=None, interval_s=0.5, probes=probes).start()
        matmuls = int(child.communicate(timeout=120)[0].strip() or 0)
        samples = sampler.stop()
    report["matmuls"] = matmuls
    report["samples"] = samples
    report["throttle_reasons_seen"] = sorted({n for s in samples for k, v in s.items() if k.endswith("throttle_mask") for n in throttle_reason_names(v)})
    report["summary"] = summarise(samples, unified=detected.profile.unified_memory, output_tokens=matmuls * 1000)
    report["sampler_cpu_ms_per_sample"] = sampler.cpu_ns / len(samples) / 1e6
    out.write_text(json.dumps(report, indent=2, default=str))
    print(json.dumps({k: v for k, v in report.items() if k != "samples"}, indent=2, default=str))


if __name__ == "__main__":
    main(Path(sys.argv[1]))

"""Hardware probes: NVML on a discrete GPU and on GB10 (through a stand-in of ``pynvml`` that
answers as the real driver does), and the per-workload summary built from their samples."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from arena_backends.llama_cpp import LLAMA_CPP_METRICS as LLAMA_CPP_DIALECT
from arena_backends.vllm_dialect import VLLM_METRICS
from arena_core.report.model_card import energy_rows
from arena_core.run.manifest import MEASURED_BY_ARENA
from arena_core.run.probes import RaplProbe, descendants, probes_for, server_rss_probe, throttle_reason_names
from arena_core.run.telemetry import server_gauges, summarise
from arena_core.types import CardWorkload, ModelCard

#: What the built-in backends' servers call their /metrics figures.
DIALECTS = (VLLM_METRICS, LLAMA_CPP_DIALECT)


class NVMLError(Exception):
    pass


def fake_nvml(*, memory_supported: bool, processes=(), energy_mj=(1_000_000, 1_600_000), power_mw=300_000, reasons=0x4):
    """A ``pynvml`` stand-in: one GPU; memory raises "Not Supported" as on GB10 when asked to."""
    energy = iter(energy_mj)
    calls = {"init": 0, "shutdown": 0}

    def memory_info(handle):
        if not memory_supported:
            raise NVMLError("Not Supported")
        return types.SimpleNamespace(used=40 * 10**9, total=80 * 10**9)

    module = types.SimpleNamespace(
        NVMLError=NVMLError,
        NVML_CLOCK_SM=1,
        nvmlInit=lambda: calls.__setitem__("init", calls["init"] + 1),
        nvmlShutdown=lambda: calls.__setitem__("shutdown", calls["shutdown"] + 1),
        nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: f"handle{i}",
        nvmlDeviceGetMemoryInfo=memory_info,
        nvmlDeviceGetComputeRunningProcesses=lambda h: [types.SimpleNamespace(pid=p, usedGpuMemory=m) for p, m in processes],
        nvmlDeviceGetPowerUsage=lambda h: power_mw,
        nvmlDeviceGetTotalEnergyConsumption=lambda h: next(energy),
        nvmlDeviceGetClockInfo=lambda h, clock: 1980,
        nvmlDeviceGetCurrentClocksEventReasons=lambda h: reasons,
    )
    module.calls = calls
    return module


def test_discrete_gpu_probe_reads_device_and_server_memory_power_energy_clocks(tmp_path):
    nvml = fake_nvml(memory_supported=True, processes=[(4242, 30 * 10**9), (999, 5 * 10**9)])
    probes, notes = probes_for(("nvml",), nvml=nvml, server_pid=lambda: 4242, meminfo=tmp_path / "absent")
    assert notes == [] and len(probes) == 3  # meminfo, the server's processes, NVML
    sample = {}
    for probe in probes:
        sample.update(probe())
    assert sample == {
        "gpu0_power_w": 300.0,
        "gpu0_energy_j": 1000.0,
        "gpu0_sm_clock_mhz": 1980.0,
        "gpu0_throttle_mask": 4,
        "gpu0_memory_used_bytes": 40 * 10**9,
        "gpu0_server_memory_bytes": 30 * 10**9,  # only the server's process
    }


def test_gb10_probe_leaves_out_memory_nvml_does_not_support(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       127605464 kB\nMemAvailable:   88017764 kB\n")
    nvml = fake_nvml(memory_supported=False)
    probes, _ = probes_for(("meminfo", "nvml-power"), nvml=nvml, meminfo=meminfo)
    sample = {}
    for probe in probes:
        sample.update(probe())
    assert "gpu0_memory_used_bytes" not in sample  # "Not Supported" is absent, never 0
    assert sample["memory_used_bytes"] == (127605464 - 88017764) * 1024 and sample["gpu0_power_w"] == 300.0


def test_missing_nvml_is_a_note_not_a_failure(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "pynvml", None)  # "not installed"
    probes, notes = probes_for(("nvml",))
    assert len(probes) == 2 and "nvidia-ml-py is not installed" in notes[0]  # meminfo and the server's processes


def test_throttle_reasons_are_named():
    assert throttle_reason_names(0x1 | 0x4 | 0x40) == ["gpu_idle", "sw_power_cap", "hw_thermal_slowdown"]


def test_descendants_follow_the_process_tree(tmp_path):
    for pid, ppid in ((10, 1), (11, 10), (12, 11), (13, 1)):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(f"{pid} (vllm serve) S {ppid} 0 0")
    assert descendants(10, tmp_path) == {10, 11, 12}


def test_server_rss_sums_the_process_tree(tmp_path):
    for pid, ppid, kb in ((10, 1, 1000), (11, 10, 500), (13, 1, 9999)):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(f"{pid} (llama-server) S {ppid} 0 0")
        (tmp_path / str(pid) / "status").write_text(f"Name:\tllama-server\nVmRSS:\t  {kb} kB\n")
    assert server_rss_probe(lambda: 10, tmp_path)() == {"server_rss_bytes": 1500 * 1024}
    assert server_rss_probe(lambda: None, tmp_path)() == {}
    summary = summarise([{"t_ns": 0, "server_rss_bytes": 2 * 10**9}, {"t_ns": 1, "server_rss_bytes": 3 * 10**9}], unified=True, dialects=DIALECTS)
    assert summary["server_rss_peak_gb"] == 3.0


def _samples(energy, power, memory, t_s=(0, 1, 2)):
    return [
        {"t_ns": int(t * 1e9), "gpu0_energy_j": e, "gpu0_power_w": p, "gpu0_memory_used_bytes": m, "memory_used_bytes": 5 * 10**9, "gpu0_throttle_mask": mask}
        for t, e, p, m, mask in zip(t_s, energy, power, memory, (1, 4, 1))
    ]


def test_summary_on_a_discrete_gpu_uses_device_memory_and_the_energy_counter():
    summary = summarise(_samples((100.0, 400.0, 700.0), (300, 310, 290), (40e9, 42e9, 41e9)), unified=False, output_tokens=2000, dialects=DIALECTS)
    assert summary["peak_memory_gb"] == 42.0
    assert summary["energy_j"] == 600.0 and summary["mean_power_w"] == 300.0
    assert summary["energy_per_1k_output_tokens_j"] == 300.0  # no server counters: the measured output tokens
    assert summary["throttled_fraction"] == pytest.approx(1 / 3)  # "gpu_idle" alone is not throttling
    unified = summarise(_samples((100.0, 400.0, 700.0), (300, 310, 290), (40e9, 42e9, 41e9)), unified=True, dialects=DIALECTS)
    assert unified["peak_memory_gb"] == 5.0  # unified memory: the system figure


def test_energy_from_power_when_there_is_no_counter():
    samples = [{"t_ns": 0, "gpu0_power_w": 100.0}, {"t_ns": 2 * 10**9, "gpu0_power_w": 200.0}]
    assert summarise(samples, unified=True, output_tokens=100, dialects=DIALECTS)["energy_j"] == 300.0  # trapezoid


VLLM_PAGES = [
    {"vllm:kv_cache_usage_perc": 0.1, "vllm:num_requests_waiting": 0, "vllm:prefix_cache_hits_total": 100, "vllm:prefix_cache_queries_total": 1000},
    {"vllm:kv_cache_usage_perc": 0.7, "vllm:num_requests_waiting": 12, "vllm:prefix_cache_hits_total": 400, "vllm:prefix_cache_queries_total": 2000},
]
OLD_VLLM_PAGES = [
    {"vllm:gpu_cache_usage_perc": 0.2, "vllm:gpu_prefix_cache_hit_rate": 0.1},
    {"vllm:gpu_cache_usage_perc": 0.5, "vllm:gpu_prefix_cache_hit_rate": 0.25},
]
LLAMA_CPP_PAGES = [
    {"llamacpp:requests_processing": 0, "llamacpp:requests_deferred": 0, "llamacpp:prompt_tokens_total": 0, "llamacpp:prompt_tokens_cached_total": 0},
    {"llamacpp:requests_processing": 4, "llamacpp:requests_deferred": 2, "llamacpp:prompt_tokens_total": 900, "llamacpp:prompt_tokens_cached_total": 100},
]


def test_server_gauges_have_one_name_whatever_the_engine():
    vllm = server_gauges(VLLM_PAGES, DIALECTS)
    assert vllm["kv_cache_usage_peak"] == 0.7 and vllm["requests_waiting_peak"] == 12
    assert vllm["prefix_cache_hit_rate"] == pytest.approx(300 / 1000)
    old = server_gauges(OLD_VLLM_PAGES, DIALECTS)
    assert old["kv_cache_usage_peak"] == 0.5 and old["prefix_cache_hit_rate"] == 0.25
    llama = server_gauges(LLAMA_CPP_PAGES, DIALECTS)
    assert llama["requests_running_peak"] == 4 and llama["requests_waiting_peak"] == 2
    assert llama["prefix_cache_hit_rate"] == pytest.approx(100 / 1000)  # cached / (cached + processed)
    assert "kv_cache_usage_peak" not in llama  # this llama.cpp does not publish it: absent, not 0


def powercap(root: Path, packages: dict[str, tuple[int, int]], *, readable: bool = True) -> Path:
    """A powercap tree: ``{"intel-rapl:0": (energy_uj, max_energy_range_uj)}``, each a package,
    with a core sub-domain that must not be counted twice."""
    for domain, (energy, wrap) in packages.items():
        for path, name in ((root / domain, "package-" + domain[-1]), (root / domain / f"{domain}:0", "core")):
            path.mkdir(parents=True, exist_ok=True)
            (path / "name").write_text(name + "\n")
            (path / "max_energy_range_uj").write_text(f"{wrap}\n")
            (path / "energy_uj").write_text(f"{energy}\n" if readable else "")
        (root / f"{domain}:0").mkdir(exist_ok=True)  # sysfs lists sub-domains beside their packages too
    return root


def test_rapl_sums_the_packages_in_joules_and_unwraps_their_counters(tmp_path):
    root = powercap(tmp_path / "powercap", {"intel-rapl:0": (1_000_000, 10_000_000), "intel-rapl:1": (9_500_000, 10_000_000)})
    probe, why = RaplProbe.find(root)
    assert probe is not None and len(probe.packages) == 2 and "2 CPU package" in why
    assert probe() == {"cpu_energy_j": 0.0}
    (root / "intel-rapl:0" / "energy_uj").write_text("4000000\n")  # +3 J
    (root / "intel-rapl:1" / "energy_uj").write_text("500000\n")  # wrapped: +0.5 J to the range, +0.5 J after
    assert probe() == {"cpu_energy_j": pytest.approx(4.0)}


def test_without_readable_rapl_the_note_says_so_and_nothing_is_guessed(tmp_path):
    _, notes = probes_for(("rapl",), powercap=tmp_path / "absent")
    assert notes == [f"rapl: {tmp_path / 'absent'} has no RAPL domains on this machine: no CPU energy recorded"]
    hidden = powercap(tmp_path / "hidden", {"intel-rapl:0": (1, 10)}, readable=False)
    probes, notes = probes_for(("rapl",), powercap=hidden)
    assert "not readable here" in notes[0] and not any(isinstance(p, RaplProbe) for p in probes)
    summary = summarise([{"t_ns": 0, "memory_used_bytes": 1}, {"t_ns": 10**9, "memory_used_bytes": 1}], unified=True, output_tokens=100, dialects=DIALECTS)
    assert not any(key.startswith("energy") or key.startswith("cpu_energy") for key in summary)


def test_energy_per_token_counts_tokens_over_the_same_window_as_the_energy(tmp_path):
    # a rig energy source of known joules: 120 J of CPU package over the window, 30 J of GPU
    samples = [
        {
            "t_ns": 0,
            "cpu_energy_j": 0.0,
            "gpu0_energy_j": 10.0,
            "metrics": {"llamacpp:tokens_predicted_total": 100, "llamacpp:prompt_tokens_total": 50, "llamacpp:prompt_tokens_cached_total": 0},
        },
        {
            "t_ns": 4 * 10**9,
            "cpu_energy_j": 120.0,
            "gpu0_energy_j": 40.0,
            "metrics": {"llamacpp:tokens_predicted_total": 400, "llamacpp:prompt_tokens_total": 950, "llamacpp:prompt_tokens_cached_total": 300},
        },
    ]
    summary = summarise(samples, unified=True, output_tokens=250, dialects=DIALECTS)  # the measured runs: fewer than the window saw
    assert summary["cpu_energy_j"] == 120.0 and summary["energy_j"] == 30.0 and summary["energy_total_j"] == 150.0
    assert summary["mean_power_w"] == 37.5
    assert summary["energy_per_output_token_j"] == 0.5  # 150 J over the 300 tokens the server generated in the window
    assert summary["energy_per_token_j"] == pytest.approx(150 / (300 + 900 + 300))
    assert summary["energy_per_1k_output_tokens_j"] == 500.0


def energy_card(metrics: dict, notes: tuple[str, ...] = ()) -> ModelCard:
    line = CardWorkload(name="chat", tokens_per_second=10.0, ttft_p50_s=0.5, metrics=metrics)
    return ModelCard(
        run_id="r", model="m", model_title="M", hardware="cpu-host", hardware_title="CPU", backend="llama-cpp", measured_with="native",
        measured_at="", source=MEASURED_BY_ARENA, expected=("chat",), workloads=(line,), telemetry_notes=notes,
    )  # fmt: skip


def test_the_card_says_what_energy_was_read_from_or_that_none_was():
    measured = energy_rows(energy_card({"cpu_energy_j": 150.0, "energy_per_output_token_j": 0.5, "energy_per_token_j": 0.1}))
    assert measured == [
        (
            "energy, chat",
            "0.5 J per output token, 0.1 J per token (prompt and output); read from the CPU packages (RAPL powercap counters; not memory, disks or the rest of the box)",
        )
    ]
    note = "rapl: /sys/class/powercap has no RAPL domains on this machine: no CPU energy recorded"
    assert energy_rows(energy_card({}, (note,))) == [("energy", f"not measured: {note}")]
    assert energy_rows(energy_card({})) == [("energy", "not measured: this machine's profile names no energy counter")]


@pytest.mark.parametrize(
    "predicted",
    [float("nan"), float("inf"), -200.0, 100.0],  # not a number, endless, counting down, fewer than the workload measured
)
def test_a_servers_token_counter_is_believed_only_when_it_can_be_true(predicted):
    samples = [
        {"t_ns": 0, "cpu_energy_j": 0.0, "metrics": {"llamacpp:tokens_predicted_total": 0.0, "llamacpp:prompt_tokens_total": 0.0}},
        {"t_ns": 10**9, "cpu_energy_j": 50.0, "metrics": {"llamacpp:tokens_predicted_total": predicted, "llamacpp:prompt_tokens_total": -100.0}},
    ]
    summary = summarise(samples, unified=True, output_tokens=250, dialects=DIALECTS)
    assert summary["energy_per_output_token_j"] == 0.2  # 50 J over the workload's own 250 tokens
    assert "energy_per_token_j" not in summary

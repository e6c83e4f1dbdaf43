"""What vLLM is given to serve: a Hugging Face folder, a Hugging Face id, or a GGUF made servable.

A model that names a GGUF file (the embedded Gemma 3 270M) is served from those very weights, so
that the same model on llama.cpp and on vLLM differ only where a card says: vLLM's CPU build reads
no GGUF, so the file is dequantized once by transformers' GGUF loader (``gguf_to_hf.py``, in vLLM's
interpreter) into a bf16 folder kept in Arena's cache under the GGUF's SHA-256, and every later
start reuses it. The folder is written beside its final place and renamed, so one that exists is
whole.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from attrs import frozen

from arena_backends.llama_cpp import gguf_file
from arena_core import ModelSpec, ToolFailed, UsageError, read_json_file, sha256_of

#: The conversion of a 270M model took 62 s on 2 cores; a 4B model's would take tens of minutes.
CONVERT_TIMEOUT_S = 3600
CACHE_ENV = "ARENA_CACHE_DIR"
#: What the folder's conversion record is called (its source's digest, the versions that made it).
RECORD = "arena-conversion.json"
RECORD_BYTES = 64 * 2**10

#: The chat template a model without one is served with: ChatML, which llama.cpp also falls back
#: to for a GGUF without a template, so that both engines see the same prompt; the BOS token
#: first, which llama.cpp adds when it tokenizes a chat and vLLM leaves to the template.
CHATML_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
CHATML_SAID = "ChatML, Arena's stated fallback: the model's tokenizer has no chat template (llama.cpp falls back to ChatML too)"


@frozen(kw_only=True)
class Weights:
    """What vLLM serves: ``served`` is its ``--model`` (a folder or a Hugging Face id)."""

    served: str
    #: the folder on this machine, where there is one (a Hugging Face id vLLM fetches itself: None)
    folder: Path | None
    #: the weights' bytes (0 where unknown), for sizing the server's memory
    bytes: int
    #: what the card says of them
    said: str


def cache_root() -> Path:
    """Arena's cache: ``ARENA_CACHE_DIR``, else ``$XDG_CACHE_HOME/arena``, else ``~/.cache/arena``."""
    named = os.environ.get(CACHE_ENV, "").strip()
    if named:
        return Path(named).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "arena"


def has_chat_template(folder: Path) -> bool:
    """Whether a Hugging Face folder's tokenizer carries a chat template."""
    if (folder / "chat_template.jinja").is_file() or (folder / "chat_template.json").is_file():
        return True
    try:
        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and bool(config.get("chat_template"))


def _folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.glob("*.safetensors"))


def servable(model: ModelSpec, python: str) -> Weights:
    """The weights of ``model`` as vLLM takes them (``python``: vLLM's interpreter, which converts
    a GGUF; "" where only a ``vllm`` program is known, which serves no GGUF)."""
    if folder := model.files.get("hf_folder"):
        path = Path(folder)
        return Weights(served=str(path), folder=path, bytes=_folder_bytes(path), said=f"the Hugging Face folder {path.name} as it is")
    if source := model.files.get("gguf"):
        if not python:
            raise UsageError(f"model {model.name!r} is a GGUF file, which needs vLLM's interpreter to convert (ARENA_VLLM_PYTHON)")
        return converted(gguf_file(source), python)
    return Weights(served=model.hf_id, folder=None, bytes=0, said=f"{model.hf_id} from the Hugging Face hub or its local cache")


def converted(gguf: Path, python: str) -> Weights:
    """``gguf`` dequantized to a bf16 folder in the cache (converted now, or found there)."""
    digest = sha256_of(gguf)
    folder = cache_root() / "vllm-weights" / f"{gguf.stem[:60]}-{digest[:16]}"
    record = _record(folder)
    if record is None:
        _convert(gguf, folder, python, digest)
        record = _record(folder)
        if record is None:
            raise ToolFailed(f"converting {gguf.name} for vLLM left no readable {RECORD} in {folder}")
    made_by = "".join(char for char in str(record.get("transformers", "?")) if char.isprintable())[:20]
    said = (
        f"{gguf.name} dequantized to bf16 safetensors by transformers {made_by}'s GGUF loader "
        f"(vLLM's CPU build reads no GGUF; the GGUF's SHA-256 {digest[:16]}…)"
    )
    return Weights(served=str(folder), folder=folder, bytes=_folder_bytes(folder), said=said)


def _record(folder: Path) -> dict | None:
    """A cached folder's conversion record, or None where there is none to believe (a folder
    without one is not whole, and is converted again)."""
    try:
        record = read_json_file(folder / RECORD, max_bytes=RECORD_BYTES)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _convert(gguf: Path, folder: Path, python: str, digest: str) -> None:
    scratch = folder.with_name(f"{folder.name}.partial-{os.getpid()}")
    scratch.mkdir(parents=True, exist_ok=True)
    log = folder.with_name(f"{folder.name}.log")
    script = Path(__file__).with_name("gguf_to_hf.py")
    started = time.monotonic()
    try:
        with open(log, "w", encoding="utf-8") as handle:
            try:
                done = subprocess.run(
                    [python, str(script), str(gguf), str(scratch)],
                    stdout=subprocess.PIPE,
                    stderr=handle,
                    text=True,
                    timeout=CONVERT_TIMEOUT_S,
                    check=False,
                    env={**os.environ, "PYTHONSAFEPATH": "1"},  # nothing of the working folder is imported
                )
            except subprocess.TimeoutExpired:
                raise ToolFailed(f"converting {gguf.name} for vLLM took over {CONVERT_TIMEOUT_S} s (log: {log})") from None
        if done.returncode != 0:
            raise ToolFailed(f"converting {gguf.name} for vLLM failed with status {done.returncode} (log: {log})")
        try:
            record = json.loads(done.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise ToolFailed(f"converting {gguf.name} for vLLM said nothing of what it did (log: {log})") from None
        record.update(sha256=digest, wall_s=round(time.monotonic() - started, 1))
        (scratch / RECORD).write_text(json.dumps(record, indent=2), encoding="utf-8")
        if folder.exists() and _record(folder) is None:  # a folder left without its record is not whole
            shutil.rmtree(folder, ignore_errors=True)
        try:
            scratch.rename(folder)
        except OSError:  # another run converted it meanwhile: theirs is as good
            if _record(folder) is None:
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # gone once renamed; else what a failure left

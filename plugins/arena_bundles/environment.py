"""What a bundle says of where its run was measured: the engine and its version, Arena's
version, the hardware profile and how it was chosen, the served weights' SHA-256 and the chat
template's, and the exact commands. Figures the run's manifest does not hold are computed here
from files on this machine (the weights), or said to be unknown, with why."""

from __future__ import annotations

import hashlib
import platform
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import arena_core as arena

#: The flags that name a server's weights in its command line (llama.cpp, vLLM, SGLang).
WEIGHTS_FLAGS = ("-m", "--model", "--model-path")
TEMPLATE_FLAGS = ("--chat-template", "--chat-template-file")


def _flag_value(command: Sequence[Any], flags: tuple[str, ...]) -> str | None:
    for index, word in enumerate(command[:-1]):
        if word in flags:
            return str(command[index + 1])
    return None


def _served_path(manifest: Any) -> Path | None:
    """The weights the server Arena started was given, when they are on this machine."""
    facts: Mapping[str, Any] = manifest.backend_facts
    command = facts.get("command")
    named = _flag_value(command, WEIGHTS_FLAGS) if isinstance(command, list) else None
    path = Path(named) if named else None
    return path if path is not None and path.exists() else None


def _folder_digest(folder: Path, pattern: str) -> str | None:
    """One SHA-256 over a folder's files matching ``pattern``: of their names and digests, in order."""
    files = sorted(folder.glob(pattern))
    if not files:
        return None
    lines = "".join(f"{arena.sha256_of(f)}  {f.name}\n" for f in files)
    return hashlib.sha256(lines.encode()).hexdigest()


def weights(manifest: Any) -> dict[str, str]:
    path = _served_path(manifest)
    if path is None:
        return {"unknown": "the server's weights are not on this machine (an attached server), or the run did not name them"}
    if path.is_file():
        return {"file": path.name, "sha256": arena.sha256_of(path)}
    digest = _folder_digest(path, "*.safetensors")
    if digest is None:
        return {"unknown": f"{path.name} holds no .safetensors file"}
    return {"folder": path.name, "sha256_of_safetensors": digest, "rule": "SHA-256 of the lines 'SHA-256  name' of its .safetensors files, sorted"}


def chat_template(manifest: Any) -> dict[str, str]:
    command = manifest.backend_facts.get("command")
    given = _flag_value(command, TEMPLATE_FLAGS) if isinstance(command, list) else None
    if given and Path(given).is_file():
        return {"file": Path(given).name, "sha256": arena.sha256_of(Path(given))}
    path = _served_path(manifest)
    if path is not None and path.is_file():
        return {"in": "the weights: a GGUF file holds its template, so the weights' SHA-256 covers it"}
    for name in ("chat_template.jinja", "tokenizer_config.json"):
        if path is not None and (path / name).is_file():
            return {"file": name, "sha256": arena.sha256_of(path / name)}
    return {"unknown": "the template is the server's own and not on this machine"}


def environment(manifest: Any) -> dict[str, Any]:
    facts = manifest.backend_facts
    return {
        "arena_version": arena.__version__,
        "run_arena_version": manifest.arena_version,
        "engine": facts.get("engine") or manifest.backend,
        "engine_version": str(facts.get("version") or facts.get("build") or "not stated by the server"),
        "backend": manifest.backend,
        "instrument": manifest.instrument,
        "hardware": manifest.hardware,
        "hardware_chosen": manifest.hardware_reason,
        "hardware_profile": arena.CONVERTER.unstructure(manifest.hardware_profile) if manifest.hardware_profile else None,
        "weights": weights(manifest),
        "chat_template": chat_template(manifest),
        "server_command": facts.get("command"),
        "workload_commands": dict(manifest.commands),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }

"""A model's ``tokenizer.json`` on this machine, found by the name a server gives its model.

vLLM names its model by the Hugging Face id or the directory it loaded (``/v1/models`` ``root``,
``/tokenizer_info`` ``name_or_path``). An id is looked up in the local Hugging Face cache (where
``huggingface-cli download`` and vLLM itself put it); a directory only when the server runs on
this machine (another machine's paths mean nothing here). Names come from the server, so an id must
look like one (``org/name``, no ``..``) before it becomes part of a path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")


def hub_cache() -> Path:
    """The Hugging Face hub cache as ``huggingface_hub`` finds it: ``HF_HUB_CACHE``, else
    ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``."""
    if explicit := os.environ.get("HF_HUB_CACHE"):
        return Path(explicit).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(home).expanduser() / "hub"


def find_tokenizer(names: Iterable[str], *, server_here: bool) -> Path | None:
    """The first ``tokenizer.json`` found for any of ``names`` (ids, or directories when the
    server runs here), or None."""
    for name in names:
        if HUB_ID.fullmatch(name) and ".." not in name:
            found = _cached(name)
        elif server_here and name.startswith("/"):
            found = Path(name) / "tokenizer.json"
        else:
            continue
        if found is not None and found.is_file():
            return found
    return None


def _cached(hub_id: str) -> Path | None:
    snapshots = hub_cache() / f"models--{hub_id.replace('/', '--')}" / "snapshots"
    main = snapshots.parent / "refs" / "main"
    revision = main.read_text(errors="replace").strip() if main.is_file() else ""
    if re.fullmatch(r"[0-9a-f]{40}", revision):  # the revision huggingface_hub resolves by default
        pinned = snapshots / revision / "tokenizer.json"
        if pinned.is_file():
            return pinned
    candidates = sorted(snapshots.glob("*/tokenizer.json"), key=lambda path: path.stat().st_mtime, reverse=True) if snapshots.is_dir() else []
    return candidates[0] if candidates else None

"""A model named by where its weights are, for a backend that serves Hugging Face folders
(``arena run --backend vllm MODEL``): a local folder (config.json and safetensors) or a Hugging
Face id already in the local cache (nothing is downloaded). Its identity -- architecture,
parameters, precision, context -- is read from its config.json by the reader ``arena predict
--model-config`` uses (:mod:`arena_core.run.model_config`), so a run and a prediction of the same
folder describe the same model.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from arena_core.errors import UsageError
from arena_core.run.identity import slug
from arena_core.run.model_config import cached_snapshot, describe, find_config, read_config
from arena_core.types import ModelSpec

_HF_ID = re.compile(r"[\w.-]+/[\w.-]+")


def names_weights(given: str) -> bool:
    """Whether ``given`` looks like a folder or a Hugging Face id rather than a catalog name."""
    return Path(given).expanduser().is_dir() or bool(_HF_ID.fullmatch(given))


def model_from_weights(given: str) -> ModelSpec:
    """The model whose weights ``given`` names, described by its config.json; a one-line error
    naming ``given`` where it holds no config or no weights."""
    try:
        config = find_config(given)
        is_folder = Path(given).expanduser().is_dir()
        # a cached hub id: its snapshot folder (config.json resolves into the cache's blobs)
        folder = config.parent if is_folder else cached_snapshot(given)
        base = folder.name if is_folder else given.rsplit("/", 1)[-1]
        name = slug(base) or "local-model"
        described = describe(read_config(config), name=name, source=f"{base}/config.json")
    except UsageError as exc:
        raise UsageError(str(exc).replace("--model-config:", f"model {given}:", 1)) from None
    if not any(path.is_file() for path in folder.glob("*.safetensors")):
        raise UsageError(f"model {given}: {folder} holds no *.safetensors weights (vLLM serves a folder with config.json and safetensors)")
    assumed = f"; assumed: {'; '.join(described.assumptions)}" if described.assumptions else ""
    return attrs.evolve(
        described.spec,
        title=base,
        hf_id="" if is_folder else given,
        description=f"read from {base}/config.json{assumed}",
        files={"hf_folder": str(folder.absolute())},
    )

"""Which model a server serves, from what the server and its files say -- never a placeholder.

The server is asked (each read bounded, with a deadline): the OpenAI model list (``id``, vLLM's
``root``, llama.cpp's ``meta`` with parameters and size) and llama.cpp's ``/props`` (its
``model_path``). Where that path is a GGUF file on this machine, its header gives
``general.name``, the architecture and the quantisation (:mod:`arena_core.run.gguf`). From these:

* a catalog entry, when the served id or root is its Hugging Face id or its name;
* else a name made from ``--model-title``, else the GGUF name and quantisation, else the served
  root or id -- with a fingerprint of the facts, so that two runs that share a name but not their
  facts are told apart (:func:`unique_name`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from attrs import frozen

from arena_core.errors import UsageError
from arena_core.run.gguf import gguf_metadata
from arena_core.types import DescribedModel, Endpoint, ModelQuery, ModelSpec, slug

#: The name recorded before Arena named models (and still, where a server says nothing at all).
UNNAMED = "served-model"
#: How much of any string a server reports is kept.
TEXT_CHARS = 120
IDENTITY_DEADLINE_S = 10.0
#: The ``identity`` fact of a run whose model is a catalog entry.
CATALOG_IDENTITY = "the catalog"


@frozen(kw_only=True)
class ServedModel:
    """What a server says it serves: the run's model name and title, and facts for its card."""

    name: str
    title: str
    #: :class:`~arena_core.types.ModelFacts` fields and ``identity``: where the name came from
    facts: Mapping[str, Any]
    #: the catalog entry it is, when one matched
    catalog: str | None = None

    @property
    def fingerprint(self) -> str:
        return str(self.facts.get("fingerprint", ""))


def clean(value: Any) -> str:
    """A server's string, printable and at most :data:`TEXT_CHARS` long ("" for anything else)."""
    if not isinstance(value, str):
        return ""
    text = "".join(char for char in value if char.isprintable())
    return text[:TEXT_CHARS]


def _count(value: Any, most: float) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= most else None


def ask_the_server(endpoint: Endpoint) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """The served model's entry of ``/v1/models`` and ``/props`` (``{}`` for what is absent)."""
    from arena_core.loadgen import ChatClient, run_measurement

    async def both() -> tuple[Any, Any]:
        client = ChatClient(endpoint, request_timeout=IDENTITY_DEADLINE_S)
        try:
            _, models, _ = await client.call("GET", "/v1/models", deadline_s=IDENTITY_DEADLINE_S)
            _, props, _ = await client.call("GET", "/props", deadline_s=IDENTITY_DEADLINE_S)
            return models, props
        finally:
            await client.close()

    models, props = run_measurement(both())
    listed = models.get("data") if isinstance(models, dict) else None
    entries = [entry for entry in listed if isinstance(entry, dict)] if isinstance(listed, list) else []
    entry = next((e for e in entries if e.get("id") == endpoint.model), entries[0] if entries else {})
    return entry, props if isinstance(props, dict) else {}


def served_facts(
    entry: Mapping[str, Any], props: Mapping[str, Any], *, here: bool, describe: Callable[[ModelQuery], DescribedModel | None] | None = None
) -> dict[str, Any]:
    """The facts of the served model, each checked: strings cleaned and cut, numbers bounded. A
    folder served on this machine is described by ``describe`` (the model sources' hook)."""
    facts: dict[str, Any] = {}
    served_id, root = _no_path(clean(entry.get("id"))), _no_path(clean(entry.get("root")))
    if served_id:
        facts["served_name"] = served_id
    if root and root != served_id:
        facts["served_root"] = root
    meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
    if (params := _count(meta.get("n_params"), 1e13)) is not None:
        facts["params_total_b"] = round(params / 1e9, 3)
    if (size := _count(meta.get("size"), 1e13)) is not None:
        facts["file_gb"] = round(size / 1e9, 3)
    raw_root = entry.get("root") if isinstance(entry.get("root"), str) else ""
    if (
        describe
        and here
        and len(raw_root) <= 4096
        and raw_root.isprintable()
        and os.path.isabs(raw_root)
        and os.path.isfile(os.path.join(raw_root, "config.json"))
    ):
        facts.update(_config_facts(Path(raw_root) / "config.json", describe))  # vLLM serving a folder on this machine
    path = props.get("model_path") if isinstance(props.get("model_path"), str) else ""
    path = path if len(path) <= 4096 and path.isprintable() else ""  # read whole: it is opened, not shown
    if path:
        facts["model_file"] = Path(path).name
        if here and path.endswith(".gguf") and Path(path).is_file():
            facts.update(_gguf_facts(gguf_metadata(Path(path))))
    return facts


def _no_path(name: str) -> str:
    """A served name that is a file path (llama.cpp lists its model file's path) as the file's
    name: a card is published, and a path shows a machine's folders."""
    return Path(name).name if name.startswith(("/", "~")) or (len(name) > 2 and name[1:3] in (":\\", ":/")) else name


def _config_facts(config: Path, describe: Callable[[ModelQuery], DescribedModel | None]) -> dict[str, Any]:
    """What a served folder's config.json says of its model -- its name, architecture, parameters
    and precision -- as a model source reads it (nothing where none can)."""
    try:
        described = describe(ModelQuery(source=str(config), named_by="the served folder"))
    except UsageError:
        return {}
    if described is None:
        return {}
    facts: dict[str, Any] = {}
    if name := clean(described.config_name):
        facts["config_name"] = _no_path(name)
    if kind := clean(described.architecture_class):
        facts["architecture"] = kind
    facts["params_total_b"] = described.spec.params_total_b
    facts["precision"] = clean(described.spec.precision)
    return facts


def _gguf_facts(metadata: Mapping[str, Any]) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    for key, fact in (("general.name", "gguf_name"), ("general.architecture", "architecture"), ("quantisation", "quantisation")):
        if text := clean(metadata.get(key)):
            facts[fact] = text
    if (size := _count(metadata.get("file_bytes"), 1e13)) is not None:
        facts["file_gb"] = round(size / 1e9, 3)
    return facts


def identify(facts: Mapping[str, Any], catalog: Mapping[str, ModelSpec], *, title: str | None = None) -> ServedModel:
    """The model ``facts`` describe: a catalog entry when the served id or root names one, else a
    name from ``title``, the GGUF name and quantisation, or the served root or id."""
    said = [facts.get(key, "") for key in ("served_root", "served_name")]
    for spec in catalog.values():
        if any(value and value.lower() in (spec.hf_id.lower(), spec.name) for value in said if spec.hf_id or spec.name):
            return ServedModel(name=spec.name, title=title or spec.title, facts={**facts, "identity": CATALOG_IDENTITY}, catalog=spec.name)
    quant = facts.get("quantisation", "")
    if title:
        base, source = title, "--model-title"
    elif facts.get("gguf_name"):
        base, source = f"{facts['gguf_name']} {quant}".strip(), "the GGUF file's general.name and file type"
    elif facts.get("config_name"):
        base, source = f"{facts['config_name']} {facts.get('precision', '')}".strip(), "the served folder's config.json"
    elif root := facts.get("served_root") or facts.get("served_name"):
        base, source = _last_part(root), "the server's model list"
    else:
        base, source = "", "nothing: the server named no model"
    name = slug(base) or UNNAMED
    fingerprint = _fingerprint(facts)
    if title or not facts.get("config_name"):
        shown = title or (f"{facts['gguf_name']} ({quant})" if facts.get("gguf_name") and quant else base) or "the served model (unnamed)"
    else:
        shown = f"{facts['config_name']} ({facts.get('precision', 'precision not stated')}, {facts.get('architecture', 'architecture not stated')})"
    return ServedModel(name=name, title=shown, facts={**facts, "identity": source, "fingerprint": fingerprint})


def _last_part(path: str) -> str:
    """ "Qwen/Qwen3-8B" stays; "/models/qwen3-8b-q4.gguf" becomes "qwen3-8b-q4"."""
    if path.startswith(("/", ".", "~")) or path.count("/") > 1:
        path = Path(path).name
    return path.removesuffix(".gguf")


def _fingerprint(facts: Mapping[str, Any]) -> str:
    keys = ("served_root", "served_name", "gguf_name", "architecture", "quantisation", "params_total_b", "file_gb", "model_file")
    # facts read since (a served folder's config) join the digest only where present, so that
    # a model named before keeps its fingerprint (a resume, a stored run's name)
    later = {key: facts[key] for key in ("config_name", "precision") if facts.get(key)}
    body = json.dumps({**{key: facts.get(key) for key in keys}, **later}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:12]


def unique_name(served: ServedModel, taken: Mapping[str, set[str]]) -> str:
    """``served.name``, or with its fingerprint appended when stored runs of that name have other
    facts (``taken``: fingerprints by model name): runs of different models never share a name."""
    others = taken.get(served.name, set()) - {served.fingerprint}
    if served.catalog or not others or not served.fingerprint:
        return served.name
    return f"{served.name}-{served.fingerprint[:6]}"

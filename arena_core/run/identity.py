"""Which model a server serves, from what the server and its files say -- never a placeholder.

The server is asked (each read bounded, with a deadline) for the OpenAI model list and for each
page a registered :class:`~arena_core.ServerDialect` reads; each dialect states the facts its
engine's answers hold (a served folder, a model file and its header, parameters, size), and every
fact is checked here again: known fields only, strings cleaned and cut, numbers bounded, no path
of the server's machine kept. From these:

* a catalog entry, when the served id or root is its Hugging Face id or its name;
* else a name made from ``--model-title``, else the model file's name and quantisation, else the
  served folder's config, else the served root or id -- with a fingerprint of the facts, so that
  two runs that share a name but not their facts are told apart (:func:`unique_name`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from arena_core.types import DescribedModel, Endpoint, ModelQuery, ModelSpec, ServerAnswers, ServerDialect, slug

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


def clean(value: Any, chars: int = TEXT_CHARS) -> str:
    """A server's string, printable and at most ``chars`` long ("" for anything else)."""
    if not isinstance(value, str):
        return ""
    text = "".join(char for char in value if char.isprintable())
    return text[:chars]


#: The facts a dialect may state of a served model, each of its kind; the most a number among
#: them may be (billions of parameters, gigabytes).
DIALECT_FACTS = {
    **dict.fromkeys(("served_root", "model_file", "gguf_name", "architecture", "quantisation", "config_name", "precision"), str),
    **dict.fromkeys(("params_total_b", "file_gb"), float),
}
MOST_FIGURE = 1e6
#: Facts that may hold a path of the server's machine: only its last part is kept.
PATH_FACTS = ("served_name", "served_root", "model_file", "config_name")


def ask_the_server(
    endpoint: Endpoint,
    dialects: Sequence[ServerDialect],
    *,
    here: bool,
    describe: Callable[[ModelQuery], DescribedModel | None] | None = None,
    metrics: bool = False,
) -> ServerAnswers:
    """The served model's entry of ``/v1/models``, the JSON object of every page a dialect reads
    (``{}`` for what is absent or not an object) and, with ``metrics``, the Prometheus page."""
    from arena_core.loadgen import ChatClient, run_measurement
    from arena_core.run.telemetry import read_metrics_page

    async def ask() -> tuple[Any, dict[str, Mapping[str, Any]]]:
        client = ChatClient(endpoint, request_timeout=IDENTITY_DEADLINE_S)
        try:
            _, models, _ = await client.call("GET", "/v1/models", deadline_s=IDENTITY_DEADLINE_S)
            pages = {}
            for page in dict.fromkeys(page for dialect in dialects for page in dialect.pages):
                status, answer, exchange = await client.call("GET", page, deadline_s=IDENTITY_DEADLINE_S)
                if status == 200 and isinstance(answer, dict) and not exchange.error:
                    pages[page] = answer
            return models, pages
        finally:
            await client.close()

    models, pages = run_measurement(ask())
    listed = models.get("data") if isinstance(models, dict) else None
    entries = [entry for entry in listed if isinstance(entry, dict)] if isinstance(listed, list) else []
    entry = next((e for e in entries if e.get("id") == endpoint.model), entries[0] if entries else {})
    page = (read_metrics_page(f"{endpoint.base_url}/metrics") or "") if metrics else ""
    return ServerAnswers(model_entry=entry, pages=pages, metrics_page=page, here=here, describe=describe)


def served_facts(answers: ServerAnswers, dialects: Sequence[ServerDialect]) -> dict[str, Any]:
    """The facts of the served model: its id, then what each dialect states (the first to state
    a fact wins), each checked."""
    stated: dict[str, Any] = {"served_name": answers.model_entry.get("id")}
    kinds = {**DIALECT_FACTS, "served_name": str}
    for dialect in dialects:
        said = dialect.model_facts(answers) if dialect.model_facts is not None else {}
        for key, value in said.items() if isinstance(said, Mapping) else ():
            if key in DIALECT_FACTS:
                stated.setdefault(key, value)
    facts = {key: checked for key, value in stated.items() if (checked := _checked(key, value, kinds[key])) not in ("", None)}
    if facts.get("served_root") == facts.get("served_name"):
        facts.pop("served_root", None)
    return facts


def _checked(key: str, value: Any, kind: type) -> str | float | None:
    """A stated fact as it may be kept: a number within bounds, a string cleaned and cut (only
    its last part where it may be a path); anything else is dropped."""
    if kind is str and isinstance(value, str):
        return _no_path(clean(value)) if key in PATH_FACTS else clean(value)
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= MOST_FIGURE:
        return float(value)
    return None


def _no_path(name: str) -> str:
    """A name that is a file path (a server may list its model file's path) as the file's name:
    a card is published, and a path shows a machine's folders."""
    return Path(name).name if name.startswith(("/", "~")) or (len(name) > 2 and name[1:3] in (":\\", ":/")) else name


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

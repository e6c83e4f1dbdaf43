"""How a prediction is used, as ledger folds: which runs a fit may learn from when it predicts a
run (``docs/prediction.md``, "How far to trust it"):

- ``run``: a run predicted from every other run (up to :data:`~arena_prediction.ledger.LEDGER_FOLDS` folds);
- ``model``: every run of a model (its precisions, its builds) predicted from the other models;
- ``family``: every run of a model family predicted from the other families: a new family;
- ``engine-version``: the runs of each engine version predicted from the versions that came
  before it (by the first day each was measured): a new engine version; the oldest is not
  predicted, nothing came before it;
- ``architecture``: each architecture kind (dense, mixture of experts, hybrid state layers)
  predicted from the others, where the store holds at least two runs of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from attrs import frozen

from arena_core import ModelCard, ModelSpec, Registry, version_numbers
from arena_prediction.calibration import model_of

KINDS = ("run", "model", "family", "engine-version", "architecture")


@frozen(kw_only=True)
class LeaveOut:
    """Each run's fold, and which folds a fold's fit learns from (``learns(fold, other)``);
    a run whose fold learns from none is not predicted (not in this leave-out's ledger)."""

    kind: str
    fold_of: Mapping[str, int]
    learns: Callable[[int, int], bool]


def family_of(name: str) -> str:
    """A model's family: its name up to the first word that is a size (``30b``, ``0.8b``), a
    vendor's dash before a version run together (``qwen-3.5-2b`` and ``qwen3.5-0.8b`` are one)."""
    words = re.sub(r"^([a-z]+)-(\d)", r"\1\2", name).split("-")
    kept = []
    for word in words:
        if re.fullmatch(r"\d+(\.\d+)?[bm]", word):
            break
        kept.append(word)
    return "-".join(kept) or name


def architecture_kind(model: ModelSpec | None) -> str:
    """``hybrid`` (state layers: Gated DeltaNet, Mamba), ``moe`` (experts), ``dense``, or ``unknown``."""
    layout = model.architecture if model is not None else None
    if layout is None:
        return "unknown"
    attention = layout.full_attention_layers + layout.sliding_window_layers
    if layout.linear_attention_layers or (layout.full_attention_layers and attention < layout.layers):  # the rest are state layers
        return "hybrid"
    return "moe" if layout.experts else "dense"


def engine_version(card: ModelCard) -> str:
    """The engine version a run was served by (its server's own word, else the card's), as
    ``--engine-version`` takes one: ``0.20.1`` of ``v0.20.1-aarch64``; a build with no number
    (``cu130-nightly``) by its name."""
    stated = str(card.backend_facts.get("version") or "")
    if not stated:
        found = re.search(r"(?:vllm|llama\.cpp|sglang)\S*\s+(\S+)", card.measured_with, flags=re.IGNORECASE)
        stated = found.group(1) if found else "unknown"
    return version_said(stated)


def version_said(text: str) -> str:
    """A version as it is compared: its dotted number (:func:`arena_core.version_numbers`, a
    leading ``v`` dropped), to three places (``0.20`` is ``0.20.0``), where it has one; else the
    build's name."""
    numbers = version_numbers(text.strip().lstrip("vV"))
    return ".".join(str(n) for n in (*numbers, 0, 0)[:3]) if numbers else text[:60]


def _grouped(cards: Sequence[ModelCard], key: Callable[[ModelCard], str]) -> tuple[dict[str, int], list[str]]:
    labels = sorted({key(card) for card in cards})
    return {card.run_id: labels.index(key(card)) for card in cards}, labels


def leave_out(kind: str, cards: Sequence[ModelCard], registry: Registry, run_folds: Mapping[str, int]) -> LeaveOut:
    """The folds of ``kind`` over ``cards`` (one hardware and engine's); ``run_folds``: the ledger's own."""
    if kind == "run":
        return LeaveOut(kind=kind, fold_of=run_folds, learns=lambda fold, other: fold != other)
    if kind in ("model", "family"):
        fold_of, _ = _grouped(cards, (lambda card: card.model) if kind == "model" else (lambda card: family_of(card.model)))
        return LeaveOut(kind=kind, fold_of=fold_of, learns=lambda fold, other: fold != other)
    if kind == "engine-version":
        first_seen: dict[str, str] = {}
        for card in cards:
            version = engine_version(card)
            first_seen[version] = min(first_seen.get(version, card.measured_at), card.measured_at)
        order = sorted(first_seen, key=lambda version: (first_seen[version], version))
        return LeaveOut(kind=kind, fold_of={c.run_id: order.index(engine_version(c)) for c in cards}, learns=lambda fold, other: other < fold)
    if kind == "architecture":
        fold_of, labels = _grouped(cards, lambda card: architecture_kind(model_of(card, registry)))
        held = {labels.index(label) for label in labels if label != "unknown" and list(fold_of.values()).count(labels.index(label)) >= 2}
        return LeaveOut(kind=kind, fold_of=fold_of, learns=lambda fold, other: fold in held and fold != other)
    raise ValueError(f"no leave-out kind {kind!r} (kinds: {', '.join(KINDS)})")

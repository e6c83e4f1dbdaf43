"""The built-in formats of cards and predictions: ``text`` (fitted to the terminal), ``markdown``
(cards) and ``json``.

A default plugin like any other: it registers through ``arena_register_renderers`` and lays the
card out with ``arena_core.card_kit`` alone, so disabling it (``ARENA_DISABLED_PLUGINS``) leaves
the formats a third party registers, and a third party can register its own in their place.
"""

from __future__ import annotations

from collections.abc import Callable

from arena_core import CardView, RendererSpec, card_kit, hookimpl
from arena_renderers.prediction import prediction_json, prediction_text


def _text(view: CardView) -> str:
    return card_kit.card_text(view)


def _markdown(view: CardView) -> str:
    return card_kit.card_text(view, markdown=True)


def _json(view: CardView) -> str:
    return card_kit.render_json(card_kit.card_document(view)) + "\n"


@hookimpl
def arena_register_renderers(register: Callable[[RendererSpec], None]) -> None:
    register(
        RendererSpec(
            name="text",
            description="the card or the prediction fitted to the terminal (--wide: tables as wide as they are)",
            card=_text,
            prediction=prediction_text,
        )
    )
    register(RendererSpec(name="markdown", description="the card as a markdown document", card=_markdown))
    register(
        RendererSpec(
            name="json",
            description="the card, its scores, findings and predictions as one JSON document (arena-card/1); a prediction as one document",
            card=_json,
            prediction=prediction_json,
        )
    )

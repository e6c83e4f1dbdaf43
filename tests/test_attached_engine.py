"""An attached server names its engine: the ``openai`` backend reads it from the server's own
answers (``owned_by`` in ``/v1/models``, llama.cpp's ``/props``), records it with the run, and
its runs are predicted as that engine's (the card's predicted-vs-measured, the error ledger).
A server's answer is believed only as one of the names Arena knows, and a count in range."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import attrs
import pytest

from arena_core import BackendRequest, EndpointSettings
from arena_core.results.cards import load_cards
from arena_core.results.predictions import ledger_of, why_not_predicted


@pytest.fixture
def server() -> Iterator[tuple[str, dict[str, object]]]:
    """(its URL, what it answers: path -> JSON) of a server that answers GETs as told."""
    answers: dict[str, object] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            if self.path not in answers:
                self.send_error(404)
                return
            body = json.dumps(answers[self.path]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", answers
    finally:
        httpd.shutdown()
        httpd.server_close()


def _facts(registry, url: str, tmp_path: Path) -> Mapping[str, object]:
    backend = registry.get("backends", "openai").create(
        BackendRequest(model=None, run_dir=tmp_path, max_context_tokens=256, max_concurrency=1, endpoint=EndpointSettings(base_url=url))
    )
    backend.start()
    return backend.facts


def _models(*entries: dict) -> dict:
    return {"object": "list", "data": list(entries)}


def test_the_attached_server_names_its_engine_and_slots(registry, server, tmp_path):
    url, answers = server
    answers["/v1/models"] = _models({"id": "gemma", "owned_by": "llamacpp"})
    answers["/props"] = {"total_slots": 25, "build_info": "b0-unknown"}
    assert _facts(registry, url, tmp_path) | {} == {"backend": "openai", "base_url": url, "model": "gemma", "engine": "llama-cpp", "slots": 25}
    answers["/v1/models"] = _models({"id": "qwen", "owned_by": "vllm"})
    assert _facts(registry, url, tmp_path)["engine"] == "vllm"  # vLLM's slots are not asked (it has no /props)
    del answers["/props"]
    answers["/v1/models"] = _models({"id": "gemma", "owned_by": "llamacpp"})
    assert "slots" not in _facts(registry, url, tmp_path)  # an older llama.cpp without /props: the engine's default


@pytest.mark.parametrize(
    ("models", "props"),
    [
        (_models({"id": "m", "owned_by": "<script>alert(1)</script>"}), {}),  # not a name Arena knows
        (_models({"id": "m", "owned_by": {"llamacpp": True}}), {}),  # not text
        (_models({"id": "m", "owned_by": "vllm"}, {"id": "m", "owned_by": "llamacpp"}), {}),  # two engines for one model
        (_models({"id": "m"}), {}),  # says nothing
    ],
)
def test_an_engine_the_server_does_not_name_plainly_is_no_engine(registry, server, tmp_path, models, props):
    url, answers = server
    answers["/v1/models"], answers["/props"] = models, props
    facts = _facts(registry, url, tmp_path)
    assert "engine" not in facts and "slots" not in facts


@pytest.mark.parametrize("slots", [10**12, 0, -3, "25", True, 2.5, None])
def test_a_slot_count_out_of_range_is_not_believed(registry, server, tmp_path, slots):
    url, answers = server
    answers["/v1/models"] = _models({"id": "gemma", "owned_by": "llamacpp"})
    answers["/props"] = {"total_slots": slots}
    facts = _facts(registry, url, tmp_path)
    assert facts["engine"] == "llama-cpp" and "slots" not in facts


def test_the_serving_backend_of_an_attached_run(registry):
    llama = registry.get("backends", "llama-cpp").scheduling
    served = registry.serving_backend("openai", {"engine": "llama-cpp", "slots": 25})
    assert served.name == "openai" and served.scheduling == llama  # the engine's scheduling; its slots are the run's server settings
    for facts in ({}, {"engine": "no-such-engine"}, {"engine": "openai"}, {"engine": ["vllm"]}):
        assert registry.serving_backend("openai", facts).scheduling is None  # nothing named that declares how it schedules
    assert registry.serving_backend("vllm", {"engine": "llama-cpp"}).scheduling.engine == "vllm"  # a backend that declares its own keeps it
    assert registry.serving_backend("no-such-backend", {}) is None


@pytest.mark.slow
def test_a_run_attached_to_a_vllm_server_is_predicted_as_vllm(registry, seed_store):
    """A seed run, as if Arena had attached to its server: with the engine it named, its card
    has predictions fitted to the other runs of that engine; without, it says why it has none."""
    cards, _ = load_cards(seed_store, registry)
    card = next(card for card in cards if card.model == "qwen3.6-35b-a3b")
    others = [other for other in cards if other.run_id != card.run_id]
    attached = attrs.evolve(card, backend="openai", backend_facts={"backend": "openai", "base_url": "http://gpu-box:8000", "engine": "vllm"})
    assert why_not_predicted(attached, registry) == ""
    lines = ledger_of(seed_store, [*others, attached], registry, only=card.run_id)
    assert lines and all(line.tier == 1 and line.predicted_tps for line in lines) and len(lines) == len(card.workloads)
    unnamed = attrs.evolve(attached, backend_facts={"backend": "openai", "base_url": "http://gpu-box:8000"})
    assert "declares no scheduling" in why_not_predicted(unnamed, registry)
    assert ledger_of(seed_store, [*others, unnamed], registry, only=card.run_id) == []

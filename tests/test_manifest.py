"""The run record: a typed Manifest, written in one function, and runs stored before it existed
still read, rendered, ranked and resumed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import attrs
import pytest

from arena_core import UsageError
from arena_core.results.cards import card_from_run, load_cards
from arena_core.run.manifest import MANIFEST, Manifest, ModelMemory, manifest_data, read_manifest, write_manifest
from arena_core.run.session import RunRequest

STORED = Path(__file__).resolve().parent / "fixtures" / "stored-runs"
MEASURED = "20261130-213147-9249"
IMPORTED = "20261130-213157-ae0e"


@pytest.fixture
def store(tmp_path):
    shutil.copytree(STORED, tmp_path / "store", ignore=shutil.ignore_patterns("README.md"))
    return tmp_path / "store"


def test_a_run_stored_before_the_manifest_class_reads_as_one(store):
    measured = read_manifest(store / MEASURED)
    assert (measured.status, measured.backend, measured.scale, measured.workloads) == ("completed", "openai", 0.02, ("chat", "monday-peak"))
    assert measured.base_url == "http://127.0.0.1:40439"  # it lived among the backend's facts then
    assert measured.commands["chat"].startswith("llama-benchy --base-url") and measured.hardware_profile.name == "cpu-host"
    assert measured.source == "measured by Arena" and measured.files and measured.telemetry.probes == ("meminfo",)
    imported = read_manifest(store / IMPORTED)
    assert imported.instrument == "imported" and imported.source == "published LLM Arena reference card" and imported.imported_at
    assert imported.measured_with.startswith("vLLM") and imported.model == "qwen3.6-35b-a3b"
    assert isinstance(imported.model_memory, ModelMemory) and imported.hardware_profile.name == "gb10"


def test_old_runs_render_rank_and_resume(store, registry):
    card = card_from_run(store / MEASURED, registry)
    assert [w.name for w in card.workloads] == ["chat", "monday-peak"] and card.workloads[0].labels == ("scaled x0.02",)
    assert card.workload("chat").command.startswith("llama-benchy")
    cards, problems = load_cards(store, registry)
    assert problems == [] and {c.run_id for c in cards} == {MEASURED, IMPORTED}
    request = RunRequest.resuming(read_manifest(store / MEASURED), output=store)
    assert (request.base_url, request.backend, request.model, request.scale) == ("http://127.0.0.1:40439", "openai", None, 0.02)
    assert request.tokenizer == Path("tests/fixtures/vllm/tokenizer/tokenizer.json") and request.workloads == ("chat", "monday-peak")


def test_writing_and_reading_back_gives_the_same_record(store, tmp_path):
    manifest = attrs.evolve(read_manifest(store / MEASURED), status="interrupted", model_memory=ModelMemory(gb=0.3, source="probe"))
    write_manifest(tmp_path, manifest)
    back = read_manifest(tmp_path)
    assert attrs.evolve(back, seal=None) == manifest and len(back.seal) == 64  # sealed, with its files
    written = json.loads((tmp_path / MANIFEST).read_text())
    assert (
        {k: v for k, v in written.items() if k != "seal"} == {k: v for k, v in manifest_data(manifest).items() if k != "seal"}
        and written["status"] == "interrupted"
        and written["model_memory"] == {"gb": 0.3, "source": "probe"}
    )


@pytest.mark.parametrize(
    ("change", "needle"),
    [({"status": "exploded"}, "not an Arena manifest"), ({"scale": "big"}, "not an Arena manifest"), ({"colour": "red"}, "not an Arena manifest")],
)
def test_a_manifest_that_is_not_one_is_a_one_line_error_naming_the_file(store, change, needle):
    path = store / MEASURED / MANIFEST
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    with pytest.raises(UsageError, match=needle) as raised:
        read_manifest(store / MEASURED)
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)


def test_the_manifest_has_no_field_for_a_secret():
    assert not [field.name for field in attrs.fields(Manifest) if "key" in field.name or "secret" in field.name]

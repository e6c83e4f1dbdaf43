"""Integrity (a SHA-256 of every results file in the manifest, ``arena verify``) and secrets (an
API key never appears in anything Arena writes or prints)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from arena_core.testing import arena as run_arena
from arena_core.testing import rig_run_argv
from arena_core.testing.fake_server import FakeServerProcess

TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"
KEY = "sk-arena-SECRET-7f3a9c2e41"


def arena(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """``arena ARGS``: in this process, or as a child for a command that measures (arena_core.testing.arena)."""
    return run_arena(*args, cwd=cwd, env=env)


@pytest.mark.slow
def test_verify_names_changed_missing_and_added_files(tmp_path):
    assert arena("import", "--seeds", "--output", "store", cwd=tmp_path).returncode == 0
    manifests = [json.loads(p.read_text()) for p in sorted((tmp_path / "store").glob("*/manifest.json"))]
    manifest = next(m for m in manifests if m["model"] == "qwen3.6-35b-a3b")
    for other in [m for m in manifests if m is not manifest][3:]:
        shutil.rmtree(tmp_path / "store" / other["run_id"])  # four runs show it as well as 17, and publish fits once per run
    run_a = manifest["run_id"]
    assert manifest["files"] and all(len(digest) == 64 for digest in manifest["files"].values())
    ok = arena("verify", run_a, "--output", "store", cwd=tmp_path)
    assert ok.returncode == 0 and f"run {run_a}: verified, {len(manifest['files'])} files match" in ok.stdout
    chat = tmp_path / "store" / run_a / "workloads" / "chat" / "result.json"
    chat.write_text(chat.read_text().replace("14.9", "41.9"))  # a "better" number, edited by hand
    (tmp_path / "store" / run_a / "workloads" / "rag-8k" / "result.json").unlink()
    (tmp_path / "store" / run_a / "notes.txt").write_text("added later")
    bad = arena("verify", run_a, "--output", "store", cwd=tmp_path)
    assert bad.returncode == 1
    assert "workloads/chat/result.json: changed (SHA-256 differs)" in bad.stderr
    assert "workloads/rag-8k/result.json: missing" in bad.stderr and "notes.txt: not part of the run" in bad.stderr
    assert bad.stderr.strip().splitlines()[-1] == f"arena: error: run {run_a}: 3 of {len(manifest['files'])} files do not match the manifest"
    unknown = arena("verify", "no-such-run", "--output", "store", cwd=tmp_path)
    assert unknown.returncode == 2 and "arena verify: no run 'no-such-run'" in unknown.stderr
    outside = arena("verify", f"../store/{run_a}", "--output", "elsewhere", cwd=tmp_path)
    assert outside.returncode == 2 and "is not a run id" in outside.stderr  # an id never reaches outside --output
    # the site shows it
    assert arena("publish", "site", "--output", "store", cwd=tmp_path).returncode == 0
    index = (tmp_path / "site" / "index.html").read_text()
    # the other three seed cards (a ranked row's integrity is under "all columns")
    assert index.count("files changed since the run") == 1 and index.count(">verified</td>") == 3


@pytest.mark.slow
def test_an_edit_of_the_manifest_itself_is_caught(tmp_path):
    """The manifest holds the file hashes and figures of its own (model memory, commands): an edit
    of it -- here the model memory, then a file hash made to match an edited file -- fails verify."""
    assert arena("import", "--seeds", "--output", "store", cwd=tmp_path).returncode == 0
    run_dir = next(p.parent for p in sorted((tmp_path / "store").glob("*/manifest.json")) if json.loads(p.read_text())["model"] == "qwen3.6-35b-a3b")
    path = run_dir / "manifest.json"
    original = path.read_text()
    manifest = json.loads(original)
    assert len(manifest["seal"]) == 64 and arena("verify", run_dir.name, "--output", "store", cwd=tmp_path).returncode == 0
    path.write_text(json.dumps({**manifest, "model_memory": {"gb": 1.0, "source": "edited"}}, indent=2))
    edited = arena("verify", run_dir.name, "--output", "store", cwd=tmp_path)
    assert edited.returncode == 1 and "manifest.json: changed (its content no longer matches its seal)" in edited.stderr
    chat = run_dir / "workloads" / "chat" / "result.json"
    chat.write_text(chat.read_text().replace("14.9", "41.9"))  # a "better" number
    assert "41.9" in chat.read_text()
    import hashlib

    rehashed = {**manifest, "files": {**manifest["files"], "workloads/chat/result.json": hashlib.sha256(chat.read_bytes()).hexdigest()}}
    path.write_text(json.dumps(rehashed, indent=2))
    covered = arena("verify", run_dir.name, "--output", "store", cwd=tmp_path)
    assert covered.returncode == 1 and "manifest.json: changed" in covered.stderr


def _every_text(*roots: Path) -> dict[Path, str]:
    found = {}
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file():
                found[path] = path.read_bytes().decode("utf-8", "replace")
    return found


@pytest.mark.slow
def test_an_api_key_appears_nowhere(tmp_path):
    """A run against a server that demands a key, by environment variable and by key file; then
    every file the run wrote (records, manifest, logs, telemetry, commands), the cards in every
    format, the site, and all terminal output are searched for the key."""
    key_file = tmp_path / "key.txt"
    key_file.write_text(KEY + "\n")
    env = {**os.environ, "ARENA_TEST_KEY": KEY}
    printed = []
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "2", "--api-key", KEY]) as rig:
        for how in (["--api-key-env", "ARENA_TEST_KEY"], ["--api-key-file", str(key_file)]):
            done = arena(*rig_run_argv(rig.url, "store", tokenizer=TOKENIZER, workloads="chat,monday-peak", scale="0.02", extra=how)[3:], cwd=tmp_path, env=env)
            assert done.returncode == 0, done.stderr[-2000:]  # the key was used: the server let every request in
            printed += [done.stdout, done.stderr]
        wrong_key = ["--api-key-env", "NOT_SET_ANYWHERE"]
        wrong = arena(*rig_run_argv(rig.url, "store", tokenizer=TOKENIZER, workloads="chat", scale="0.02", extra=wrong_key)[3:], cwd=tmp_path, env=env)
        assert wrong.returncode == 2 and "NOT_SET_ANYWHERE" in wrong.stderr
        printed += [wrong.stdout, wrong.stderr]
    runs = sorted(p.name for p in (tmp_path / "store").iterdir() if (p / "manifest.json").is_file())
    for run_id in runs:
        for fmt in ("text", "markdown", "json"):
            printed.append(arena("card", run_id, "--output", "store", "--format", fmt, cwd=tmp_path).stdout)
        shown = arena("show", "run", run_id, "--output", "store", "--json", cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        printed.append(shown.stdout)
    printed.append(arena("publish", "site", "--output", "store", cwd=tmp_path).stdout)
    written = _every_text(tmp_path / "store", tmp_path / "site")
    assert len(written) > 10 and any(p.name == "records.jsonl" for p in written) and any(p.suffix == ".html" for p in written)
    for path, text in written.items():
        assert KEY not in text, f"the API key leaked into {path}"
        assert "SECRET-7f3a" not in text
    for output in printed:
        assert KEY not in output

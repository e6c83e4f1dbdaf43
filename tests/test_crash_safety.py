"""Crash safety: ``arena run`` killed with SIGKILL at random moments, then resumed; and a full
disk while writing. Nothing measured before the crash is lost or counted twice, and nothing
written is corrupt."""

from __future__ import annotations

import errno
import json
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from arena_core.loadgen.records_io import RecordWriter, read_records
from arena_core.testing import arena, rig_run_argv
from arena_core.testing.fake_server import FakeServerProcess

TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"


def run_command(url: str, output: Path, *extra: str) -> list[str]:
    return rig_run_argv(url, output, tokenizer=TOKENIZER, workloads="chat,monday-peak", scale="0.03", extra=extra)


def record_keys(run_dir: Path) -> list[tuple]:
    """Every complete record on disk, by identity (its send time is unique within a process)."""
    keys = []
    for path in run_dir.glob("workloads/*/records.jsonl"):
        keys += [(r.workload, r.warmup, r.run_index, r.request_index, r.sent_ns) for r in read_records(path)]
    return keys


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.slow
def test_sigkill_at_a_random_moment_then_resume(seed, tmp_path):
    moment = random.Random(seed).uniform(0.0, 5.0)
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "10"]) as rig:
        process = subprocess.Popen(run_command(rig.url, tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # The random moment is a moment of the run: counted from when the run exists on disk,
        # not from the interpreter's start, which takes seconds on a busy machine.
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob("*/manifest.json")) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.02)
        time.sleep(moment)
        process.send_signal(signal.SIGKILL)
        process.wait(30)
        (run_dir,) = [p for p in tmp_path.iterdir() if (p / "manifest.json").is_file()]
        before = record_keys(run_dir)
        finished = {p.parent.name for p in run_dir.glob("workloads/*/result.json")}
        kept_results = {name: (run_dir / "workloads" / name / "result.json").read_bytes() for name in finished}
        resumed = subprocess.run(run_command(rig.url, tmp_path, "--resume", run_dir.name), capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, f"killed after {moment:.1f} s: {resumed.stderr[-2000:]}"
    after = record_keys(run_dir)
    # every record completed before the kill is present exactly once (in the workload's folder,
    # or in the folder the unfinished workload was set aside in), none twice
    assert len(after) == len(set(after))
    assert all(after.count(key) == 1 for key in before)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "completed"
    for name in ("chat", "monday-peak"):
        result = json.loads((run_dir / "workloads" / name / "result.json").read_text())
        measured = [r for r in read_records(run_dir / "workloads" / name / "records.jsonl") if not r.warmup]
        assert result["requests"] == len(measured) and result["failed"] == sum(1 for r in measured if not r.ok)  # from the records
    for name, content in kept_results.items():  # workloads finished before the kill were kept as they were
        assert (run_dir / "workloads" / name / "result.json").read_bytes() == content
    # nothing corrupt: every JSON file parses, and the run verifies
    for path in run_dir.rglob("*.json"):
        json.loads(path.read_text())
    verified = arena("verify", run_dir.name, "--output", str(tmp_path))
    assert verified.returncode == 0, verified.stderr


@pytest.mark.slow
def test_a_full_disk_gives_one_line_and_keeps_earlier_files(tmp_path, monkeypatch):
    """ENOSPC while the second workload writes its records: one line naming the file, earlier
    files intact, no temporary files left behind."""
    from arena_core import make_plugin_manager
    from arena_core.testing import run_cli

    real = RecordWriter.write_lines

    def full_disk(self, lines):
        if "monday-peak" in str(self.path):
            raise OSError(errno.ENOSPC, "No space left on device", str(self.path))
        real(self, lines)

    monkeypatch.setattr(RecordWriter, "write_lines", full_disk)
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "2"]) as rig:
        result = run_cli(make_plugin_manager(autoload=False), run_command(rig.url, tmp_path)[3:])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("arena: error: ") and "No space left on device" in lines[-1] and "records.jsonl" in lines[-1]
    assert "Traceback" not in result.stderr
    (run_dir,) = [p for p in tmp_path.iterdir() if (p / "manifest.json").is_file()]
    assert json.loads((run_dir / "workloads" / "chat" / "result.json").read_text())["workload"] == "chat"  # intact
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "failed"
    assert not list(run_dir.rglob("*.tmp"))


def test_an_atomic_write_that_fails_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    from arena_core import files as store

    target = tmp_path / "result.json"
    store.write_json_atomic(target, {"tokens_per_second": 14.9})

    def no_space(descriptor):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store.os, "fsync", no_space)
    with pytest.raises(OSError, match="No space left"):
        store.write_json_atomic(target, {"tokens_per_second": 99.0})
    assert json.loads(target.read_text()) == {"tokens_per_second": 14.9}  # the old file, whole
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]  # no temporary left behind


@pytest.mark.slow
def test_a_locked_index_neither_loses_a_run_nor_blames_the_index(tmp_path, monkeypatch):
    """Another process holds index.sqlite in a long transaction: a run still completes (the run
    folder is the truth), `arena runs` says the index is busy (not "delete it"), and once the lock
    is gone the run is listed."""
    import sqlite3

    from arena_core import make_plugin_manager
    from arena_core.run import store
    from arena_core.testing import run_cli

    monkeypatch.setattr(store, "LOCK_WAIT_S", 0.2)
    store_dir = tmp_path / "store"
    store_dir.mkdir()
    holder = sqlite3.connect(store_dir / store.INDEX, isolation_level=None)
    holder.execute(f"CREATE TABLE runs ({', '.join(store._COLUMNS)}, PRIMARY KEY (run_id))")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "1"]) as rig:
            run = run_cli(make_plugin_manager(autoload=False), rig_run_argv(rig.url, store_dir, tokenizer=TOKENIZER, workloads="chat", scale="0.02")[3:])
        assert run.exit_code == 0, run.stderr
        busy = run_cli(make_plugin_manager(autoload=False), ["runs", "--output", str(store_dir)])
        assert busy.exit_code == 2 and "locked by another Arena process" in busy.stderr and "delete" not in busy.stderr
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    listed = run_cli(make_plugin_manager(autoload=False), ["runs", "--output", str(store_dir), "--json"])
    assert listed.exit_code == 0 and len(json.loads(listed.stdout)) == 1


@pytest.mark.slow
def test_open_loop_records_reach_the_disk_while_the_run_goes_on(tmp_path):
    """A SIGKILL loses at most the last quarter second of answers: well before the workload
    ends (15 requests over about ten seconds), the first answers are already on disk."""
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "1"]) as rig:
        process = subprocess.Popen(
            rig_run_argv(rig.url, tmp_path, tokenizer=TOKENIZER, workloads="monday-peak", scale="0.05"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 60
            records: list[Path] = []
            while time.monotonic() < deadline and process.poll() is None:
                records = list(tmp_path.glob("*/workloads/monday-peak/records.jsonl"))
                if records and records[0].read_text().count("\n") >= 2:
                    break
                time.sleep(0.1)
            still_running = process.poll() is None
        finally:
            process.kill()
            process.wait(30)
    assert still_running and records and len(read_records(records[0])) >= 2


@pytest.mark.slow
def test_two_resumes_of_one_run_cannot_both_write_it(tmp_path):
    """While one `arena run --resume RUN` measures, a second one is refused, naming the first."""
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "20"]) as rig:
        first = subprocess.Popen(run_command(rig.url, tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("*/workloads/chat")) and time.monotonic() < deadline:
            time.sleep(0.05)
        first.kill()
        first.wait(30)
        (run_dir,) = [p for p in tmp_path.iterdir() if (p / "manifest.json").is_file()]
        resumer = subprocess.Popen(run_command(rig.url, tmp_path, "--resume", run_dir.name), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            lock = run_dir / ".writer"
            while not lock.is_file() or lock.read_text().strip() != str(resumer.pid):  # the resumer holds it
                assert time.monotonic() < deadline and resumer.poll() is None
                time.sleep(0.05)
            second = subprocess.run(run_command(rig.url, tmp_path, "--resume", run_dir.name), capture_output=True, text=True, timeout=120)
        finally:
            resumer.kill()
            resumer.wait(30)
    assert second.returncode == 2, second.stderr
    assert f"run {run_dir.name} is being written by another Arena process (pid {resumer.pid})" in second.stderr.strip().splitlines()[-1]

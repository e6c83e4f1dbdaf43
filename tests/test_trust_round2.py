"""Trust, round 2 (issue 29): outside bytes on the surfaces added since the first trust pass,
played as an attacker would, through the console script. One mechanism per class; each test
fails without its mechanism."""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from arena_core import OpenLoopShape, arrival_offsets
from arena_core.testing import arena as run_arena
from arena_core.testing import arena_argv, rig_run_argv
from arena_core.testing.fake_server import FakeServerProcess


def arena(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``arena ARGS``: in this process, or as a child for a command that measures (arena_core.testing.arena)."""
    return run_arena(*args, timeout=timeout)


HOSTILE_MODEL = "evil; touch pwned $(id) `id` 'quoted'"


@pytest.mark.slow
def test_commands_shown_for_a_shell_are_quoted_whatever_the_server_named_its_model(rig_run):
    """Class 7: a model id with a ';', a '$(...)' and quotes is one argument of every reference
    command on the card (shlex.join), never a second command."""
    run_dir = rig_run("--model", HOSTILE_MODEL)
    card = json.loads(arena("card", run_dir.name, "--output", str(run_dir.parent), "--format", "json").stdout)
    commands = [line["command"] for line in card["card"]["workloads"] if line["command"]]
    assert commands
    for command in commands:
        words = shlex.split(command)
        assert words[words.index("--model") + 1] == HOSTILE_MODEL, command
    text = arena("card", run_dir.name, "--output", str(run_dir.parent)).stdout
    assert shlex.quote(HOSTILE_MODEL) in text


TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"


def run_against(tmp_path: Path, *rig_args: str, workloads: str = "chat") -> subprocess.CompletedProcess:
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), *rig_args]) as rig:
        argv = rig_run_argv(rig.url, tmp_path / "store", tokenizer=TOKENIZER, workloads=workloads, scale="0.02")
        return subprocess.run(argv, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("deep-models", "/v1/models: nested deeper than 64 levels"),
        ("flood-models", "/v1/models: the answer is larger than"),
        ("trickle-models", "/v1/models: the answer took longer than 15 s"),
    ],
)
@pytest.mark.slow
def test_a_hostile_model_list_is_one_line_with_a_deadline_and_a_cap(tmp_path, fault, said):
    """Classes 1 and 2: the attach path's first read, the model list, nested 100,000 deep,
    flooded with 600 MiB, or trickled a byte a second: one line naming the read and what was
    wrong, exit 2, no traceback, within the set-up deadline (15 s) and its size cap."""
    started = time.monotonic()
    done = run_against(tmp_path, "--fault", fault)
    assert done.returncode == 2, done.stderr[-2000:]
    assert said in done.stderr and "Traceback" not in done.stderr
    assert time.monotonic() - started < 120  # the trickle would take ten minutes


@pytest.mark.slow
def test_stream_events_of_every_wrong_shape_are_counted_never_a_crash(tmp_path):
    """Class 1 on the measured path: a choice that is a number, a delta that is a list, content
    that is a number, reasoning that is an object, an event nested 100,000 deep, before each
    stream's content: each is a counted malformed event of its request; the run completes."""
    done = run_against(tmp_path, "--fault", "hostile-events", "--fail-every", "1")
    assert "Traceback" not in done.stderr and done.returncode in (0, 4), done.stderr[-2000:]
    (run_dir,) = [p for p in (tmp_path / "store").iterdir() if (p / "manifest.json").is_file()]
    records = [json.loads(line) for line in (run_dir / "workloads" / "chat" / "records.jsonl").read_text().splitlines()]
    measured = [r for r in records if not r["warmup"]]
    assert measured and all(r["malformed_events"] == 5 for r in measured)
    assert all(r["content"] and r["http_status"] == 200 for r in measured)  # the real content after them was read


@pytest.mark.slow
def test_arenas_own_files_are_read_as_outside_files(tmp_path):
    """Class 9: a calibration that is a FIFO (which would block a plain read for ever) or JSON
    nested 100,000 deep is no calibration (tier 0); a ledger-fits file that is a FIFO is no cache;
    a manifest nested 100,000 deep is one line naming it. Nothing hangs, nothing crashes."""
    store = tmp_path / "store"
    assert arena("import", "--seeds", "--output", str(store)).returncode == 0
    calibrations = store / "calibrations"
    calibrations.mkdir()
    os.mkfifo(calibrations / "gb10--vllm.json")
    predicted = arena("predict", "qwen3.6-35b-a3b", "--hardware", "gb10", "--workloads", "chat", "--output", str(store), timeout=120)
    assert predicted.returncode == 0 and "tier 0" in predicted.stdout
    (calibrations / "gb10--vllm.json").unlink()
    (calibrations / "gb10--vllm.json").write_text("[" * 100_000 + "]" * 100_000)
    predicted = arena("predict", "qwen3.6-35b-a3b", "--hardware", "gb10", "--workloads", "chat", "--output", str(store), timeout=120)
    assert predicted.returncode == 0 and "tier 0" in predicted.stdout and "Traceback" not in predicted.stderr
    os.mkfifo(calibrations / "ledger-fits--step-simulator.json")
    run_ids = sorted(p.name for p in store.iterdir() if (p / "manifest.json").is_file())
    card = arena("card", run_ids[0], "--output", str(store), timeout=300)
    assert card.returncode == 0 and "Predicted vs measured" in card.stdout
    (store / run_ids[1] / "manifest.json").write_text("{" + '"a":{' * 100_000 + "}" * 100_001)
    broken = arena("card", run_ids[1], "--output", str(store), timeout=120)
    assert broken.returncode == 2 and "manifest.json: unreadable manifest (nested deeper than 64 levels)" in broken.stderr
    assert "Traceback" not in broken.stderr


@pytest.mark.slow
def test_a_server_lost_between_workloads_is_a_lost_server_with_the_resume_line(tmp_path):
    """Class 3: the server goes away after the first workload; the second workload's first
    request (its /tokenize probe) finds nobody. That is exit 5 with the finished workload kept and
    the resume line, never "has no /tokenize" (bad input, exit 2)."""
    tokenizer = str(TOKENIZER / "tokenizer.json")

    def run(rig: FakeServerProcess, output: str) -> subprocess.CompletedProcess:
        argv = arena_argv("run", "--base-url", rig.url, "--workloads", "chat,monday-peak", "--scale", "0.02", "--output", str(tmp_path / output))
        return subprocess.run(argv, capture_output=True, text=True, timeout=300)

    with FakeServerProcess(["--tokenizer", tokenizer]) as rig:
        healthy = run(rig, "healthy")
        probes = sum(1 for entry in rig.stop() if entry.get("probe"))  # the last: the second workload's, as it starts
    assert healthy.returncode == 0 and probes >= 2, healthy.stderr[-2000:]
    with FakeServerProcess(["--tokenizer", tokenizer, "--vanish-at-probe", str(probes)]) as rig:
        done = run(rig, "store")
    assert done.returncode == 5, done.stderr[-2000:]
    assert "monday-peak: the server stopped answering" in done.stderr and "1 finished workloads are kept" in done.stderr, done.stderr
    assert "arena run --resume" in done.stderr and "has no /tokenize" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_rate_no_run_could_finish_is_refused_with_the_time_it_would_take(tmp_path):
    """Class 8: within its bounds (above 0) a request rate can still be one whose schedule would
    outlast a human life; it is refused in one line with that time, from the command line, the
    config file and a capacity search's --start, before any server is asked anything."""
    done = arena("run", "--workloads", "office-baseline", "--set", "request_rate=1e-300", "--output", str(tmp_path / "store"))
    assert done.returncode == 2 and "200 prompts at 1e-300 req/s would take 6.34e+294 years to send" in done.stderr
    (tmp_path / "arena.toml").write_text("[workloads.office-baseline]\nrequest_rate = 1e-9\n")
    configured = subprocess.run(arena_argv("run", "--workloads", "office-baseline"), capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert configured.returncode == 2 and "arena.toml: $.workloads.office-baseline: 200 prompts at 1e-09 req/s would take 6,338 years" in configured.stderr
    searched = arena("capacity", "--load", "rate", "--start", "0.000001", "--base-url", "http://127.0.0.1:9", "--output", str(tmp_path / "store"))
    assert searched.returncode == 2 and "--start 1e-06" in searched.stderr and "would take 231 days to send" in searched.stderr
    assert all("Traceback" not in p.stderr for p in (done, configured, searched))


@pytest.mark.parametrize("rate", [1e-300, 1e-6, 0.5, 1e300, math.inf])
@pytest.mark.parametrize("burstiness", [1e-9, 1.0, 1000.0])
def test_no_bounded_rate_or_burstiness_overflows(rate, burstiness):
    """Class 8: every bounded rate and burstiness is a schedule or a one-line refusal (a
    ValueError naming the time), never an OverflowError or a schedule that never ends."""
    try:
        shape = OpenLoopShape(dataset="random", input_tokens=16, output_tokens=16, request_rate=rate, burstiness=burstiness, num_prompts=1000)
    except ValueError as exc:
        assert "would take" in str(exc)
        return
    offsets = arrival_offsets(shape.num_prompts, shape.request_rate, shape.burstiness, 42)
    assert len(offsets) == 1000 and all(math.isfinite(t) and 0 <= t for t in offsets)


@pytest.mark.slow
def test_an_imported_figure_meets_the_physical_ceiling_like_a_measured_one(tmp_path):
    """Class 4: a cards file may carry a closed-loop tokens/s and nothing else; a catalog model at
    10^5 times its decode ceiling, and a model outside the catalog described by its parameters,
    are held to the ceiling (the KV cache at the file's stated type) and stored invalid, not ranked."""
    import arena_core

    seeds = json.loads((Path(arena_core.__file__).parent / "data" / "seed-cards.json").read_text())
    card = next(c for c in seeds["cards"] if c["model"] == "qwen3.5-0.8b")
    chat = card["workloads"]["chat"]
    impossible = {**card, "workloads": {"chat": {**chat, "tokens_per_second": chat["tokens_per_second"] * 1e5}}}
    unlisted = {**impossible, "model": "my-own-model", "model_title": "My own model"}
    path = tmp_path / "cards.json"
    path.write_text(json.dumps({**seeds, "cards": [impossible, unlisted]}))
    store = tmp_path / "store"
    assert arena("import", str(path), "--output", str(store)).returncode == 0
    for run_dir in (p for p in store.iterdir() if (p / "manifest.json").is_file()):
        shown = json.loads(arena("card", run_dir.name, "--output", str(store), "--format", "json").stdout)["card"]
        (line,) = shown["workloads"]
        assert not line["valid"] and any("exceeds the physical ceiling" in reason for reason in line["reasons"]), shown["model"]
    board = json.loads(arena("leaderboard", "--output", str(store), "--json").stdout)
    assert all(not row["rank"] for row in board)


@pytest.mark.slow
def test_a_matrix_names_both_places_of_a_duplicate_cell_and_refuses_to_expand_past_its_cap(tmp_path):
    """Class 10: two places of a matrix file that give the same cell are refused at plan time,
    both named; a matrix that would expand past 10,000 cells is refused before it is expanded."""
    backend = '[[backends]]\nname = "llama-cpp"\nhardware = ["cpu-host"]\n'
    twice = tmp_path / "twice.toml"
    twice.write_text(f'models = ["gemma-3-270m", "qwen3.5-0.8b", "gemma-3-270m"]\nworkload_sets = [["chat"]]\n{backend}')
    done = arena("matrix", "plan", str(twice), "--output", str(tmp_path / "store"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "$.models[0] on $.backends[0].hardware[0] with $.workload_sets[0] and $.models[2] on" in done.stderr
    models = ", ".join(f'"{name}"' for name in ("gemma-3-270m", "qwen3.5-0.8b", "qwen3.6-27b", "qwen3.6-35b-a3b"))
    sets = "[" + ", ".join(f'["{name}"]' for name in ("chat", "rag-8k", "long-output", "long-context-25k", "multi-turn", "sharegpt")) + "]"
    hardware = ", ".join(f'"{name}"' for name in ("cpu-host", "gb10", "h100-sxm"))
    backends = "".join(f'[[backends]]\nname = "{name}"\nhardware = [{hardware}]\n' for name in ("llama-cpp", "vllm"))
    huge = tmp_path / "huge.toml"
    huge.write_text(f"models = [{models}]\nworkload_sets = {sets}\nrepeats = 100\n{backends}")  # 4 x 6 x 6 x 100 cells
    refused = arena("matrix", "plan", str(huge), "--output", str(tmp_path / "store"))
    assert refused.returncode == 2 and "14,400 cells; a matrix may have at most 10,000" in refused.stderr and "Traceback" not in refused.stderr


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"source": 7}, "$.cards[0].source: expected a text of 1 to 200 characters"),
        ({"model_title": "x" * 2**20}, "$.cards[0].model_title: expected a text of 1 to 200 characters"),
        ({"engine": ["vllm"]}, "$.cards[0].engine: expected a text of 1 to 200 characters"),
        ({"hardware": {"name": "gb10"}}, "$.cards[0].hardware: expected a name"),
        ({"workloads": {"chat": [1, 2]}}, "$.cards[0].workloads.chat: expected the workload's figures"),
    ],
)
@pytest.mark.slow
def test_free_text_of_an_imported_card_is_typed_and_bounded_before_anything_is_written(tmp_path, change, said):
    """Class 5: a field of the wrong type or a megabyte of text is refused in one line naming it,
    and nothing is stored (the leaderboard of the store still works)."""
    import arena_core

    seeds = json.loads((Path(arena_core.__file__).parent / "data" / "seed-cards.json").read_text())
    path = tmp_path / "cards.json"
    path.write_text(json.dumps({**seeds, "cards": [{**seeds["cards"][0], **change}, seeds["cards"][1]]}))
    store = tmp_path / "store"
    done = arena("import", str(path), "--output", str(store))
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not any((p / "manifest.json").is_file() for p in store.iterdir()) if store.is_dir() else True
    assert arena("leaderboard", "--output", str(store)).returncode == 0


@pytest.mark.slow
def test_free_text_of_a_matrix_file_is_bounded(tmp_path):
    matrix = tmp_path / "m.toml"
    matrix.write_text(f'models = ["gemma-3-270m"]\n[[backends]]\nname = "llama-cpp"\nhardware = ["cpu-host"]\nversion = "{"b" * 5000}"\n')
    done = arena("matrix", "plan", str(matrix), "--output", str(tmp_path / "store"))
    assert done.returncode == 2 and "version" in done.stderr and "Traceback" not in done.stderr, done.stderr


def _packed_folder(folder: Path, name: str) -> bytes:
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(folder, arcname=name)
    return buffer.getvalue()


def test_a_run_folder_from_another_box_is_checked_and_a_bad_one_fails_only_its_cell(tmp_path):
    """Class 6: what a box sends back may be no archive at all, or a real run folder under another
    run's name (its manifest says otherwise): each is one line and no run in the store; the cell
    fails with that reason, and the matrix goes on (settle returns, it does not raise)."""
    import shutil

    from arena_core import UsageError
    from arena_fleet.execute import CellReport, ingest, settle
    from arena_fleet.matrix import BackendEntry, Cell

    store = tmp_path / "store"
    fixture = Path(__file__).resolve().parent / "fixtures" / "stored-runs" / "20261130-213147-9249"
    copy = tmp_path / "copy"
    shutil.copytree(fixture, copy)
    for packed, said in (
        (b"\x1f\x8b not really gzip", "cannot be unpacked"),
        (_packed_folder(copy, "20261130-213157-ae0e"), "its manifest says it is run '20261130-213147-9249'"),
    ):
        with pytest.raises(UsageError, match=said):
            ingest(store, packed)
        assert not [p for p in store.iterdir() if not p.name.startswith(".")]
    cell = Cell(
        model="gemma-3-270m",
        precision="q4_k_m",
        backend=BackendEntry(name="llama-cpp", hardware=("cpu-host",)),
        hardware="cpu-host",
        workloads=("chat",),
        scale=0.02,
        repeat=0,
    )
    report = CellReport(exit_code=0, packed_run=b"garbage", error="", node="box-2", seconds=1.0, started_at=time.time())
    outcome = settle(store, cell, report, time.time())
    assert outcome.status == "failed" and "cannot be unpacked" in outcome.reason
    assert ingest(store, _packed_folder(copy, "20261130-213147-9249")) == ("20261130-213147-9249", True)  # the same folder, its own name: adopted


@pytest.mark.slow
def test_a_ray_address_that_refuses_is_one_line_without_rays_own_logs(tmp_path):
    """Class 10: a --ray address where nothing listens fails in one line as soon as the connection
    is refused (measured: 1.8 s in all), not after Ray's own minute of retries and C++ log lines."""
    import socket as sockets

    with sockets.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    matrix = tmp_path / "m.toml"
    matrix.write_text('models = ["gemma-3-270m"]\nworkload_sets = [["chat"]]\nscale = 0.02\n[[backends]]\nname = "llama-cpp"\nhardware = ["cpu-host"]\n')
    started = time.monotonic()
    done = arena("matrix", "run", str(matrix), "--output", str(tmp_path / "store"), "--ray", f"127.0.0.1:{port}")
    assert done.returncode == 2 and f"--ray 127.0.0.1:{port}: no Ray cluster answers there" in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr  # Ray never started: none of its log lines
    assert time.monotonic() - started < 50  # Ray's own retries would take the join's whole 60 s

"""Numbers that cannot be true, from files and flags: every one is refused with one line naming
where it stands (exit 2), an import stores all of a file or nothing, and one bad stored run never
breaks a command for the others. Each case runs the console script's entry point."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from arena_core.testing import arena as run_arena

MODEL = ["--workload", "monday-peak", "--model", "qwen3.6-35b-a3b", "--hardware", "gb10"]
VLLM_RESULT = {"completed": 290, "failed": 10, "output_throughput": 59.1, "total_token_throughput": 500.0, "median_ttft_ms": 1350.0, "request_rate": 1.5}


def arena(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``arena ARGS``: in this process, or as a child for a command that measures (arena_core.testing.arena)."""
    return run_arena(*args, cwd=cwd)


def error_line(done: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.strip().splitlines() if line.startswith(("arena: error:", "Error:"))]
    assert len(lines) == 1, done.stderr
    return lines[0]


def stored_runs(output: Path) -> list[Path]:
    return sorted(p for p in output.glob("*") if (p / "manifest.json").is_file()) if output.is_dir() else []


# the file's text (numbers JSON cannot carry are written as Python's json writes them)
IMPORT_CASES = {
    "NaN": ('{"completed": 290, "failed": 0, "output_throughput": NaN}', "NaN is not a number"),
    "Infinity": ('{"completed": 290, "failed": 0, "output_throughput": Infinity}', "Infinity is not a number"),
    "1e400": ('{"completed": 290, "failed": 0, "output_throughput": 1e400}', "1e400 is not a finite number"),
    "negative tokens/s": (json.dumps({**VLLM_RESULT, "output_throughput": -59.1}), "tokens_per_second: must be between 0 and"),
    "negative TTFT": (json.dumps({**VLLM_RESULT, "median_ttft_ms": -3.0}), "ttft_p50_s: must be between 0 and"),
    "tokens/s without requests": (json.dumps({**VLLM_RESULT, "completed": 0, "output_throughput": 1e12}), "from 0 completed requests cannot be true"),
    "tokens/s past any server": (json.dumps({**VLLM_RESULT, "output_throughput": 1e12}), "between 0 and 1,000,000,000"),
}


@pytest.mark.parametrize("case", list(IMPORT_CASES))
@pytest.mark.slow
def test_an_import_with_a_number_that_cannot_be_true_stores_nothing(case, tmp_path):
    text, needle = IMPORT_CASES[case]
    (tmp_path / "result.json").write_text(text)
    done = arena("import", "result.json", *MODEL, "--output", "store", cwd=tmp_path)
    assert done.returncode == 2 and needle in error_line(done) and "result.json" in error_line(done)
    assert stored_runs(tmp_path / "store") == []


@pytest.mark.slow
def test_a_figure_past_the_physical_ceiling_is_stored_invalid(tmp_path):
    """An imported figure meets the same roofline as a measured one: 20,000 tok/s per user of a
    35B model on a 273 GB/s machine is not a measurement."""
    (tmp_path / "result.json").write_text(json.dumps({**VLLM_RESULT, "failed": 0, "median_tpot_ms": 0.05}))
    assert arena("import", "result.json", *MODEL, "--output", "store", cwd=tmp_path).returncode == 0
    (run,) = stored_runs(tmp_path / "store")
    result = json.loads((run / "workloads" / "monday-peak" / "result.json").read_text())
    assert not result["verdict"]["valid"] and "exceeds the physical ceiling" in result["verdict"]["reasons"][-1]


@pytest.mark.slow
def test_a_cards_file_whose_second_card_is_bad_stores_none(tmp_path):
    from arena_core.results.imports import seed_cards_path

    cards = json.loads(seed_cards_path().read_text())
    cards["cards"][1]["workloads"]["chat"]["tokens_per_second"] = "fast"
    (tmp_path / "cards.json").write_text(json.dumps(cards))
    done = arena("import", "cards.json", "--output", "store", cwd=tmp_path)
    assert done.returncode == 2 and "$.cards[1].workloads.chat.tokens_per_second: expected a finite number" in error_line(done)
    assert stored_runs(tmp_path / "store") == []


@pytest.mark.parametrize("edit", ["negative", "nan", "not a result"])
@pytest.mark.slow
def test_one_bad_stored_run_never_breaks_the_commands_for_the_others(edit, tmp_path):
    """A stored result edited by hand (or written by a broken version) is named in one line where
    it is read; runs, leaderboard and publish go on with every other run."""
    assert arena("import", "--seeds", "--output", "store", cwd=tmp_path).returncode == 0
    for extra in stored_runs(tmp_path / "store")[4:]:
        shutil.rmtree(extra)  # four runs show it as well as 17, and the ledger fits once per run
    runs = stored_runs(tmp_path / "store")
    bad = runs[0] / "workloads" / "chat" / "result.json"
    data = json.loads(bad.read_text())
    text = {"negative": json.dumps({**data, "ttft_p50_s": -1.0}), "nan": json.dumps({**data, "tokens_per_second": float("nan")}), "not a result": "[1, 2]"}
    bad.write_text(text[edit])
    assert arena("runs", "--output", "store", cwd=tmp_path).returncode == 0
    board = arena("leaderboard", "--output", "store", "--json", cwd=tmp_path)
    assert board.returncode == 0, board.stderr
    assert runs[0].name not in board.stdout and len(json.loads(board.stdout)) >= len(runs) - 1 - 1
    published = arena("publish", "site", "--output", "store", cwd=tmp_path)
    assert published.returncode == 0, published.stderr
    assert f"{runs[0].name}/workloads/chat/result.json" in published.stderr + published.stdout  # the skipped run is named
    assert (tmp_path / "site" / "index.html").is_file()
    card = arena("card", runs[0].name, "--output", "store", cwd=tmp_path)
    assert card.returncode == 2 and "chat/result.json" in error_line(card)


NUMBER_CASES = {
    "concurrency 1e9": ("[workloads.chat]\nconcurrency = 1000000000", "$.workloads.chat.concurrency: must be greater than 0 and at most 10,000"),
    "runs 1e9": ("[workloads.chat]\nruns = 1000000000", "$.workloads.chat.runs: must be greater than 0 and at most 10,000"),
    "prompt of 2^63-1 tokens": ("[workloads.chat]\nprompt_tokens = 9223372036854775807", "$.workloads.chat.prompt_tokens: must be greater than 0"),
    "negative seed": ("[workloads.chat]\nseed = -1", "$.workloads.chat.seed: must be between 0 and 4,294,967,295"),
    "seed of 2^32": ("[workloads.monday-peak]\nseed = 4294967296", "$.workloads.monday-peak.seed"),
    "NaN burstiness": ("[workloads.monday-peak]\nburstiness = nan", "$.workloads.monday-peak.burstiness: must be greater than 0 and at most 1,000, got nan"),
    "scale 1e9": ("[run]\nscale = 1e9", "$.run.scale: must be greater than 0 and at most 100"),
    "scale inf": ("[run]\nscale = inf", "$.run.scale"),
}


@pytest.mark.parametrize("case", list(NUMBER_CASES))
@pytest.mark.slow
def test_config_numbers_have_both_ends(case, tmp_path):
    text, needle = NUMBER_CASES[case]
    (tmp_path / "arena.toml").write_text(text)
    done = arena("config", "check", "arena.toml", cwd=tmp_path)
    assert done.returncode == 2 and needle in error_line(done)


@pytest.mark.slow
def test_an_infinite_request_rate_is_vllms_all_at_once_and_allowed(tmp_path):
    (tmp_path / "arena.toml").write_text("[workloads.monday-peak]\nrequest_rate = inf")
    assert arena("config", "check", "arena.toml", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("value", ["nan", "inf", "1e9", "-0.5"])
@pytest.mark.slow
def test_scale_flag_has_both_ends(value, tmp_path):
    done = arena("run", "--scale", value, "--workloads", "chat", cwd=tmp_path)
    assert done.returncode == 2 and "'--scale': must be greater than 0 and at most 100" in error_line(done)


@pytest.mark.parametrize("value", ["nan", "1e12"])
@pytest.mark.slow
def test_request_timeout_flag_has_both_ends(value, tmp_path):
    done = arena("run", "--request-timeout", value, "--workloads", "chat", cwd=tmp_path)
    assert done.returncode == 2 and "'--request-timeout': must be greater than 0 and at most 604,800" in error_line(done)

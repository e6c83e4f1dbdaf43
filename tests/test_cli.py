"""The command line: listings, details, unknown names, exit codes, and no tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from compare import flat
from plugins_for_tests import fake_distribution

from arena_core import __version__, make_plugin_manager
from arena_core.testing import plugin_manager_with, run_cli


@pytest.fixture
def pm():
    return make_plugin_manager(autoload=False, strict=True)


def arena(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real console entry point in a child process, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "arena_core", *args], capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=cwd, timeout=60)


def test_version(pm):
    result = run_cli(pm, ["--version"])
    assert result.stdout.strip() == f"arena {__version__}"


def test_plugins_all_json_lists_builtins_with_hooks(pm):
    result = run_cli(pm, ["plugins", "--all", "--json"])
    plugins = {entry["name"]: entry for entry in json.loads(result.stdout)}
    assert plugins["arena_workloads"]["hooks"] == ["arena_register_workloads"]
    assert plugins["arena_hardware"]["hooks"] == ["arena_detect_hardware", "arena_register_commands", "arena_register_hardware"]
    assert plugins["arena_core.cli.essential_commands"]["hooks"] == ["arena_register_commands"]
    assert all(entry["builtin"] and entry["source"] == "builtin" for entry in plugins.values())


def test_plugins_without_all_hides_builtins(pm):
    assert json.loads(run_cli(pm, ["plugins", "--json"]).stdout) == []
    assert "No third-party plugins installed" in run_cli(pm, ["plugins"]).stdout


@pytest.mark.parametrize("kind", ["workloads", "workload", "hardware", "models", "model"])
def test_list_shows_name_description_and_plugin(pm, kind):
    result = run_cli(pm, ["list", kind, "--json"])
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert rows and all(set(row) == {"name", "description", "plugin"} for row in rows)
    assert all(row["plugin"].startswith("arena_") for row in rows)


def test_list_without_a_kind_lists_every_kind_the_hookspecs_define(pm):
    """A kind added to the hookspecs (any ``arena_register_*`` hook) without ``arena list``
    knowing it fails here: quality suites and commands were missing from its help and listing."""
    import arena_core.hookspecs as hookspecs

    defined = {name for name in vars(hookspecs) if name.startswith("arena_register_")}
    listed = json.loads(run_cli(pm, ["list", "--json"]).stdout)
    assert {kind["hook"] for kind in listed} == defined
    by_kind = {kind["kind"]: kind["items"] for kind in listed}
    assert {row["name"] for row in by_kind["quality-suites"]} == {"humaneval", "instruction-canary", "tool-calls"}
    assert {"run": "arena_core.cli.essential_commands"}.items() <= {row["name"]: row["plugin"] for row in by_kind["commands"]}.items()
    helped = run_cli(pm, ["list", "--help"]).stdout
    assert all(kind["kind"] in helped for kind in listed)
    table = run_cli(pm, ["list"]).stdout
    assert all(f"{kind['kind']} ({len(kind['items'])}; plugins add them with {kind['hook']})" in table for kind in listed)


def test_list_table_and_empty_kind(pm):
    table = run_cli(pm, ["list", "workloads"]).stdout
    assert table.splitlines()[0].split() == ["name", "description", "plugin"]
    assert "monday-peak" in table
    assert "arena-score/1" in run_cli(pm, ["list", "scorers"]).stdout
    empty = plugin_manager_with(builtins=("arena_core.cli.essential_commands", "arena_workloads"))
    assert run_cli(empty, ["list", "scorers"]).stdout.strip() == "No scorers registered."


def test_show_workload_prints_every_parameter(pm):
    result = run_cli(pm, ["show", "workload", "monday-peak", "--json"])
    data = json.loads(result.stdout)
    assert data["plugin"] == "arena_workloads"
    assert data["open_loop"]["max_concurrency"] == 25
    table = run_cli(pm, ["show", "workload", "chat"]).stdout
    assert "closed_loop.prompt_tokens" in table and "1024" in table


def test_show_model_marks_missing_quality_scores(pm):
    data = json.loads(run_cli(pm, ["show", "model", "qwen3.5-0.8b", "--json"]).stdout)
    assert [score["value"] for score in data["quality"]] == [29.7, 11.9, None]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["show", "workload", "chatt"], "unknown workload 'chatt' (known: chat, rag-8k"),
        (["show", "hardware", "tpu"], "unknown hardware 'tpu' (known: cpu-host, gb10, h100-sxm"),
        (
            ["list", "gpus"],
            "unknown kind 'gpus' (known: workloads, runners, backends, hardware, models, scorers, predictors, quality-suites, renderers, commands)",
        ),
        (["--config", "absent.toml", "list", "models"], "absent.toml"),
        (["plugins", "--colour"], "No such option '--colour'"),
    ],
)
def test_unknown_names_fail_at_parse_time_with_exit_2(pm, args, needle):
    result = run_cli(pm, args)
    assert result.exit_code == 2
    assert needle in result.stderr
    assert "Traceback" not in result.stderr


def test_config_check_ok_and_failing(pm, tmp_path: Path):
    good = tmp_path / "good.toml"
    good.write_text("[workloads.chat]\nconcurrency = 5\n")
    result = run_cli(pm, ["config", "check", str(good)])
    assert result.exit_code == 0 and result.stdout.strip() == f"{good}: ok (workload overrides: chat)"
    bad = tmp_path / "bad.toml"
    bad.write_text("[workloads.chat]\nconcurency = 5\n")
    result = run_cli(pm, ["config", "check", str(bad)])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"arena: error: {bad}: $.workloads.chat.concurency: unknown key"


@pytest.mark.slow
def test_console_script_bad_input_is_one_line_exit_2_no_traceback(tmp_path: Path):
    bad = tmp_path / "arena.toml"
    bad.write_text("[workloads.chat]\nconcurrency = -1\n")
    result = arena("config", "check", str(bad))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"arena: error: {bad}: $.workloads.chat.concurrency: must be greater than 0 and at most 10,000, got -1"]
    debug = arena("--debug", "config", "check", str(bad))
    assert debug.returncode == 2 and "Traceback" in debug.stderr


@pytest.mark.slow
def test_a_reader_that_goes_away_ends_the_command_quietly_as_sigpipe_would():
    """``arena ... | head``: when the pipe's reader has closed it, arena stops without a word (as
    ``yes | head``'s writer does: exit 141), where before it printed "Broken pipe" as an error. A
    broken pipe that is not standard output's (a server that hung up) is still an error."""
    done = subprocess.Popen([sys.executable, "-m", "arena_core", "list", "models"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    done.stdout.close()  # before arena has written a byte: its first write meets a closed pipe
    stderr = done.stderr.read().decode()
    assert (done.wait(timeout=60), stderr) == (141, "")

    hang_up = """
from arena_core import make_plugin_manager
from arena_core.cli import make_cli

cli = make_cli(make_plugin_manager())

@cli.command("hang-up")
def hang_up() -> None:  # a server's socket closed under a write, standard output still read
    raise BrokenPipeError(32, "Broken pipe")

cli.main(["hang-up"], prog_name="arena")
"""
    result = subprocess.run([sys.executable, "-c", hang_up], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stderr.strip()) == (1, "arena: error: Broken pipe; files written before are kept")


@pytest.mark.slow
def test_arenas_own_options_work_after_the_subcommand_too(tmp_path: Path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[workloads.chat]\nconcurrency = 0\n")
    for args in (("--config", str(bad), "run", "--workloads", "chat"), ("run", "--workloads", "chat", "--config", str(bad)), ("run", f"--config={bad}")):
        done = arena(*args)
        assert done.returncode == 2 and f"{bad}: $.workloads.chat.concurrency" in done.stderr, args
    debug = arena("config", "check", str(bad), "--debug")
    assert debug.returncode == 2 and "Traceback" in debug.stderr


def test_show_runner_says_what_its_code_does_not_what_it_is_called(pm):
    result = run_cli(pm, ["show", "runner", "llama-benchy"])
    assert result.exit_code == 0 and "arena_runners.llama_benchy:" not in result.stdout and "<lambda>" not in result.stdout
    assert "needs a local tokenizer" in flat(result.stdout)  # the preflight's own description (wrapped to the terminal)


def _broken_entry_point(root: Path) -> dict[str, str]:
    source = "from arena_core import hookimpl\n\n@hookimpl\ndef arena_register_hardware(register):\n    raise RuntimeError('probe table missing')\n"
    fake_distribution(root, "raising-plugin", "0.1", {"raising": "raising_plugin"}, {"raising_plugin": source})
    return {"PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}


@pytest.mark.slow
def test_console_script_warns_about_a_raising_plugin_and_carries_on(tmp_path: Path):
    result = arena("list", "hardware", env=_broken_entry_point(tmp_path))
    assert result.returncode == 0
    assert "cpu-host" in result.stdout
    assert "arena: warning: plugin 'raising': arena_register_hardware raised RuntimeError: probe table missing; skipped" in result.stderr


@pytest.mark.slow
def test_console_script_strict_plugins_stops_with_exit_3(tmp_path: Path):
    env = _broken_entry_point(tmp_path)
    for args, extra_env in ((["--strict-plugins", "list", "hardware"], {}), (["list", "hardware"], {"ARENA_STRICT_PLUGINS": "1"})):
        result = arena(*args, env={**env, **extra_env})
        assert result.returncode == 3, result.stderr
        assert "plugin 'raising'" in result.stderr and "strict plugin mode" in result.stderr
        assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_console_script_disabled_plugin_is_not_called(tmp_path: Path):
    env = {**_broken_entry_point(tmp_path), "ARENA_DISABLED_PLUGINS": "raising"}
    result = arena("list", "hardware", env=env)
    assert result.returncode == 0 and result.stderr == ""


@pytest.mark.parametrize(
    ("workload", "needles"),
    [
        (
            "chat",
            [
                "llama-benchy --base-url http://localhost:8000/v1 --model MODEL --pp 1024 --tg 1024 --depth 0 --concurrency 10 --runs 3 --latency-mode generation"
            ],
        ),
        ("multi-turn", ["--depth 0 2560 5120 7680 10240", "--enable-prefix-caching"]),
        (
            "office-baseline",
            [
                "vllm bench serve --backend openai-chat",
                "--random-input-len 4000 --random-output-len 500 --random-range-ratio 0.9",
                "--request-rate 0.3 --burstiness 0.7",
                "--seed 42",
            ],
        ),
        ("monday-peak", ["--request-rate 1.5 --burstiness 1 --max-concurrency 25"]),
        ("reasoning", ["--random-input-len 1024 --random-output-len 4096"]),
    ],
)
def test_show_workload_prints_the_exact_external_command(pm, workload, needles):
    command = json.loads(run_cli(pm, ["show", "workload", workload, "--json"]).stdout)["command"]
    for needle in needles:
        assert needle in command
    assert "," not in command.replace("--metric-percentiles 50,90,95,99", "").replace("ttft,tpot,itl,e2el", "")  # C locale

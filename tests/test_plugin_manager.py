"""The plugin manager: loading order, switches, and every kind of misbehaving plugin."""

from __future__ import annotations

import textwrap
from pathlib import Path

import click
import pytest
from plugins_for_tests import (
    DetectorRaises,
    DetectsTestBox,
    DuplicateModel,
    GoodModels,
    MisspelledHook,
    RaisesInHook,
    UnknownArgument,
    WrongType,
    fake_distribution,
)

from arena_core import BUILTIN_PLUGINS, ArenaHooks, PluginError, make_plugin_manager
from arena_core.cli import make_cli
from arena_core.config import ArenaConfig
from arena_core.hookspecs import hookimpl
from arena_core.testing import plugin_manager_with, run_cli


def problems_of(pm) -> dict[str, str]:
    return {problem.plugin: problem.problem for problem in pm.problems}


def test_each_call_builds_a_fresh_manager():
    first, second = make_plugin_manager(autoload=False), make_plugin_manager(autoload=False)
    assert first is not second
    first.unregister(name="arena_models")
    assert second.has_plugin("arena_models")


def test_builtins_are_registered_by_name_in_order():
    pm = make_plugin_manager(autoload=False)
    names = [info.name for info in pm.plugin_infos()]
    assert names == list(BUILTIN_PLUGINS)
    assert all(info.builtin and info.source == "builtin" for info in pm.plugin_infos())
    assert pm.problems == []


def test_import_error_is_reported_by_plugin_name_and_skipped():
    pm = make_plugin_manager(builtins=("arena_models", "arena_no_such_plugin"), autoload=False)
    assert "arena_no_such_plugin" in problems_of(pm)
    assert "import failed: ModuleNotFoundError" in problems_of(pm)["arena_no_such_plugin"]
    assert pm.has_plugin("arena_models")


def test_entry_point_that_fails_to_import_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    fake_distribution(tmp_path, "broken-arena-plugin", "0.1", {"broken": "broken_arena_plugin"}, {"broken_arena_plugin": "raise ImportError('needs libfoo')\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    pm = make_plugin_manager(builtins=(), autoload=True)
    assert problems_of(pm)["broken"] == "not loaded: import failed: ImportError: needs libfoo"
    with pytest.raises(PluginError, match="plugin 'broken'"):
        make_plugin_manager(builtins=(), autoload=True, strict=True)


def test_entry_point_plugin_is_loaded_with_its_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    source = textwrap.dedent(
        """
        from arena_core import hookimpl
        from plugins_for_tests import model

        @hookimpl
        def arena_register_models(register):
            register(model("tiny-model"))
        """
    )
    fake_distribution(tmp_path, "tiny-arena-plugin", "2.5", {"tiny": "tiny_arena_plugin"}, {"tiny_arena_plugin": source})
    monkeypatch.syspath_prepend(str(tmp_path))
    pm = make_plugin_manager(builtins=(), autoload=True)
    info = {info.name: info for info in pm.plugin_infos()}["tiny"]
    assert (info.version, info.builtin, info.hooks) == ("2.5", False, ("arena_register_models",))
    assert "tiny-arena-plugin" in info.source
    assert ArenaHooks(pm).registry.models["tiny-model"].plugin == "tiny"
    assert not make_plugin_manager(builtins=(), autoload=False).has_plugin("tiny")
    assert not make_plugin_manager(builtins=(), autoload=True, disabled=["tiny"]).has_plugin("tiny")


def test_hook_with_unknown_argument_is_reported_and_not_loaded():
    pm = plugin_manager_with(GoodModels(), UnknownArgument())
    assert "colour" in problems_of(pm)["UnknownArgument"]
    assert not pm.has_plugin("UnknownArgument")
    assert list(ArenaHooks(pm).registry.models) == ["good-model"]


def test_misspelled_hook_is_reported_and_not_loaded():
    pm = plugin_manager_with(GoodModels(), MisspelledHook())
    assert "unknown hook 'arena_register_model'" in problems_of(pm)["MisspelledHook"]
    assert not pm.has_plugin("MisspelledHook")


def test_duplicate_name_keeps_the_first_and_reports_the_second():
    pm = plugin_manager_with(GoodModels(), DuplicateModel())
    registry = ArenaHooks(pm).registry
    assert registry.models["good-model"].plugin == "GoodModels"
    assert registry.models["own-model"].plugin == "DuplicateModel"
    assert problems_of(pm)["DuplicateModel"] == ("model 'good-model' is already registered by plugin 'GoodModels'; skipped")


def test_exception_in_hook_drops_that_plugins_contribution():
    pm = plugin_manager_with(GoodModels(), RaisesInHook())
    registry = ArenaHooks(pm).registry
    assert list(registry.models) == ["good-model"]  # "half-way" was registered before the raise
    assert "RuntimeError: catalog file is corrupt" in problems_of(pm)["RaisesInHook"]


def test_registering_the_wrong_type_is_reported():
    pm = plugin_manager_with(WrongType())
    assert list(ArenaHooks(pm).registry.models) == []
    assert "expected ModelSpec" in problems_of(pm)["WrongType"]


@pytest.mark.parametrize(
    ("plugin", "needle"),
    [
        (UnknownArgument(), "colour"),
        (MisspelledHook(), "arena_register_model"),
        (DuplicateModel(), "already registered"),
        (RaisesInHook(), "catalog file is corrupt"),
        (WrongType(), "expected ModelSpec"),
    ],
)
def test_strict_mode_stops_at_the_misbehaving_plugin(plugin, needle):
    with pytest.raises(PluginError) as raised:
        pm = plugin_manager_with(GoodModels(), plugin, strict=True)
        _ = ArenaHooks(pm).registry  # collecting the registry is what raises
    assert f"plugin {type(plugin).__name__!r}" in str(raised.value)
    assert needle in str(raised.value)


def test_strict_mode_from_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ARENA_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match="arena_no_such_plugin"):
        make_plugin_manager(builtins=("arena_no_such_plugin",), autoload=False)


def test_disabled_plugins_from_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ARENA_DISABLED_PLUGINS", "arena_models, arena_hardware")
    pm = make_plugin_manager(autoload=False)
    assert not pm.has_plugin("arena_models") and not pm.has_plugin("arena_hardware")
    assert pm.has_plugin("arena_workloads")


def test_the_built_in_commands_cannot_be_disabled(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ARENA_DISABLED_PLUGINS", "arena_core.cli.essential_commands, arena_models")
    pm = make_plugin_manager(autoload=False)
    assert pm.has_plugin("arena_core.cli.essential_commands") and not pm.has_plugin("arena_models")
    assert make_plugin_manager(builtins=(), autoload=False).has_plugin("arena_core.cli.essential_commands")
    assert "run" in make_cli(pm).commands


def test_every_built_in_command_is_essential_or_a_named_default():
    from arena_core.plugins import DEFAULT_COMMANDS, ESSENTIAL_COMMANDS

    hooks = ArenaHooks(make_plugin_manager(autoload=False, strict=True))
    cli = click.Group()
    hooks.register_commands(cli)
    essential = {name for name, plugin in hooks.command_plugins.items() if plugin == ESSENTIAL_COMMANDS}
    assert essential == {"run", "card", "runs", "verify", "plugins", "config", "list", "show"}
    assert {name: plugin for name, plugin in hooks.command_plugins.items() if name not in essential} == DEFAULT_COMMANDS


class MyPredict:
    """A third party's own ``arena predict``."""

    @hookimpl
    def arena_register_commands(self, cli: click.Group) -> None:
        cli.add_command(click.Command("predict", callback=lambda: click.echo("my predict")))


def test_a_default_command_can_be_disabled_and_then_replaced(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ARENA_DISABLED_PLUGINS", "arena_core.cli.cmd_predict")
    pm = make_plugin_manager(autoload=False)
    assert {"run", "card", "compare", "publish"} <= set(make_cli(pm).commands) and "predict" not in make_cli(pm).commands
    refused = run_cli(pm, ["predict", "qwen3.6-35b-a3b"])
    assert refused.exit_code == 2 and refused.stdout == ""
    assert (
        refused.stderr
        == "arena: error: arena predict: its plugin arena_core.cli.cmd_predict is disabled (ARENA_DISABLED_PLUGINS), and no other plugin adds a command of that name\n"
    )
    replaced = make_plugin_manager(autoload=False, extra_plugins=[("my-predict", MyPredict())])
    assert run_cli(replaced, ["predict"]).stdout == "my predict\n" and replaced.problems == []
    # while the default is loaded, the default keeps its name and the newcomer is told
    monkeypatch.delenv("ARENA_DISABLED_PLUGINS")
    clash = make_plugin_manager(autoload=False, extra_plugins=[("my-predict", MyPredict())])
    make_cli(clash)
    assert problems_of(clash) == {"my-predict": "command 'predict' is already taken; skipped"}


def test_autoload_switch_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    fake_distribution(tmp_path, "auto-arena-plugin", "1.0", {"auto": "plugins_for_tests"})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert make_plugin_manager(builtins=()).has_plugin("auto")
    monkeypatch.setenv("ARENA_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert not make_plugin_manager(builtins=()).has_plugin("auto")


def test_trace_switch_prints_each_hook_call(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    monkeypatch.setenv("ARENA_TRACE_PLUGINS", "1")
    pm = make_plugin_manager(builtins=("arena_models",), autoload=False)
    _ = ArenaHooks(pm).registry  # collecting the registry is what the trace shows
    err = capsys.readouterr().err
    assert "arena trace: registered plugin 'arena_models' (builtin)" in err
    assert "arena trace: arena_models.arena_register_models(register)" in err


def test_detector_that_raises_is_skipped_and_the_next_answers():
    pm = plugin_manager_with(DetectorRaises(), DetectsTestBox(), builtins=("arena_hardware",))
    found = ArenaHooks(pm).detect_hardware(ArenaConfig())
    assert found is not None and found.profile.name == "test-box"
    assert "nvidia-smi exploded" in problems_of(pm)["DetectorRaises"]


def test_cli_reports_misbehaving_plugins_by_name_on_stderr():
    pm = plugin_manager_with(GoodModels(), RaisesInHook(), builtins=("arena_core.cli.essential_commands",))
    problems: list[str] = []
    pm.on_problem = lambda problem: problems.append(str(problem))
    result = run_cli(pm, ["list", "models"])
    assert result.exit_code == 0
    assert "good-model" in result.stdout
    assert problems == ["plugin 'RaisesInHook': arena_register_models raised RuntimeError: catalog file is corrupt; skipped"]

"""Configuration files: strict structuring, and one-line errors that name file and key path."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena_core import ConfigError, Endpoint
from arena_core.config import CONVERTER, ArenaConfig, apply_override, check_config, load_config, parse_config


def error_of(text: str, registry=None) -> str:
    with pytest.raises(ConfigError) as raised:
        config = parse_config(text, source="arena.toml")
        if registry is not None:
            check_config(config, registry)
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_full_config_structures_into_frozen_classes(registry):
    config = parse_config(
        """
        [run]
        model = "gemma-3-270m"
        hardware = "cpu-host"
        workloads = ["chat", "sharegpt"]
        instrument = "external"
        scale = 0.05

        [endpoint]
        base_url = "http://127.0.0.1:8080"
        api_key_env = "MY_KEY"

        [workloads.chat]
        concurrency = 4
        runs = 1

        [workloads.sharegpt]
        request_rate = 2
        num_prompts = 20

        [scoring.profiles.my-profile]
        quality_weight = 0.5
        speed_share = 0.7
        workload_weights = { chat = 2 }
        """,
        source="arena.toml",
    )
    check_config(config, registry)
    assert config.run.workloads == ("chat", "sharegpt")
    assert config.run.scale == 0.05 and config.run.instrument == "external"
    assert config.workloads["chat"].concurrency == 4
    assert config.workloads["sharegpt"].request_rate == 2.0
    assert config.scoring.profiles["my-profile"].workload_weights == {"chat": 2.0}
    with pytest.raises(AttributeError):
        config.run.scale = 1.0  # type: ignore[misc]


def test_empty_file_gives_the_defaults():
    assert parse_config("") == ArenaConfig()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[run\n", "arena.toml: malformed TOML: "),
        ("[workloads.chat]\nconcurency = 3\n", "arena.toml: $.workloads.chat.concurency: unknown key"),
        ("colour = 'red'\n", "arena.toml: $.colour: unknown key"),
        ("[workloads.chat]\nconcurrency = -3\n", "arena.toml: $.workloads.chat.concurrency: must be greater than 0 and at most 10,000, got -3"),
        ("[workloads.chat]\nconcurrency = 0\n", "arena.toml: $.workloads.chat.concurrency: must be greater than 0 and at most 10,000, got 0"),
        ("[workloads.chat]\nconcurrency = '10'\n", "arena.toml: $.workloads.chat.concurrency: expected an integer, got str '10'"),
        ("[workloads.chat]\nconcurrency = 2.5\n", "arena.toml: $.workloads.chat.concurrency: expected an integer, got float 2.5"),
        ("[workloads.chat]\nconcurrency = true\n", "arena.toml: $.workloads.chat.concurrency: expected an integer, got bool True"),
        ("[workloads.sharegpt]\nrequest_rate = -0.3\n", "arena.toml: $.workloads.sharegpt.request_rate: must be greater than 0"),
        ("[workloads.monday-peak]\nrange_ratio = 1.0\n", "arena.toml: $.workloads.monday-peak.range_ratio: must be at least 0 and below 1"),
        ("[run]\nscale = 0\n", "arena.toml: $.run.scale: must be greater than 0 and at most 100, got 0"),
        ("[run]\nworkloads = 'chat'\n", "arena.toml: $.run.workloads"),
        ("[run]\nworkloads = ['chat', 3]\n", "arena.toml: $.run.workloads[1]: expected a string, got int 3"),
        ("workloads = 3\n", "arena.toml: $.workloads: expected a table"),
        ("[scoring.profiles.x]\nquality_weight = 0.5\n", "arena.toml: $.scoring.profiles.x.speed_share: required key missing"),
        ("[scoring.profiles.x]\nquality_weight = 1.5\nspeed_share = 0.5\n", "arena.toml: $.scoring.profiles.x.quality_weight: must be between 0 and 1"),
        ("[endpoint]\napi_key = 'sk-secret'\n", "arena.toml: $.endpoint.api_key: API keys do not belong in config files"),
    ],
)
def test_bad_values_name_the_file_and_key_path(text, expected):
    message = error_of(text)
    assert message.startswith(expected), message
    assert "sk-secret" not in message


def test_several_problems_are_counted_in_one_line():
    message = error_of("[workloads.chat]\nconcurrency = -1\nruns = 0\n")
    assert message.endswith("(and 1 more)")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[workloads.chatt]\nruns = 1\n", "arena.toml: $.workloads.chatt: unknown workload 'chatt' (known: chat, rag-8k,"),
        ("[run]\nhardware = 'tpu-v9'\n", "arena.toml: $.run.hardware: unknown hardware 'tpu-v9' (known: cpu-host, gb10"),
        ("[run]\nmodel = 'gpt-7'\n", "arena.toml: $.run.model: unknown model 'gpt-7'"),
        ("[run]\nbackend = 'tgi'\n", "arena.toml: $.run.backend: unknown backend 'tgi'"),
        ("[run]\nworkloads = ['chat', 'nope']\n", "arena.toml: $.run.workloads[1]: unknown workload 'nope'"),
        ("[workloads.chat]\nrequest_rate = 2.0\n", "arena.toml: $.workloads.chat.request_rate: does not apply to closed-loop workload 'chat'"),
        ("[workloads.sharegpt]\nconcurrency = 2\n", "arena.toml: $.workloads.sharegpt.concurrency: does not apply to open-loop workload"),
        (
            "[scoring.profiles.p]\nquality_weight = 0.5\nspeed_share = 0.5\nworkload_weights = { chatt = 1 }\n",
            "arena.toml: $.scoring.profiles.p.workload_weights.chatt: unknown workload 'chatt'",
        ),
    ],
)
def test_unknown_names_are_checked_against_the_registry(registry, text, expected):
    assert error_of(text, registry).startswith(expected)


def test_override_changes_only_the_fields_it_sets(registry):
    chat = registry.workloads["chat"].item
    changed = apply_override(chat, parse_config("[workloads.chat]\nconcurrency = 2\nseed = 7\n").workloads["chat"])
    assert changed.shape.concurrency == 2 and changed.seed == 7
    assert changed.shape.prompt_tokens == chat.shape.prompt_tokens


def test_load_config_reads_arena_toml_from_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    assert load_config() == ArenaConfig()
    (tmp_path / "arena.toml").write_text("[run]\nscale = 0.5\n")
    assert load_config().run.scale == 0.5
    assert load_config().source == "arena.toml"


def test_missing_and_unreadable_files_are_config_errors(tmp_path: Path):
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "absent.toml")
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(binary)


def test_endpoint_key_never_leaves_the_process():
    endpoint = Endpoint(base_url="http://127.0.0.1:8000", model="m", api_key="sk-very-secret")
    assert "sk-very-secret" not in repr(endpoint)
    assert CONVERTER.unstructure(endpoint) == {"base_url": "http://127.0.0.1:8000", "model": "m", "on_this_machine": True}


def test_a_config_an_earlier_arena_read_still_reads():
    """``[run] engine`` was the instrument's earlier name: read as ``instrument``; a file that
    says both keeps today's and the other is an unknown key, as any."""
    from arena_core.config import parse_config

    assert parse_config('[run]\nengine = "external"\n').run.instrument == "external"
    with pytest.raises(ConfigError, match="engine"):
        parse_config('[run]\nengine = "external"\ninstrument = "native"\n')

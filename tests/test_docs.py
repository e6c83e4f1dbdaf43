"""Generated references match the code; every hook is documented the same way."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from arena_core import docgen

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("path", "generate"), [(docgen.HOOK_REFERENCE, docgen.hook_reference), (docgen.CLI_REFERENCE, docgen.cli_reference)])
def test_generated_reference_is_up_to_date(path, generate):
    committed = (ROOT / path).read_text(encoding="utf-8")
    assert committed == generate(), f"{path} is stale: run `python -m arena_core.docgen`"


@pytest.mark.parametrize("name,function,options", docgen.hookspec_functions(), ids=[name for name, _, _ in docgen.hookspec_functions()])
def test_every_hookspec_says_when_what_and_returns(name, function, options):
    doc = inspect.getdoc(function) or ""
    assert "Kind: " in doc, f"{name}: say which kind of hook it is"
    assert "Called" in doc, f"{name}: say when it is called"
    for parameter in inspect.signature(function).parameters:
        assert f":param {parameter}:" in doc, f"{name}: document parameter {parameter}"
    assert ":return:" in doc, f"{name}: document the return value"
    assert ("firstresult" in doc) == bool(options.get("firstresult")), f"{name}: firstresult flag and text differ"


def test_every_hookspec_has_at_most_three_parameters():
    for name, function, _ in docgen.hookspec_functions():
        assert len(inspect.signature(function).parameters) <= 3, name


def test_every_doc_page_the_readme_links_exists():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for target in (
        "docs/quickstart.md",
        "docs/configuration.md",
        "docs/cli.md",
        "docs/measurement.md",
        "docs/plugins/writing-a-plugin.md",
        "docs/plugins/hook-reference.md",
        "docs/plugins/testing.md",
    ):
        assert target in readme, target
        assert (ROOT / target).is_file(), target


def test_configuration_reference_mentions_every_key():
    import attrs

    from arena_core import config

    text = (ROOT / "docs/configuration.md").read_text(encoding="utf-8")
    for cls in (config.RunSection, config.EndpointSection, config.WorkloadOverride, config.ScoringProfileConfig):
        for field in attrs.fields(cls):
            assert f"`{field.name}`" in text, f"docs/configuration.md does not document {cls.__name__}.{field.name}"

"""Plugins use Arena's public surface alone: every import from ``arena_core`` that a plugin or an
example makes names something in ``arena_core.__all__``, so a third party can do what the
in-tree plugins do."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import arena_core

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = set(arena_core.__all__)


def non_public_imports(source: str) -> list[str]:
    """Each import from ``arena_core`` in ``source`` that reaches past its public names."""
    found, tree = [], ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "arena_core":
            names = [alias.name for alias in node.names]
            if node.module != "arena_core":
                found.append(f"line {node.lineno}: from {node.module} import {', '.join(names)}")
            else:
                found += [f"line {node.lineno}: from arena_core import {name} (not public)" for name in names if name not in PUBLIC]
        elif isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {alias.name}" for alias in node.names if alias.name.startswith("arena_core.")]
    # ``import arena_core as arena``: every ``arena.X`` must be public too
    aliases = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names if alias.name == "arena_core"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases and node.attr not in PUBLIC:
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr} (not public)")
    return found


# (pip leaves build/ copies beside an example it installed: those are not sources)
PLUGIN_FILES = sorted(p for p in [*ROOT.glob("plugins/**/*.py"), *ROOT.glob("examples/**/*.py")] if not {"build", ".venv"} & set(p.relative_to(ROOT).parts))


def test_every_plugin_and_example_file_is_walked():
    names = {p.relative_to(ROOT).as_posix() for p in PLUGIN_FILES}
    assert {"plugins/arena_runners/llama_benchy.py", "plugins/arena_runners/vllm_bench.py", "examples/arena-tiny-runner/arena_tiny_runner/__init__.py"} <= names


@pytest.mark.parametrize("path", PLUGIN_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_plugins_import_only_public_names(path):
    assert non_public_imports(path.read_text(encoding="utf-8")) == []


def test_the_walk_catches_each_way_past_the_public_names():
    source = (
        "from arena_core.run.store import write_json_atomic\nimport arena_core.loadgen.http\nfrom arena_core import RunContext, new_run_dir\n"
        "import arena_core as arena\narena.RunContext\narena.store.new_run_dir\n"
    )
    assert non_public_imports(source) == [
        "line 1: from arena_core.run.store import write_json_atomic",
        "line 2: import arena_core.loadgen.http",
        "line 3: from arena_core import new_run_dir (not public)",
        "line 6: arena.store (not public)",
    ]

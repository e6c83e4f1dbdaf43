"""The house style, gated: ruff's linter and formatter agree with every Python file (settings in
``pyproject.toml``). Fix with ``ruff check --fix . && ruff format .``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


pytestmark = pytest.mark.slow  # every test here runs ruff or reads the whole tree through it


@pytest.fixture(scope="module", autouse=True)
def _ruff_installed():
    if ruff("--version").returncode != 0:
        pytest.fail("ruff is not installed: pip install -e '.[test]'")


def test_the_linter_finds_nothing():
    done = ruff("check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout[-3000:]


def test_every_file_is_formatted():
    done = ruff("format", "--check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout[-3000:]


def test_the_gate_would_catch_a_badly_formatted_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "bad.py").write_text("import os\nx = {  'a':1 }\n")
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=tmp_path, capture_output=True, text=True)
    form = subprocess.run([sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "."], cwd=tmp_path, capture_output=True, text=True)
    assert lint.returncode == 1 and "F401" in lint.stdout
    assert form.returncode == 1 and "bad.py" in form.stdout


#: Import names whose distribution is named differently.
DISTRIBUTIONS = {"pynvml": "nvidia-ml-py", "yaml": "pyyaml"}


def _declared() -> set[str]:
    import re
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [*project["dependencies"], *(r for extra in project["optional-dependencies"].values() for r in extra)]
    return {re.split(r"[<>=!~; \[]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}


def test_what_the_bench_and_script_files_import_is_declared():
    import ast

    local = {p.stem for p in [*ROOT.glob("bench/*.py"), *ROOT.glob("scripts/*.py")]}
    first_party = {"arena_core", *(p.name for p in (ROOT / "plugins").iterdir() if p.is_dir())}
    missing = []
    for path in [*ROOT.glob("bench/*.py"), *ROOT.glob("scripts/*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom) and node.module and not node.level
                else []
            )
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in local or top in first_party or top == "__future__":
                    continue
                if DISTRIBUTIONS.get(top, top).lower().replace("_", "-") not in _declared():
                    missing.append(f"{path.relative_to(ROOT)}: {top}")
    assert missing == []

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

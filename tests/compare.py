"""Comparing nested results from two implementations, number by number; terminal text as one line."""

from __future__ import annotations

import math
from typing import Any


def assert_same(ours: Any, theirs: Any, path: str = "$", rel: float = 1e-9) -> None:
    """Equal structure, equal keys (for dicts: those of ``theirs``), numbers within ``rel``."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and set(ours) >= set(theirs), path
        for key in theirs:
            assert_same(ours[key], theirs[key], f"{path}.{key}", rel)
    elif isinstance(theirs, (list, tuple)):
        assert isinstance(ours, (list, tuple)) and len(ours) == len(theirs), path
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{path}[{i}]", rel)
    elif isinstance(theirs, float):
        assert math.isclose(ours, theirs, rel_tol=rel, abs_tol=1e-9), f"{path}: {ours} != {theirs}"
    else:
        assert ours == theirs, f"{path}: {ours!r} != {theirs!r}"


def flat(text: str) -> str:
    """Terminal text as one line: a command's line continuations joined and every run of
    whitespace one space, so a test reads a wrapped cell or a multi-line command as written."""
    import re

    return " ".join(re.sub(r" \\\n", " ", text).split())

"""Scoring: the Arena score (``shared/spec/scoring.md``) as plain classes, and their registration.

The classes need no plugin manager: ``from arena_scoring import ArenaScorer``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from arena_core import ScorerSpec, hookimpl
from arena_scoring.arena_score import PROFILES, VERSION, ArenaScorer, Profile

__all__ = ["PROFILES", "VERSION", "ArenaScorer", "Profile"]


def _create(profile: str, custom_profiles: Mapping[str, Any]) -> ArenaScorer:
    return ArenaScorer(profile=profile, custom_profiles=custom_profiles)


@hookimpl
def arena_register_scorers(register: Callable[[ScorerSpec], None]) -> None:
    register(
        ScorerSpec(
            name="arena",
            description=f"The Arena score ({VERSION}): published quality and measured speed and latency over the nine workloads.",
            profiles=tuple(PROFILES),
            create=_create,
            default=True,
        )
    )

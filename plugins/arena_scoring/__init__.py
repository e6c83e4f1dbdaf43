"""Scoring: the seed site's own score (``arena-site``, the default) and Arena's absolute score
(``arena-score/1``) -- ``shared/spec/scoring.md`` sections A and B -- as plain classes, and their
registration. The classes need no plugin manager: ``from arena_scoring import SiteScorer, ArenaScorer``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from arena_core import ScorerSpec, hookimpl
from arena_scoring.arena_score import PROFILES, VERSION, ArenaScorer, Profile
from arena_scoring.site_score import PRESETS, SUITE, SiteScorer

__all__ = ["PRESETS", "PROFILES", "VERSION", "ArenaScorer", "Profile", "SiteScorer"]


def _create(profile: str, custom_profiles: Mapping[str, Any]) -> ArenaScorer:
    return ArenaScorer(profile=profile, custom_profiles=custom_profiles)


def _create_site(profile: str, custom_profiles: Mapping[str, Any]) -> SiteScorer:
    return SiteScorer(preset=profile)


@hookimpl
def arena_register_scorers(register: Callable[[ScorerSpec], None]) -> None:
    register(
        ScorerSpec(
            name="arena-site",
            description="The seed site's own score (arena-site/1): quality, throughput and efficiency, each relative to the best run ranked with it.",
            profiles=tuple(PRESETS),
            create=_create_site,
            default=True,
            relative=True,
            workloads=SUITE,
        )
    )
    register(
        ScorerSpec(
            name="arena",
            description=f"Arena's absolute score ({VERSION}): published quality and measured speed and latency over the nine workloads.",
            profiles=tuple(PROFILES),
            create=_create,
            custom_profiles=True,
            workloads=SUITE,
        )
    )

"""Registered names and the words shapes use: the rules every value class shares."""

from __future__ import annotations

from typing import Literal

from attrs.validators import and_, instance_of, matches_re

#: Registered names are lowercase words joined by dashes, so they work as CLI arguments and keys.
NAME_PATTERN = r"^[a-z0-9][a-z0-9.]*(-[a-z0-9.]+)*$"
valid_name = and_(instance_of(str), matches_re(NAME_PATTERN))


LoopKind = Literal["closed", "open"]
LatencyMode = Literal["api", "generation", "none"]

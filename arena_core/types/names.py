"""Registered names and the words shapes use: the rules every value class shares."""

from __future__ import annotations

import re
from typing import Literal

from attrs.validators import and_, instance_of, matches_re

#: Registered names are lowercase words joined by dashes, so they work as CLI arguments and keys.
NAME_PATTERN = r"^[a-z0-9][a-z0-9.]*(-[a-z0-9.]+)*$"
valid_name = and_(instance_of(str), matches_re(NAME_PATTERN))


def slug(text: str) -> str:
    """``text`` as a registered name: lowercase words joined by dashes, at most 80 characters
    ("" when it has no letter or digit)."""
    return "-".join(re.findall(r"[a-z0-9.]+", text.lower().replace("_", "-")))[:80].strip("-.")


LoopKind = Literal["closed", "open"]
LatencyMode = Literal["api", "generation", "none"]

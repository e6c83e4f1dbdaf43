"""What a run is about to do, said before it starts: requests, output tokens and the time it
takes at the least (open-loop arrival schedules are fixed) and at a stated speed (closed loop
depends on the server)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from arena_core.report.text import minutes
from arena_core.types import SHAREGPT_TYPICAL_TOKENS, AgentShape, ClosedLoopShape, OpenLoopShape, WorkloadSpec

#: The per-user decode speed the closed-loop estimate assumes, said with it.
ASSUMED_TPS_PER_USER = 50.0


def expected_work(workloads: Sequence[WorkloadSpec], *, closed_loop_guess: bool = True) -> str:
    """One line: how much the run asks of the server and how long it will take; without
    ``closed_loop_guess``, no closed-loop time at an assumed speed (where the predictor's
    estimate of the whole run is said beside it, a second, rougher one would contradict it)."""
    requests = tokens = 0
    schedule_s = closed_s = 0.0
    for workload in workloads:
        shape = workload.shape
        if isinstance(shape, ClosedLoopShape):
            per_run, run_s = shape.concurrency * shape.turns, shape.turns * shape.generated_tokens / ASSUMED_TPS_PER_USER
            runs = shape.runs
            if shape.duration_s is not None:  # runs for a stated time (--precision: until precise, at most its cap)
                runs = min(runs, max(1, math.ceil(shape.duration_s / run_s)))
            requests += (runs + 1) * per_run  # a warm-up run, then the measured ones
            tokens += (runs + 1) * per_run * shape.generated_tokens
            closed_s += (runs + 1) * run_s
        elif isinstance(shape, AgentShape):
            requests += shape.agents * shape.turns  # at most: a session may end at its cap
            tokens += shape.agents * shape.turns * shape.answer_tokens
            closed_s += shape.turns * (shape.answer_tokens / ASSUMED_TPS_PER_USER + sum(shape.tool_delay_s) / 2)
        elif isinstance(shape, OpenLoopShape):
            requests += shape.num_prompts
            tokens += shape.num_prompts * (shape.output_tokens or SHAREGPT_TYPICAL_TOKENS[1])
            schedule_s += shape.num_prompts / shape.request_rate if math.isfinite(shape.request_rate) else 0.0
    parts = [f"{requests:,} requests, about {tokens:,} output tokens"]
    if schedule_s:
        parts.append(f"the open-loop arrival schedules alone take {minutes(schedule_s)}")
    if closed_s and closed_loop_guess:
        parts.append(f"closed-loop workloads about {minutes(closed_s)} at {ASSUMED_TPS_PER_USER:g} tok/s per user")
    if any(getattr(workload.shape, "precision", None) is not None for workload in workloads):
        return "expected at most: " + "; ".join(parts) + " (until precise: a workload stops sooner once its figures are within the margin)"
    return "expected: " + "; ".join(parts) + " (--scale shrinks it)"

"""The nine standard Arena workloads (``shared/spec/workloads.md``), and the seed site's second
suite as optional ones, registered as data.

Five closed-loop workloads in llama-benchy's style and four open-loop workloads in
``vllm bench serve``'s style, with the parameters of the published reference cards.
"""

from __future__ import annotations

from collections.abc import Callable

from arena_core import ClosedLoopShape, OpenLoopShape, WorkloadSpec, hookimpl

CLOSED_LOOP_RUNNER = "llama-benchy"
OPEN_LOOP_RUNNER = "vllm-bench"


def _closed(
    name: str,
    title: str,
    description: str,
    *,
    concurrency: int = 10,
    optional: bool = False,
    roles: tuple[str, ...] = (),
    total: tuple[int, str] = (0, ""),
    **shape: int,
) -> WorkloadSpec:
    return WorkloadSpec(
        name=name,
        title=title,
        description=description,
        runner=CLOSED_LOOP_RUNNER,
        shape=ClosedLoopShape(concurrency=concurrency, runs=3, latency_mode="generation", **shape),
        optional=optional,
        roles=roles,
        total_column=total[0],
        total_label=total[1],
    )


def _open(name: str, title: str, description: str, *, optional: bool = False, roles: tuple[str, ...] = (), **shape: object) -> WorkloadSpec:
    return WorkloadSpec(
        name=name,
        title=title,
        description=description,
        runner=OPEN_LOOP_RUNNER,
        shape=OpenLoopShape(**shape),  # type: ignore[arg-type]
        optional=optional,
        roles=roles,
    )


STANDARD_WORKLOADS: tuple[WorkloadSpec, ...] = (
    _closed(
        "chat",
        "Chat",
        "Short prompt, long answer: TTFT decides whether chat feels snappy.",
        prompt_tokens=1024,
        generated_tokens=1024,
        # the seed site's headline is chat's decode total; the card's totals row is the seed's
        roles=("headline", "short-context", "compared"),
        total=(1, "1k ctx"),
    ),
    _closed(
        "rag-8k",
        "RAG · 8k context",
        "A few document chunks and a normal answer: prefill cost without hitting the wall.",
        prompt_tokens=8192,
        generated_tokens=512,
        total=(2, "8k ctx"),
    ),
    _closed(
        "long-output",
        "Long output / agents",
        "Short instruction, long output (code, reports, agent output): a decode stress test.",
        prompt_tokens=256,
        generated_tokens=4096,
    ),
    _closed(
        "long-context-25k",
        "Large context · 25k",
        "25k-token prompts: where the prefill wall appears and TTFT collapses.",
        prompt_tokens=25000,
        generated_tokens=256,
        roles=("long-context",),
        total=(4, "25k ctx"),
    ),
    _closed(
        "multi-turn",
        "Multi-turn · office work",
        "Ten conversations of five turns; each turn adds 2048 tokens and a 512-token answer to the context.",
        prompt_tokens=2048,
        generated_tokens=512,
        turns=5,
        total=(3, "4k+turn"),
    ),
    _open(
        "office-baseline",
        "Realistic office baseline",
        "4000 in / 500 out at 0.3 req/s with bursty (gamma 0.7) arrivals.",
        dataset="random",
        input_tokens=4000,
        output_tokens=500,
        range_ratio=0.9,
        request_rate=0.30,
        burstiness=0.7,
        num_prompts=200,
        roles=("rate-capacity",),
    ),
    _open(
        "sharegpt",
        "Real conversations · ShareGPT",
        "Real ShareGPT V3 conversations (first two turns) at 0.3 req/s, bursty arrivals.",
        dataset="sharegpt",
        request_rate=0.30,
        burstiness=0.7,
        num_prompts=250,
    ),
    _open(
        "monday-peak",
        "Monday-morning peak",
        "4000 in / 500 out at 1.5 req/s (Poisson), at most 25 requests in flight.",
        dataset="random",
        input_tokens=4000,
        output_tokens=500,
        range_ratio=0.9,
        request_rate=1.50,
        burstiness=1.0,
        num_prompts=300,
        max_concurrency=25,
        roles=("compared",),
    ),
    _open(
        "reasoning",
        "Reasoning workload",
        "1024 in / 4096 out at 0.2 req/s (Poisson): long thinking before the answer (what the seed site ran).",
        dataset="random",
        input_tokens=1024,
        output_tokens=4096,
        range_ratio=0.9,
        request_rate=0.20,
        burstiness=1.0,
        num_prompts=50,
    ),
)


#: The seed site's second suite (August 2026), registered as optional workloads: a run measures
#: them only when named (``--workloads concurrency-stress,big-context-25k-c10``), and no score
#: counts them. Its request-rate sweep (test 11) is one workload per step, ``rate-sweep-0.1`` to
#: ``rate-sweep-1.0``; the card sums the steps up (capacity.md section 2). Its sanity check is every run's.
SWEEP_STEPS = ((0.1, 100), (0.2, 100), (0.3, 100), (0.5, 125), (0.7, 175), (1.0, 250))
BIG_CONTEXT_PROMPTS = {"4k": 4096, "8k": 8192, "16k": 16384, "25k": 25000}
BIG_CONTEXT_USERS = (1, 5, 10)
SECOND_SUITE: tuple[WorkloadSpec, ...] = (
    _closed(
        "concurrency-stress",
        "Concurrency stress · 25k context",
        "Twenty users at once, each with a 25k-token prompt and a 256-token answer (the seed's second suite).",
        prompt_tokens=25000,
        generated_tokens=256,
        concurrency=20,
        optional=True,
    ),
    *(
        _closed(
            f"big-context-{label}-c{users}",
            f"Big context · {label} at c={users}",
            f"{tokens}-token prompts, 256-token answers, {users} at once: one point of the seed's big-context scaling test.",
            prompt_tokens=tokens,
            generated_tokens=256,
            concurrency=users,
            optional=True,
        )
        for label, tokens in BIG_CONTEXT_PROMPTS.items()
        for users in BIG_CONTEXT_USERS
    ),
    *(
        _open(
            f"rate-sweep-{rate:g}",
            f"Rate sweep · {rate:g} req/s",
            f"One step of the seed's request-rate sweep: 4000 in / 500 out at {rate:g} req/s, bursty (gamma 0.7), {prompts} prompts.",
            dataset="random",
            input_tokens=4000,
            output_tokens=500,
            range_ratio=0.9,
            request_rate=rate,
            burstiness=0.7,
            num_prompts=prompts,
            optional=True,
        )
        for rate, prompts in SWEEP_STEPS
    ),
)


#: TTFT by cache state (issue 33), optional: the same prompt shape cold (the server's cache
#: emptied), warm but uncached (a fresh prompt) and as a prefix hit (its context sent before).
CACHE_STATES = WorkloadSpec(
    name="ttft-cache-states",
    title="TTFT by cache state",
    description=(
        "A 2048-token context and a 64-token question, one request at a time: the time to first token with the"
        " server's cache emptied (cold), with a prompt never sent before (uncached), and with the context found in the cache (prefix hit)."
    ),
    runner="cache-states",
    shape=ClosedLoopShape(prompt_tokens=64, depth=2048, generated_tokens=16, concurrency=1, runs=5, latency_mode="generation"),
    optional=True,
)


@hookimpl
def arena_register_workloads(register: Callable[[WorkloadSpec], None]) -> None:
    for workload in (*STANDARD_WORKLOADS, *SECOND_SUITE, CACHE_STATES):
        register(workload)

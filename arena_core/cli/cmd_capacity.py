"""``arena capacity``: how much load a server serves within an SLO, in concurrent users or in
requests per second (a search, stored as an ordinary run with one result per probe)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import attrs
import click
from click.core import ParameterSource

from arena_core import bounds
from arena_core.cli.app import CliApp
from arena_core.cli.cmd_run import stopped_like_ctrl_c
from arena_core.cli.output import echo, progress_printer
from arena_core.cli.params import Within, quality_suite_option, server_options
from arena_core.errors import Interrupted, UsageError
from arena_core.hookspecs import hookimpl
from arena_core.loadgen.goodput import parse_slo
from arena_core.report.capacity_card import capacity_knee_line
from arena_core.results.cards import load_card
from arena_core.run.capacity import Capacity, SearchSettings, load_text, probe_workload, run_search
from arena_core.run.manifest import read_manifest
from arena_core.run.session import RunRequest, RunSession, plan_run
from arena_core.run.store import find_run
from arena_core.types import AgentShape, ClosedLoopShape, OpenLoopShape

#: The flags that say what a search measures; a resumed search keeps its own and refuses others.
SEARCH_FLAGS = ("model", "backend", "hardware", "base_url", "scale", "slots", "server_args", "workload", "load", "slo")
SEARCH_FLAGS += ("start", "limit", "precision", "probe_requests", "probe_seconds")
#: What a resumed search takes from the flags when they are given: where to find things.
RESUME_TAKES = ("output", "api_key_env", "api_key_file", "request_timeout", "tokenizer", "served_model")
#: The role of the workload each load searches with when none is named (the workloads plugin
#: gives it: a chat user; the seed's test 11 shape).
DEFAULT_ROLE = {"users": "headline", "rate": "rate-capacity", "agents": "agent-capacity"}
DEFAULT_RANGE = {"users": (1.0, 64.0), "rate": (0.5, 64.0), "agents": (1.0, 64.0)}
#: The shape each load's probes repeat, and how the load is searched otherwise.
SHAPE_OF_LOAD = {
    "users": (ClosedLoopShape, "a closed-loop workload"),
    "rate": (OpenLoopShape, "an open-loop workload"),
    "agents": (AgentShape, "an agents workload"),
}
#: The slots of a server Arena starts for a rate search (in flight at a rate is not known ahead).
RATE_SLOTS = 32


@click.command("capacity")
@click.argument("model", required=False)
@server_options
@click.option(
    "--load",
    type=click.Choice(["users", "rate", "agents"]),
    default="users",
    show_default=True,
    help="Search over concurrent users, request rate or coding agents.",
)
@click.option("--agents", "agents_load", is_flag=True, help="Search over concurrent coding agents (--load agents).")
@click.option("--workload", help="The workload whose shape each probe repeats (default: chat for users, office-baseline for a rate, agents for agents).")
@click.option("--slo", default="interactive", show_default=True, help="interactive, relaxed, batch, or limits such as ttft=2s,tps=10.")
@click.option("--start", type=Within(bounds.FIGURE), help="The first load probed (default: 1 user or agent, 0.5 req/s).")
@click.option(
    "--limit", type=Within(bounds.FIGURE), help="The most load probed (default: 64 users or agents, 64 req/s); the embedded server gets this many slots."
)
@click.option(
    "--slots",
    type=click.IntRange(1, 4096),
    help="Fix the slots of a server Arena starts (llama.cpp -np, vLLM --max-num-seqs; default: the most users probed, 32 for a rate).",
)
@click.option(
    "--precision", type=Within(bounds.FRACTION), default=0.1, show_default=True, help="Stop bisecting when the interval is within this share of the answer."
)
@click.option("--probe-requests", type=click.IntRange(1, 100_000), default=100, show_default=True, help="Requests per probe, at most.")
@click.option(
    "--probe-seconds",
    type=Within(bounds.DURATION_S),
    default=30.0,
    show_default=True,
    help="A probe's stated duration: it stops once this long has passed (at least 20 requests); 0 for none.",
)
@click.option("--scale", type=Within(bounds.SCALE), help="Multiply the workload's token lengths (default: 0.1 for the embedded server, else 1).")
@quality_suite_option(
    "Quality under load (repeatable): after a search over users or agents, this suite asked one item at a time, then as many at once as the capacity found."
)
@click.option("--resume", metavar="RUN_ID", help="Carry on an interrupted search: its finished probes are kept, not run again.")
@click.pass_context
def capacity_command(ctx: click.Context, resume: str | None, **flags: Any) -> None:
    """How much load MODEL serves within an SLO: doubling, then bisection, one probe per load,
    each with a progress line; Ctrl-C keeps the finished probes (carry on with --resume).

    Exit status: 0 when the search finished, 5 when the server stopped answering, 6 when a
    server Arena launched never came up, 2 for bad input, 130 when interrupted."""
    app: CliApp = ctx.obj
    if resume is not None:
        settings, request = _resumed(ctx, resume, flags)
    else:
        settings, request = _asked(app, flags)
    objective = parse_slo(settings.slo, "--slo")
    base = app.hooks.registry.get("workloads", settings.workload)
    plan = plan_run(request, app.config, app.hooks)
    shape = plan.workloads[0]  # the workload as this run measures it (scaled)
    kind, wanted = SHAPE_OF_LOAD[settings.load]
    if not isinstance(shape.shape, kind):
        fits, said = next((load, text) for load, (other, text) in SHAPE_OF_LOAD.items() if isinstance(shape.shape, other))
        raise UsageError(f"--workload {base.name} is {said}: search it over {fits} (--load {fits}), or name {wanted}")
    try:  # each end of the search is a workload that must be able to run, before a server starts
        probe_workload(shape, settings, settings.start)
        plan = attrs.evolve(plan, workloads=(probe_workload(shape, settings, settings.limit),))  # the server is sized for the largest probe
    except ValueError as exc:
        raise UsageError(f"--start {settings.start:g} / --limit {settings.limit:g}: {exc}") from None
    if settings.load == "rate" and plan.slots is None and not plan.backend.attaches:
        plan = attrs.evolve(plan, slots=RATE_SLOTS)
    progress = progress_printer(app.started)

    reach = f"{load_text(settings.load, settings.start)} to {load_text(settings.load, settings.limit)}"
    progress(f"capacity search: {base.name} {settings.load} within {objective.describe()}, {reach}, within {settings.precision:.0%}")
    session = RunSession(plan, app.hooks, progress, resume=resume, live=None, resume_command="arena capacity")
    with stopped_like_ctrl_c(signal.SIGTERM, signal.SIGHUP):
        try:
            # the session's progress: a search's own lines count as said, so its pulse keeps quiet after them
            found = run_search(session, shape, settings, objective, fresh=resume is None, progress=session.progress)
        except KeyboardInterrupt:
            raise Interrupted(f"interrupted: {len(session.results)} probes kept in run {session.run_id}; {session.resume_hint()}") from None
    echo(_headline(found, settings, objective.describe()))
    if knee := capacity_knee_line(load_card(session.run_dir.parent, session.run_id, app.hooks.registry, objective)):
        echo(knee)
    echo(f"results: {session.run_dir}  (arena card {session.run_id})")


def _asked(app: CliApp, flags: dict[str, Any]) -> tuple[SearchSettings, RunRequest]:
    """A new search: its settings from the flags, over the defaults of its load."""
    agents, load = flags.pop("agents_load"), flags.pop("load")
    load = "agents" if agents else load
    low, high = DEFAULT_RANGE[load]
    start, limit = flags.pop("start") or low, flags.pop("limit") or high
    if load == "users" and (start != int(start) or limit != int(limit)):
        raise UsageError(f"--start {start:g} / --limit {limit:g}: users come in whole numbers")
    if start > limit:
        raise UsageError(f"--start {start:g} is more than --limit {limit:g}")
    parse_slo(flags["slo"], "--slo")  # a bad SLO is refused before a server starts
    workload = flags.pop("workload") or app.hooks.registry.with_role(DEFAULT_ROLE[load])
    if workload is None:
        raise UsageError(f"no registered workload has the role {DEFAULT_ROLE[load]!r}: name one with --workload")
    app.hooks.registry.get("workloads", workload)
    settings = SearchSettings(
        workload=workload,
        load=load,
        slo=flags.pop("slo"),
        start=start,
        limit=limit,
        precision=flags.pop("precision"),
        probe_requests=flags.pop("probe_requests"),
        probe_seconds=flags.pop("probe_seconds") or None,
        slots=flags["slots"],
    )
    suites = flags.pop("quality_suites")
    if suites and load == "rate":
        raise UsageError("--quality-suite: quality under load is asked at a number of users or agents at once; a rate search has none")
    quality = {"quality": bool(suites), "quality_suites": suites, "quality_concurrency": 1}
    return settings, RunRequest(workloads=(workload,), instrument="native", **quality, **flags)


def _resumed(ctx: click.Context, run_id: str, flags: dict[str, Any]) -> tuple[SearchSettings, RunRequest]:
    """An interrupted search carried on as it was started: its recorded settings. A flag given
    the same as the search had is fine (a resume command may repeat the original); one that
    would change what it measures is refused."""
    if not run_id.strip():
        raise click.BadParameter("is empty: give the id of the search to carry on (arena runs lists them)", param_hint="--resume")
    app: CliApp = ctx.obj
    manifest = read_manifest(find_run(flags["output"] or Path(app.config.run.output), run_id))
    settings = SearchSettings.recorded(manifest.config)
    if settings is None:
        raise UsageError(f"run {run_id} is not a capacity search: finish it with arena run --resume {run_id}")
    if manifest.status == "completed":
        raise UsageError(f"the capacity search {run_id} has finished: arena card {run_id} shows it")
    had = {**attrs.asdict(settings), **{name: getattr(manifest, name) for name in ("model", "backend", "hardware", "base_url", "scale", "server_args")}}
    changed = [
        "MODEL" if name == "model" else f"--{name.replace('_', '-')}"
        for name in SEARCH_FLAGS
        if ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None) and _as_recorded(name, flags[name]) != had[name]
    ]
    if changed:
        raise UsageError(f"--resume carries on the search as it was started; {', '.join(changed)} would change what it measures (start a new search instead)")
    kept = {name: flags[name] for name in RESUME_TAKES if flags[name] is not None}
    request = attrs.evolve(RunRequest.resuming(manifest, **kept), workloads=(settings.workload,), slots=settings.slots)
    return settings, request


def _as_recorded(name: str, value: Any) -> Any:
    return (value or None) if name == "probe_seconds" else value  # 0: no stated duration


def _headline(found: Capacity | None, settings: SearchSettings, objective: str) -> str:
    if found is None or found.found is None:
        return f"Capacity: none (not even the first probe stayed within {objective})"
    upper = f", fails at {found.failed_at:g}" if found.failed_at is not None else f" (no probe up to --limit {settings.limit:g} failed)"
    return f"Capacity: {load_text(settings.load, found.found)} ({objective}){upper}; {len(found.probes)} probes"


@hookimpl
def arena_register_commands(cli: click.Group) -> None:
    cli.add_command(capacity_command)

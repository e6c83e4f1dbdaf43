"""``arena capacity``: how many concurrent users a server serves within an SLO (a search, stored
as an ordinary run with one result per probe)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import attrs
import click

from arena_core import bounds
from arena_core.capacity import Capacity, judge, probe_workload, records_of, search
from arena_core.cli.app import CliApp
from arena_core.cli.cmd_run import stopped_like_ctrl_c
from arena_core.cli.output import echo
from arena_core.cli.params import Within
from arena_core.engine import RunRequest, RunSession, plan_run
from arena_core.errors import Interrupted, UsageError
from arena_core.loadgen.goodput import parse_slo


@click.command("capacity")
@click.argument("model", required=False)
@click.option("--base-url", help="Search a server that is already running.")
@click.option("--backend", help="Backend name (default: the embedded one, or the one that attaches with --base-url).")
@click.option("--hardware", help="Hardware profile (default: detected).")
@click.option("--served-model", help="Model name the server expects (default: asked from /v1/models).")
@click.option("--api-key-env", metavar="VAR", help="Environment variable holding the API key.")
@click.option("--tokenizer", type=click.Path(exists=True, path_type=Path), help="The model's tokenizer.json (default: the server's /tokenize).")
@click.option("--workload", default="chat", show_default=True, help="The closed-loop workload whose shape each user repeats.")
@click.option("--slo", default="interactive", show_default=True, help="interactive, relaxed, batch, or limits such as ttft=2s,tps=10.")
@click.option("--start-users", type=click.IntRange(1, 4096), default=1, show_default=True)
@click.option(
    "--max-users", type=click.IntRange(1, 4096), default=64, show_default=True, help="The most users a probe tries (the embedded server gets this many slots)."
)
@click.option(
    "--precision", type=Within(bounds.FRACTION), default=0.1, show_default=True, help="Stop bisecting when the interval is within this share of the answer."
)
@click.option(
    "--probe-requests", type=click.IntRange(1, 100_000), default=100, show_default=True, help="Requests per probe (its runs of simultaneous requests)."
)
@click.option("--scale", type=Within(bounds.SCALE), help="Multiply the workload's token lengths (default: 0.1 for the embedded server, else 1).")
@click.option("--output", type=click.Path(file_okay=False, path_type=Path), help="Results directory (default: arena-results).")
@click.pass_obj
def capacity_command(app: CliApp, workload: str, slo: str, start_users: int, max_users: int, precision: float, probe_requests: int, **flags: object) -> None:
    """How many concurrent users MODEL serves within an SLO: doubling, then bisection, one probe
    per load, each with a progress line; Ctrl-C keeps the finished probes."""
    objective = parse_slo(slo, "--slo")
    if start_users > max_users:
        raise UsageError(f"--start-users {start_users} is more than --max-users {max_users}")
    base = app.hooks.registry.get("workloads", workload)
    request = RunRequest(workloads=(workload,), **flags)  # type: ignore[arg-type]
    plan = plan_run(request, app.config, app.hooks)
    shape = plan.workloads[0]  # the workload as this run measures it (scaled)
    sized = probe_workload(shape, max_users, probe_requests)  # the server is sized for the largest probe
    plan = attrs.evolve(plan, workloads=(sized,))
    started = time.perf_counter()

    def progress(line: str) -> None:
        echo(f"[{time.perf_counter() - started:6.0f} s] {line}", err=True)

    progress(f"capacity search: {base.name} users within {objective.describe()}, {start_users} to {max_users} users, within {precision:.0%}")
    session = RunSession(plan, app.hooks, progress, resume=None, live=None)
    status, found = "failed", None
    with stopped_like_ctrl_c(signal.SIGTERM, signal.SIGHUP):
        try:
            endpoint = session.start_backend()
            session.record_slo(slo)
            session.preflight(endpoint)

            def probe(users: int):
                probed = probe_workload(shape, users, probe_requests)
                result = session.run_probe(probed, endpoint)
                verdict = judge(result, records_of(session.run_dir, probed.name), objective, users)
                attained = f"{verdict.attainment:.0%}" if verdict.attainment is not None else "—"
                progress(f"probe {users} users: {attained} within the SLO, {verdict.failed} failed: {'pass' if verdict.passed else 'fail'}")
                return verdict

            found = search(probe, start=start_users, limit=max_users, precision=precision)
            status = "completed"
        except KeyboardInterrupt:
            status = "interrupted"
            raise Interrupted(f"interrupted: {len(session.results)} probes kept in run {session.run_id}") from None
        finally:
            session.finish(status)
    echo(_headline(found, objective.describe(), max_users))
    echo(f"results: {session.run_dir}  (arena card {session.run_id})")


def _headline(found: Capacity | None, objective: str, limit: int) -> str:
    if found is None or found.users is None:
        return f"Capacity: none (not even the first probe stayed within {objective})"
    upper = f", fails at {found.failed_at}" if found.failed_at is not None else f" (no probe up to --max-users {limit} failed)"
    return f"Capacity: {found.users} users ({objective}){upper}; {len(found.probes)} probes"

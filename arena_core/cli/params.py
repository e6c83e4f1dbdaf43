"""Click parameter types shared by commands: kinds and registered names, checked at parse time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from arena_core.bounds import TIMEOUT_S, Bound
from arena_core.cli.app import CliApp
from arena_core.errors import ArenaError, PluginError, UnknownNameError, UsageError
from arena_core.plugins import ENV_DISABLED
from arena_core.registry import KINDS, Kind, find_kind
from arena_core.run.budget import MOST_QUALITY_CONCURRENCY, QUALITY_CONCURRENCY
from arena_core.run.precision_plan import parse_margin


class KindType(click.ParamType):
    """A kind of registered thing, singular or plural: ``workload`` or ``workloads``."""

    name = "kind"

    def __init__(self, extra: tuple[Kind, ...] = ()) -> None:
        self.extra = extra

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Kind:
        if isinstance(value, Kind):
            return value
        word = str(value).lower()
        kind = find_kind(word) or next((k for k in self.extra if word in (k.plural, k.singular)), None)
        if kind is None:
            self.fail(UnknownNameError("kind", str(value), [*KINDS, *(k.plural for k in self.extra)]).problem, param, ctx)
        return kind


def registered_name(ctx: click.Context, param: click.Parameter, value: str, kind: Kind) -> str:
    """Fail as a usage error, listing the known names, when ``value`` is not registered."""
    registry = ctx.find_object(CliApp).hooks.registry  # type: ignore[union-attr]
    if value not in registry.by_kind[kind.plural]:
        raise click.BadParameter(UnknownNameError(kind.singular, value, registry.names(kind.plural)).problem, ctx=ctx, param=param)
    return value


#: ``--output DIR`` of the commands that read the store.
OUTPUT = click.option("--output", type=click.Path(file_okay=False, path_type=Path), help="Results directory (default: arena-results).")


def renderer_named(app: CliApp, name: str, use: str, flag: str) -> Any:
    """The ``use`` callable (``card``, ``site`` or ``prediction``) of the renderer registered as ``name``; a
    usage error in one line naming the renderers that offer it, and the plugins left out where
    a default one may be among them."""
    registry = app.hooks.registry
    found = registry.by_kind["renderers"].get(name)
    if found is not None and getattr(found.item, use) is not None:
        render, plugin = getattr(found.item, use), found.plugin

        def guarded(*args: Any) -> Any:
            try:
                return render(*args)
            except (ArenaError, OSError):  # its own clear error, or a folder it could not write: said as they are
                raise
            except Exception as exc:  # a renderer's bug is its plugin's, said in one line by name
                raise PluginError(f"plugin {plugin!r}: renderer {name!r} failed: {type(exc).__name__}: {str(exc)[:200]}") from None

        return guarded
    offering = [r.item.name for r in registry.registrations("renderers") if getattr(r.item, use) is not None]
    what = {"card": "cards", "site": "sites", "prediction": "predictions"}[use]
    left_out = f" ({ENV_DISABLED} leaves out {', '.join(sorted(app.pm.disabled))})" if app.pm.disabled else ""
    raise UsageError(f"{flag} {name}: no renderer of {what} by that name is registered{left_out}; renderers of {what}: {', '.join(offering) or 'none'}")


def results_dir(app: CliApp, output: Path | None) -> Path:
    return output or Path(app.config.run.output)


def custom_profiles(app: CliApp) -> dict:
    """The config file's ``[scoring.profiles.NAME]`` tables."""
    return dict(app.config.scoring.profiles)


def regular_file(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """A path option that must name a regular file: a FIFO would block for ever, a device such as
    ``/dev/zero`` never end."""
    if value is not None and not value.is_file():
        raise click.BadParameter(f"{value} is not a regular file", ctx=ctx, param=param)
    return value


class Within(click.ParamType):
    """A number inside a :class:`~arena_core.bounds.Bound` (``nan``, ``inf`` and 1e9 are not scales)."""

    name = "number"

    def __init__(self, bound: Bound) -> None:
        self.bound = bound

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if problem := self.bound.problem(number):
            self.fail(problem, param, ctx)
        return number


class Margin(click.ParamType):
    """A relative margin: "5%" or 0.05 (:func:`~arena_core.run.precision_plan.parse_margin`)."""

    name = "margin"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            return value if isinstance(value, float) else parse_margin(value, "")
        except UsageError as exc:
            self.fail(str(exc).removeprefix(": "), param, ctx)


class Duration(click.ParamType):
    """A time: "10m", "90s", "1h", a number of seconds, or "none" (0: no limit); at most a day."""

    name = "duration"
    UNITS = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        text = str(value).strip().lower()
        if text in ("none", "off", "0"):
            return 0.0
        number, unit = text.rstrip("minsh"), text[len(text.rstrip("minsh")) :] or "s"
        try:
            seconds = float(number) * self.UNITS[unit]
        except (ValueError, KeyError):
            self.fail(f"{value!r} is not a time (say 10m, 90s, 1h or none)", param, ctx)
        if not 10 <= seconds <= 86_400:
            self.fail(f"{value!r} is out of range (10 s to 24 h, or none)", param, ctx)
        return seconds


#: The options that say which server to measure and how to reach it, shared by ``arena run`` and
#: ``arena capacity`` (named as :class:`~arena_core.run.session.RunRequest`'s fields).
_SERVER_OPTIONS = (
    click.option("--backend", help="Backend name (default: the embedded one, or the one that attaches with --base-url)."),
    click.option("--hardware", help="Hardware profile (default: detected)."),
    click.option("--base-url", help="Measure a server that is already running (chooses the backend that attaches to one)."),
    click.option("--served-model", help="Model name the server expects (default: asked from /v1/models)."),
    click.option(
        "--model-title", help="What to call a model the catalog lacks (default: from what the server reports: its GGUF name and quantisation, or its model id)."
    ),
    click.option(
        "--server-arg",
        "server_args",
        multiple=True,
        metavar="ARG",
        help="An argument for the command line of a server Arena starts, after its own (repeatable; --server-arg=--enforce-eager).",
    ),
    click.option("--api-key-env", metavar="VAR", help="Environment variable holding the API key."),
    click.option("--api-key-file", metavar="FILE", help="File holding the API key."),
    click.option("--tokenizer", type=click.Path(exists=True, path_type=Path), help="The model's tokenizer.json (default: the server's /tokenize)."),
    click.option("--output", type=click.Path(file_okay=False, path_type=Path), help="Results directory (default: arena-results)."),
    click.option(
        "--request-timeout", type=Within(TIMEOUT_S), metavar="SECONDS", help="Give up on one request after this long (default: 3600); it is recorded as failed."
    ),
)


def server_options(command: Any) -> Any:
    """Decorate ``command`` with :data:`_SERVER_OPTIONS`, in the order listed."""
    for option in reversed(_SERVER_OPTIONS):
        command = option(command)
    return command


def _suite_names(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    registry = ctx.find_object(CliApp).hooks.registry  # type: ignore[union-attr]
    for name in value:
        if name not in registry.by_kind["quality-suites"]:
            raise click.BadParameter(UnknownNameError("quality suite", name, registry.names("quality-suites")).problem, ctx=ctx, param=param)
    return tuple(dict.fromkeys(value))


def quality_suite_option(said: str) -> Any:
    """``--quality-suite NAME`` (repeatable, each a registered suite), as ``said``."""
    return click.option("--quality-suite", "quality_suites", multiple=True, callback=_suite_names, help=said)


_QUALITY_OPTIONS = (
    click.option(
        "--quality/--no-quality",
        default=None,
        help="Measure quality on the served model after the workloads (default: on for the whole suite, off when --workloads names some).",
    ),
    click.option("--quality-full", is_flag=True, help="Every item of each quality suite (default: its stated subset, said on the card)."),
    quality_suite_option("A quality suite to measure (repeatable; default: every default one)."),
    click.option(
        "--quality-concurrency",
        type=click.IntRange(1, MOST_QUALITY_CONCURRENCY),
        metavar="N",
        help=f"Quality items asked at once (default: {QUALITY_CONCURRENCY}, or the server's slots where fewer).",
    ),
)


def quality_options(command: Any) -> Any:
    """Decorate ``command`` with the quality phase's options (named as RunRequest's fields)."""
    for option in reversed(_QUALITY_OPTIONS):
        command = option(command)
    return command

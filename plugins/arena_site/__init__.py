"""The ``site`` renderer: ``arena publish DIR`` writes the leaderboard and every card as a
self-contained static site (:mod:`arena_site.site`), its charts drawn by matplotlib
(:mod:`arena_site.charts`). A default plugin: disabled, ``arena publish`` says that no renderer
writes a site; a third party registers its own ``site`` renderer in its place."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from arena_core import Progress, RendererSpec, SiteView, hookimpl


def _publish(view: SiteView, directory: Path, progress: Progress) -> Path:
    from arena_site.site import publish  # matplotlib and Jinja load only when a site is written

    return publish(view, directory, progress)


@hookimpl
def arena_register_renderers(register: Callable[[RendererSpec], None]) -> None:
    register(
        RendererSpec(name="site", description="a static site: a leaderboard page per scoring profile and a page per card (open index.html)", site=_publish)
    )

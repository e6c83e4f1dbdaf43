"""``python -m arena_core`` is the ``arena`` command."""

from arena_core.cli import main

main()

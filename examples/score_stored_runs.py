"""Score stored runs from plain Python: no plugin manager, no CLI.

    python examples/score_stored_runs.py [RESULTS_DIR]     # default: arena-results

Builds each run's model card from the store, then scores it under every profile with the
``ArenaScorer`` class, and prints the parts of the number (Q, P, what was missing).
"""

from __future__ import annotations

import sys
from pathlib import Path

from arena_core import ArenaHooks, load_cards, make_plugin_manager
from arena_scoring import PROFILES, ArenaScorer


def main(results: Path) -> None:
    registry = ArenaHooks(make_plugin_manager()).registry  # only to read the catalog and workload names
    cards, problems = load_cards(results, registry)
    for problem in problems:
        print(f"skipped: {problem}", file=sys.stderr)
    if not cards:
        print(f"no runs in {results} (try: arena import --seeds --output {results})")
        return
    for card in cards:
        print(f"{card.model_title} on {card.hardware} (run {card.run_id})")
        for profile in PROFILES:
            score = ArenaScorer(profile=profile).score(card)
            value = "not computed" if score.value is None else f"{score.value:.1f}"
            quality = "missing" if score.quality is None else f"{score.quality:.1f}"
            print(f"  {profile:9s} {value:>12}   Q {quality:>7}   P {score.performance:5.1f}   missing: {', '.join(score.missing) or 'nothing'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("arena-results"))

"""The default predictor: a step simulator of LLM serving, calibrated on stored runs.

It registers one :class:`arena_core.PredictorSpec`; ``arena predict``, ``arena calibrate``, the
cards, the leaderboard and the site reach it only through that spec, so a third party replaces it
by registering its own as ``default`` (or by disabling this plugin), and Arena without it measures,
scores and publishes as before, with the prediction columns absent and said so.
"""

from __future__ import annotations

from collections.abc import Callable

from arena_core import PredictorSpec, hookimpl
from arena_prediction.predictor import NAME, StepSimulator


@hookimpl
def arena_register_predictors(register: Callable[[PredictorSpec], None]) -> None:
    register(
        PredictorSpec(
            name=NAME,
            description="Simulates the engine step by step from the model's layout and the hardware's roofs, at efficiencies fitted to stored runs.",
            create=StepSimulator,
            default=True,
        )
    )

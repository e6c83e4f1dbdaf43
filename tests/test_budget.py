"""A run in a stated time: the expected time is said before a run starts, and the embedded
default chooses its scale to fit its budget (issue 31, "the main job in a stated time")."""

from __future__ import annotations

from pathlib import Path

import attrs
import click
import pytest

from arena_core import ArenaHooks, Endpoint, hookimpl, make_plugin_manager
from arena_core.cli.params import Duration
from arena_core.config import load_config
from arena_core.run.budget import PRIOR_SLOWDOWN, Expected, minutes, scale_for
from arena_core.run.manifest import read_manifest, write_manifest
from arena_core.run.session import RunRequest, plan_run
from arena_core.run.store import index_run, new_run_dir, store_result
from arena_core.types import Verdict, WorkloadResult


@pytest.fixture(autouse=True)
def _reference_host(monkeypatch):
    """The budget's arithmetic is under test, not the machine the tests land on: a CPU host
    measures its memory bandwidth when a run is planned (a copy on every core, which another
    process beside the tests lowers) and estimates its dense peak from /proc/cpuinfo (an
    AVX2-only EPYC of 2 cores: 0.16 TFLOPS, half an AVX-512 machine's), and on the slower of these
    machines not even the smallest scale's estimate fitted 10 minutes. Both are pinned to a
    2-core AVX-512 host, idle: 24 GB/s (24-29 measured idle on 2026-12-06) and 0.31 TFLOPS."""
    import arena_hardware.host as host

    monkeypatch.setattr(host, "measure_host_bandwidth", lambda *args, **kwargs: 24.0)
    monkeypatch.setattr(host, "estimated_peak_tflops", lambda *args, **kwargs: 2 * 2.4e9 * 64 / 1e12)


def plan(hooks, tmp_path, **request):
    return plan_run(RunRequest(output=tmp_path / "store", **request), load_config(None), hooks)


def test_the_embedded_default_fits_its_budget_and_says_how_long_it_will_take(hooks, tmp_path):
    default = plan(hooks, tmp_path)
    assert default.budget_s == 600 and default.expected is not None
    assert default.scale < 0.1 and default.expected.total_s <= 600  # the scale chosen so the run fits 10 minutes
    assert default.expected.slowdown == PRIOR_SLOWDOWN and "prior" in default.expected.describe()
    longer = plan(hooks, tmp_path, budget_s=1200)
    assert default.scale < longer.scale <= 0.1 and longer.expected.total_s <= 1200  # more time, a larger scale
    fixed = plan(hooks, tmp_path, scale=0.1)
    assert fixed.scale == 0.1 and fixed.budget_s is None and fixed.expected.total_s > 600  # a scale given: no budget, the time still said
    assert plan(hooks, tmp_path, workloads=("chat",)).budget_s is None  # a quick check of named workloads keeps its scale


def test_a_stored_run_of_the_model_teaches_the_estimate_its_speed(hooks, tmp_path):
    """A run stored here that took twice its simulated time makes the next estimate twice the
    simulation, and says it learnt so from that run."""
    first = plan(hooks, tmp_path, scale=0.05, workloads=("chat",), quality=False)
    run_id, run_dir = new_run_dir(tmp_path / "store")
    from arena_core.run.session import new_manifest

    write_manifest(run_dir, new_manifest(first, run_id))
    index_run(tmp_path / "store", read_manifest(run_dir))
    simulated = first.expected.workloads_s - 4.0  # the per-workload cost aside
    slowed = (simulated / PRIOR_SLOWDOWN) * 5.0 + 4.0  # a machine five times slower than simulated
    result = WorkloadResult(
        workload="chat",
        runner="llama-benchy",
        instrument="native",
        requests=10,
        failed=0,
        tokens_per_second=1.0,
        ttft_p50_s=1.0,
        verdict=Verdict(valid=True),
        scale=0.05,
        metrics={"wall_s": slowed},
    )
    store_result(run_dir, result)
    again = plan(hooks, tmp_path, scale=0.05, workloads=("chat",), quality=False)
    assert again.expected.slowdown == pytest.approx(5.0, rel=0.02) and run_id in again.expected.basis


def test_the_scale_is_the_largest_that_fits():
    def at(scale: float) -> Expected:
        return Expected(workloads_s=6000 * scale, quality_s=200, startup_s=20, slowdown=1.0, basis="")

    found = scale_for(600, 0.1, at)
    assert at(found).total_s <= 600 < at(found * 1.02).total_s  # within the bisection's 1 %
    assert scale_for(6000, 0.1, at) == 0.1  # fits as it is
    assert scale_for(100, 0.1, at) == 0.01  # even the smallest does not fit: the smallest, said
    assert minutes(598) == "9 min 58 s" and minutes(45) == "45 s" and minutes(600) == "10 min"


@pytest.mark.parametrize(("given", "seconds"), [("10m", 600), ("90s", 90), ("1h", 3600), ("600", 600), ("none", 0), ("2.5min", 150)])
def test_a_budget_is_a_time(given, seconds):
    assert Duration().convert(given, None, None) == seconds


@pytest.mark.parametrize("given", ["soon", "5", "2d", "-10m", "nan"])
def test_a_budget_that_is_not_a_time_is_refused(given):
    with pytest.raises(click.BadParameter):
        Duration().convert(given, None, None)


def test_a_budget_nothing_can_estimate_is_refused_not_ignored(hooks, tmp_path):
    """A server Arena attaches to serves a model it may not know: how long a run takes cannot be
    estimated, so ``--budget`` is refused before anything runs (one line naming the flag and
    why), never ignored while the card says the scale was chosen to fit it."""
    from arena_core.errors import UsageError

    with pytest.raises(
        UsageError, match=r"^--budget 10 min: Arena cannot estimate how long this run takes \(the served model is none Arena's catalog describes"
    ):
        plan(hooks, tmp_path, base_url="http://127.0.0.1:9", served_model="served-model", budget_s=600)
    with pytest.raises(UsageError, match="the engine of a server Arena attaches to is known only once the run asks it"):
        plan(hooks, tmp_path, base_url="http://127.0.0.1:9", model="qwen3.6-35b-a3b", budget_s=600)
    assert plan(hooks, tmp_path, base_url="http://127.0.0.1:9", served_model="served-model").budget_s is None


def test_a_run_with_an_estimate_says_one_time_not_two(hooks, tmp_path):
    """Where the predictor estimates the whole run, the line before it says what the run asks
    (requests, tokens, the open-loop schedules) without a second closed-loop time at an assumed
    50 tok/s a user, which the embedded server on 2 cores decodes at a seventh of."""
    from arena_core.report.expected import expected_work

    default = plan(hooks, tmp_path)
    assert default.expected is not None
    said = expected_work(default.workloads, closed_loop_guess=default.expected is None)
    assert "requests" in said and "arrival schedules" in said and "tok/s per user" not in said
    assert "at 50 tok/s per user" in expected_work(default.workloads)  # no estimate: the rough one, its speed said


def test_a_run_behind_its_budget_shrinks_the_workloads_still_to_run(hooks, tmp_path):
    """Where the first workloads took three times their estimate, the rest run at the scale that
    fits the time left, and the change is said; a run on time changes nothing."""
    from arena_core.run.budget import FINISH_S, PER_WORKLOAD_S, BudgetKeeper, simulated_seconds

    planned = plan(hooks, tmp_path, budget_s=1800)
    timing, clock = planned.timing, [0.0]
    assert timing is not None and planned.scale > 0.02 and len(planned.unscaled) == len(planned.workloads) == 9
    keeper = BudgetKeeper(timing, 1800.0, lambda: clock[0])
    first = planned.workloads[:2]
    slow = [(spec, PER_WORKLOAD_S + 3 * timing.slowdown * simulated_seconds(spec, timing.predictor, timing.setup)) for spec in first]
    on_time = [(spec, PER_WORKLOAD_S + timing.slowdown * simulated_seconds(spec, timing.predictor, timing.setup)) for spec in first]
    clock[0] = sum(wall for _, wall in on_time) + planned.backend.start_s
    assert keeper.rescale(on_time, planned.unscaled[2:], planned.scale) is None and keeper.changes == []
    clock[0] = sum(wall for _, wall in slow) + planned.backend.start_s
    smaller = keeper.rescale(slow, planned.unscaled[2:], planned.scale)
    assert smaller is not None and smaller < planned.scale
    rest = attrs.evolve(timing, slowdown=3 * timing.slowdown).expected([spec.scaled(smaller) for spec in planned.unscaled[2:]])
    assert rest.workloads_s + rest.quality_s <= 1800 - clock[0] - FINISH_S  # what is left fits
    (change,) = keeper.changes
    assert change.startswith(f"the last 7 workloads ran at x{smaller:g}, not x{planned.scale:g}: with {1800 - clock[0] - FINISH_S:.0f} s of the budget left")
    assert change.endswith(f"at the pace measured so far (x{3 * timing.slowdown:.2f} the predictor's time)")


def test_each_quality_suite_gets_its_share_of_the_time_left(hooks, tmp_path):
    from arena_core.run.budget import FINISH_S, BudgetKeeper

    planned = plan(hooks, tmp_path)
    humaneval, canary = planned.quality
    keeper = BudgetKeeper(planned.timing, 600.0, lambda: 400.0)
    first = keeper.quality_limit(humaneval, planned.quality, full=False)
    assert 0 < first < 600 - 400 - FINISH_S
    assert keeper.quality_limit(canary, planned.quality[1:], full=False) == pytest.approx(600 - 400 - FINISH_S)  # the last suite: all that is left


def test_an_estimate_over_its_budget_gives_the_quality_phase_what_is_left(hooks, tmp_path):
    """At the smallest scale the workloads fit a 4-minute budget but quality does not: the time
    said before the run starts is the budget's (less the 10 s kept for the end), quality's share
    cut and said to be."""
    from arena_core.run.budget import FINISH_S

    planned = plan(hooks, tmp_path, budget_s=240)
    assert planned.scale == 0.01 and planned.expected is not None and planned.expected.quality_cut
    assert planned.expected.total_s == pytest.approx(240 - FINISH_S) and "what the budget leaves it" in planned.expected.describe()


def test_the_card_says_what_the_budget_changed_and_whether_it_was_kept(tmp_path, hooks):
    from arena_core.report.model_card import time_line
    from arena_core.results.cards import load_cards
    from arena_core.results.imports import import_file, seed_cards_path

    import_file(seed_cards_path(), tmp_path, hooks.registry, workload=None, model=None, hardware=None, backend="vllm")
    card = attrs.evolve(load_cards(tmp_path, hooks.registry)[0][0], budget_s=600.0, expected_s=598.0, took_s=560.0)
    assert time_line(card).endswith("budget 10 min, the scale x1 chosen to fit it; kept, nothing changed while it ran.")
    cut = attrs.evolve(card, budget_changes=("quality humaneval on 21 of its 41 items, in the 117 s the budget left it",))
    assert time_line(cut).endswith("; to keep it, quality humaneval on 21 of its 41 items, in the 117 s the budget left it.")
    assert time_line(attrs.evolve(card, took_s=651.0)).endswith("; over it by 51 s.")


class RigBackend:
    """A backend Arena "starts" that is the rig, answering far slower than the simulator says a
    CPU host serves Gemma 3 270M: a run on it falls behind its budget after its first workload."""

    def __init__(self, rig_args: list[str]) -> None:
        self.rig_args = rig_args

    @hookimpl
    def arena_register_backends(self, register):
        from arena_core.testing.fake_server import FakeServerProcess

        hooks = ArenaHooks(make_plugin_manager(autoload=False))
        llama = hooks.registry.get("backends", "llama-cpp")
        rig_args = self.rig_args

        class Launched:
            log_path = None
            facts: dict = {}

            def __init__(self, request):
                self.rig = FakeServerProcess(rig_args)

            def start(self):
                self.rig.__enter__()
                return Endpoint(base_url=self.rig.url, model="rig")

            def stop(self):
                self.rig.__exit__(None, None, None)

        register(attrs.evolve(llama, name="slow-rig", description="the rig, slowly", create=Launched, embedded=None, start_s=1.0))


@pytest.mark.slow
def test_a_run_that_falls_behind_shrinks_its_last_workloads_and_says_so(tmp_path, monkeypatch):
    """Wired through ``arena run``: the first workload took far longer than estimated (the prior
    says this machine is 8 times faster than the rig serves), so the rest run smaller; their
    results and reference commands carry the smaller scale, and the manifest says why."""
    import json

    import arena_core.run.budget as budget_module
    from arena_core.testing import run_cli

    monkeypatch.setattr(budget_module, "PRIOR_SLOWDOWN", 0.25)
    tokenizer = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"
    rig = ["--tokenizer", str(tokenizer / "tokenizer.json"), "--decode-gap-ms", "0", "--shared-tps", "100"]  # 100 tok/s shared by all
    pm = make_plugin_manager(autoload=False)
    pm.register(RigBackend(rig), name="slow-rig")
    argv = ["run", "gemma-3-270m", "--backend", "slow-rig", "--hardware", "cpu-host", "--workloads", "long-output,chat,reasoning", "--budget", "30s"]
    done = run_cli(pm, [*argv, "--no-quality", "--tokenizer", str(tokenizer), "--output", str(tmp_path)])
    assert done.exit_code in (0, 4), done.stderr
    (run_dir,) = [p for p in tmp_path.iterdir() if (p / "manifest.json").is_file()]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    changes = manifest["budget_changes"]
    assert changes and changes[0].startswith("the last 2 workloads ran at x"), changes
    smaller = float(changes[0].split(" ran at x", 1)[1].split(",", 1)[0])
    scales = {name: json.loads((run_dir / "workloads" / name / "result.json").read_text())["scale"] for name in ("long-output", "chat", "reasoning")}
    assert scales["long-output"] == manifest["scale"] and scales["chat"] == smaller < manifest["scale"] and scales["reasoning"] <= smaller
    assert all(f"to keep the budget: {change}" in done.stderr for change in changes)
    shrunk = registry_of(pm).get("workloads", "reasoning").scaled(scales["reasoning"]).shape.num_prompts
    assert f"--num-prompts {shrunk} " in manifest["commands"]["reasoning"] + " "


def registry_of(pm):
    return ArenaHooks(pm).registry

"""No silent minute (issue 61): a phase under way says what it is doing -- requests or items
answered, the time so far and left -- whenever nothing was said for :data:`PULSE_S` seconds, on
a terminal only where no live line shows it already."""

from __future__ import annotations

import pytest

from arena_core.run.pulse import PULSE_S, Counts, Pulse


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_quiet_phase_says_its_counts_and_time_and_nothing_while_others_speak():
    clock, said = Clock(), []
    pulse = Pulse(said.append, live=False, clock=clock)
    pulse.tick()
    assert said == []  # no phase under way: nothing to say
    items = Counts("items")
    with pulse.phase("quality: humaneval", items, has_live_line=True):
        items.update(10, 40)
        clock.now += PULSE_S - 1
        pulse.tick()
        assert said == []  # not silent long enough yet
        clock.now += 1
        pulse.tick()
        assert said == ["quality: humaneval: 10/40 items answered, about 1 min left; 20 s so far"]
        clock.now += 5
        pulse.say("quality: humaneval graded 10/40")  # another line resets the wait
        clock.now += PULSE_S - 1
        pulse.tick()
        assert len(said) == 2
    clock.now += 60
    pulse.tick()
    assert len(said) == 2  # the phase is over


def test_on_a_terminal_the_live_line_speaks_for_a_phase_that_has_one():
    clock, said = Clock(), []
    pulse = Pulse(said.append, live=True, clock=clock)
    with pulse.phase("[6/9] office-baseline", Counts("requests"), has_live_line=True):
        clock.now += 3 * PULSE_S
        pulse.tick()
    assert said == []
    with pulse.phase("still starting the vllm server (its log: run/server.log)"):  # no live line: it speaks
        clock.now += PULSE_S
        pulse.tick()
    assert said == ["still starting the vllm server (its log: run/server.log): 20 s so far"]


@pytest.mark.slow
def test_the_quality_phase_of_a_run_is_not_silent(tmp_path, monkeypatch):
    """Wired through a real run (``arena quality`` on the rig, its answers slowed): while
    HumanEval's answers come back nothing else is printed, and the pulse says the counts. The
    landed run said nothing between "41 of 164 problems" and "graded 10/41"."""
    import arena_core.run.pulse as pulse_module
    from arena_core import make_plugin_manager
    from arena_core.testing import run_cli
    from arena_core.testing.fake_server import FakeServerProcess

    monkeypatch.setattr(pulse_module, "PULSE_S", 0.2)
    with FakeServerProcess(["--decode-gap-ms", "5", "--code-answers", "canonical"]) as server:
        done = run_cli(make_plugin_manager(autoload=False), ["quality", "--base-url", server.url, "--quality-suite", "humaneval", "--output", str(tmp_path)])
    assert done.exit_code == 0, done.stderr
    assert "quality: humaneval: " in done.stderr and " items answered" in done.stderr, done.stderr


@pytest.mark.slow
def test_a_long_stage_of_publish_says_how_long_it_has_run(seed_store, tmp_path, monkeypatch):
    """``arena publish`` on a fresh seed store worked out its error ledger in silence for 198 s
    (measured on a 2-core machine); a stage now says its time whenever it is quiet."""
    import time

    import arena_core.cli.cmd_publish as cmd_publish
    import arena_core.run.pulse as pulse_module
    from arena_core import make_plugin_manager
    from arena_core.testing import run_cli

    monkeypatch.setattr(pulse_module, "PULSE_S", 0.2)
    real = cmd_publish.ledger_of

    def slow_ledger(*args, **kwargs):  # as long as a fresh store's fits take, in miniature
        time.sleep(2.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(cmd_publish, "ledger_of", slow_ledger)
    done = run_cli(make_plugin_manager(autoload=False), ["publish", str(tmp_path / "site"), "--output", str(seed_store)])
    assert done.exit_code == 0, done.stderr
    assert "arena publish: predicting each run without it (the error ledger): " in done.stderr and " s so far" in done.stderr, done.stderr

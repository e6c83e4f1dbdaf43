"""Self-host cost per million output tokens at the capacity a search found: the arithmetic by
hand, the link from a search to the runs it stands for, and the config section's bounds."""

from __future__ import annotations

import pytest

from arena_core.config import CostSection, parse_config
from arena_core.errors import ConfigError
from arena_core.report.cost import HOURS_PER_YEAR, CostLine, cost_of
from arena_core.report.model_card import cost_rows
from arena_core.types import CardSlo, CardWorkload, ModelCard


def probe(users: int, *, attainment: float, total_tps: float, joules: float | None) -> CardWorkload:
    metrics = {"slo_attainment": attainment, "decode_tps_total": total_tps, "failed": 0.0}
    if joules is not None:  # what the energy counters read: J per output token, from the CPU packages
        metrics.update(energy_per_output_token_j=joules, cpu_energy_j=1000.0)
    return CardWorkload(
        name=f"chat-users-{users}", tokens_per_second=total_tps / users, ttft_p50_s=0.5, custom=f"capacity probe: {users} users, x1", metrics=metrics
    )


def card(run_id: str, *, workloads=(), server: str = "", hardware: str = "cpu-host", model: str = "gemma-3-270m", at: str = "2026-12-03T10:00:00") -> ModelCard:
    return ModelCard(
        run_id=run_id, model=model, model_title=model, hardware=hardware, hardware_title=hardware, backend="llama-cpp", measured_with="native",
        measured_at=at, source="measured by Arena", expected=("chat",), server=server, slo=CardSlo(name="interactive", target=0.95),
        workloads=tuple(workloads) or (CardWorkload(name="chat", tokens_per_second=7.0, ttft_p50_s=1.0),),
    )  # fmt: skip


SEARCH = card(
    "20261203-100000-aaaa",
    workloads=(
        probe(2, attainment=1.0, total_tps=50.0, joules=1.6),
        probe(4, attainment=0.97, total_tps=90.0, joules=1.5),  # the capacity: the most load that passed
        probe(8, attainment=0.60, total_tps=110.0, joules=1.4),  # peak throughput, beyond the SLO
    ),
)
PRICES = CostSection(price_per_kwh=0.30, hardware_price=4000.0, lifetime_years=3.0, utilisation=0.5)


def test_the_cost_is_taken_at_capacity_and_adds_up_by_hand():
    line = cost_of([SEARCH], PRICES)(SEARCH)
    assert isinstance(line, CostLine) and line.capacity == "4 users" and line.output_tps == 90.0 and line.joules_per_token == 1.5
    # by hand: electricity 1.5 J x 10^6 / 3.6e6 J/kWh x 0.30 = 0.125; hardware 4000 / (3 x 8766 x 0.5)
    # = 0.30418 /h over 90 tok/s x 3600 = 324,000 tok/h, x 10^6 = 0.93883
    electricity, hardware = 1.5 * 1e6 / 3.6e6 * 0.30, 4000 / (3 * 8766 * 0.5) / 324_000 * 1e6
    assert HOURS_PER_YEAR == 8766 and line.electricity == pytest.approx(0.125) and line.hardware == pytest.approx(hardware)
    assert line.per_million == pytest.approx(electricity + hardware) and line.cell() == "1.06 EUR"
    said = line.explained()
    assert said.startswith("1.06 EUR per million output tokens at capacity 4 users (search 20261203-100000-aaaa): ")
    assert "electricity 1.5 J per output token (read from the CPU packages (RAPL" in said and "× 10^6 ÷ 3.6 MJ/kWh × 0.3 EUR/kWh = 0.125 EUR" in said
    assert "hardware 4000 EUR ÷ (3 years × 8766 h × 0.5) = 0.3042 EUR/h ÷ (90.0 tok/s × 3600) × 10^6 = 0.939 EUR" in said


def test_a_search_stands_for_runs_of_the_same_model_and_server_only():
    same = card("20261203-110000-bbbb")
    other_server = card("20261203-110000-cccc", server="http://gpu-box:8000")
    other_model = card("20261203-110000-dddd", model="qwen3-0.6b")
    costs = cost_of([SEARCH, same, other_server, other_model], PRICES)
    assert isinstance(costs(same), CostLine) and costs(same).search_run == SEARCH.run_id  # type: ignore[union-attr]
    for run in (other_server, other_model):
        assert costs(run) == "no capacity search of this model on this server and hardware (arena capacity)"
    # the newest search of a setup is the one that counts
    newer = card("20261203-120000-eeee", at="2026-12-03T12:00:00", workloads=(probe(2, attainment=1.0, total_tps=40.0, joules=1.5),))
    assert cost_of([SEARCH, newer, same], PRICES)(same).search_run == newer.run_id  # type: ignore[union-attr]


def test_power_never_measured_is_never_guessed():
    unmetered = card("20261203-100000-ffff", workloads=(probe(4, attainment=1.0, total_tps=90.0, joules=None),))
    energy_only = CostSection(price_per_kwh=0.30)
    assert cost_of([unmetered], energy_only)(unmetered).startswith("no energy counter was read at capacity")  # type: ignore[union-attr]
    line = cost_of([unmetered], PRICES)(unmetered)
    assert isinstance(line, CostLine) and line.electricity is None
    assert "electricity not counted (no energy counter read at capacity)" in line.explained()
    assert cost_rows(line)[0][0] == "cost per million output tokens" and cost_rows(None) == []
    assert cost_of([SEARCH], CostSection())(SEARCH).startswith("no [cost] in the config")  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("toml", "problem"),
    [
        ("price_per_kwh = -0.1", "$.cost: price_per_kwh: must be between 0 and"),
        ("utilisation = 0.001", "$.cost: utilisation: must be between 0.01 and 1"),
        ("lifetime_years = 1e-300", "$.cost: lifetime_years: must be between 0.1 and 100"),
        ('currency = "<b>€</b>"', "$.cost: a currency is 1 to 8 letters"),
        ("price_kwh = 0.3", "$.cost.price_kwh: unknown key"),
    ],
)
def test_a_bad_cost_section_is_one_line_naming_the_key(toml, problem):
    with pytest.raises(ConfigError) as caught:
        parse_config(f"[cost]\n{toml}\n", source="arena.toml")
    assert problem in str(caught.value) and "arena.toml" in str(caught.value)

"""A new engine is one module and one registry line: the toy engine of ``toy_engine.py``,
registered from this test, passes the whole conformance suite and runs through Scenario,
the ``auto`` rule, and a sweep's cache key, with no change to the package."""

from dataclasses import replace

import pytest

from conformance import CASES, CHECKS, ZERO_LOAD_CASES, check_zero_load_is_exact, runner
from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.base import ENGINES
from nunasim.errors import ConfigError
from nunasim.experiments.cache import point_key
from nunasim.experiments.sweep import Point
from nunasim.io.presets import load_preset
from nunasim.scenario import Configuration, Scenario
from toy_engine import SerialEngine

PRESET = load_preset("nextgen-4die")


@pytest.fixture
def toy():
    engine = SerialEngine()
    ENGINES.register(engine)
    yield engine
    ENGINES.unregister(engine.name)


@pytest.mark.parametrize("case", ZERO_LOAD_CASES, ids=str)
def test_the_toy_is_exact_at_zero_load(toy, case):
    check_zero_load_is_exact(runner(toy), case)


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__.removeprefix("check_"))
def test_the_toy_conforms(toy, case, check):
    check(runner(toy), case)


def test_a_scenario_runs_the_toy_by_name(toy):
    scenario = Scenario(PRESET, builtin_plan("allgather:direct:gpus=4"), "64KB", engine=toy.name)
    result = scenario.run()
    assert scenario.chosen_engine == toy.name
    assert (result.engine, result.engine_revision) == (toy.name, toy.revision)
    assert result.to_row()["engine"] == toy.name
    assert result.completion_ps >= result.lower_bound_ps > 0


def test_auto_takes_the_first_engine_that_admits_the_run(toy):
    plan = builtin_plan("allgather:direct:gpus=4")
    assert Scenario(PRESET, plan, "4KB").chosen_engine == "packet"  # the toy comes last
    ENGINES.unregister(toy.name)
    ENGINES.register(toy, before="packet")
    assert Scenario(PRESET, plan, "4KB").chosen_engine == toy.name  # within its 1,000
    assert Scenario(PRESET, plan, "10MB").chosen_engine == "packet"  # beyond them


def test_an_engine_without_a_background_model_refuses_a_gemm_beside(toy):
    with pytest.raises(ConfigError, match="does not model a background GEMM"):
        Scenario(
            PRESET,
            builtin_plan("allgather:direct:gpus=4"),
            "1MB",
            gemm_tiles=1,
            gemm_tile=object(),
            engine=toy.name,
        )


def test_the_cache_key_takes_the_toy_revision(toy, monkeypatch):
    point = Point("allgather", 100_000, Configuration.parse("UA"), gpus=4, engine=toy.name)
    before = point_key(point, PRESET)
    assert point_key(replace(point, engine="packet"), PRESET) != before
    monkeypatch.setattr(toy, "revision", toy.revision + 1)
    assert point_key(point, PRESET) != before


def test_a_registered_name_is_not_taken_twice(toy):
    with pytest.raises(ConfigError, match="already registered"):
        ENGINES.register(SerialEngine())
    with pytest.raises(ConfigError, match="Engine interface"):
        ENGINES.register(object())

"""The garbage collector around plan building and commands: paused while a plan is built
and left as it was; frozen only by a command that is the whole process."""

from __future__ import annotations

import gc

import pytest

from nunasim import scenario as scenario_module
from nunasim.cli.main import main
from nunasim.collectives.builtins import builtin_plan
from nunasim.errors import ConfigError
from nunasim.io.presets import load_preset
from nunasim.scenario import Scenario


@pytest.mark.parametrize("enabled", [True, False])
def test_building_a_plan_leaves_the_collector_as_it_was(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        builtin_plan("allgather:direct:gpus=4:tbs=3")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_building_a_plan_that_fails_leaves_the_collector_on() -> None:
    assert gc.isenabled()
    with pytest.raises(ConfigError, match="threadblocks"):  # raised while building
        builtin_plan("allgather:direct:gpus=4:tbs=10:chunks=1")
    assert gc.isenabled()


def test_a_command_called_from_python_freezes_nothing() -> None:
    frozen = gc.get_freeze_count()
    assert main(["preset", "--help"]) == 0
    assert gc.get_freeze_count() == frozen


def test_simulate_called_from_python_leaves_the_collector_on() -> None:
    assert gc.isenabled()
    assert main(["simulate", "--gpus", "2", "--size", "64kB", "--tbs", "1", "--json"]) == 0
    assert gc.isenabled()


@pytest.mark.parametrize("enabled", [True, False])
def test_placing_and_lowering_pause_the_collector_and_leave_it_as_it_was(
    enabled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    place = scenario_module.place

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        return place(*args, **kwargs)

    monkeypatch.setattr(scenario_module, "place", recording)
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        pod = load_preset("nextgen-4die").fit(2).pod
        run = Scenario(pod, builtin_plan("allgather", gpus=2), 65536, "NAP+NAR").prepare()
        assert seen == [False]
        assert gc.isenabled() is enabled
        assert run.run() is not None
    finally:
        (gc.enable if was else gc.disable)()


def test_a_placement_that_fails_leaves_the_collector_on(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise ConfigError("no room for the threadblocks")

    monkeypatch.setattr(scenario_module, "place", failing)
    assert gc.isenabled()
    pod = load_preset("nextgen-4die").fit(2).pod
    with pytest.raises(ConfigError, match="no room"):
        Scenario(pod, builtin_plan("allgather", gpus=2), 65536, "UA").prepare()
    assert gc.isenabled()

"""The flow engine's screen (``FlowRun.screen``): a run with wider waves, stopped a margin
past a deadline. It is a measured error band, not a bound, so these tests hold it to the
band on runs of every kind: a run passes its screen at its own completion, and fails it at
a deadline more than the margin before it; a search that screens gives the exhaustive
answer."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.flow.backend import FlowEngine
from nunasim.engine.flow.engine import SCREEN_MARGIN, SCREEN_TOLERANCE, TOLERANCE, FlowRun
from nunasim.engine.flow.loop import run_flows
from nunasim.experiments import search_runs, tbsearch
from nunasim.experiments.tbsearch import best_threadblocks, candidate_counts
from nunasim.io.presets import load_preset
from nunasim.scenario import Configuration, Scenario


def _flow_run(collective, gpus, size, config, tbs, domains):
    plan = builtin_plan(collective, gpus=gpus, tbs=tbs)
    preset = load_preset("nextgen-4die")
    scenario = Scenario(preset, plan, size, Configuration.parse(config, domains), engine="flow")
    return FlowRun(scenario.pod, plan, scenario.placement())


def _check_band(run: FlowRun) -> None:
    completion = run.run().completion_ps
    graph, loads, tolerance = run.arguments
    assert tolerance == TOLERANCE < SCREEN_TOLERANCE
    wide = int(run_flows(graph, loads, SCREEN_TOLERANCE, False, -1)[1].max())
    # The wider waves end within the margin: mostly later (a step starts up to a wave
    # late), sometimes a little earlier (a wave reorders the drains).
    assert completion / (1 + SCREEN_MARGIN) <= wide <= completion * (1 + SCREEN_MARGIN)
    assert run.screen(completion) is not None
    # A deadline the run misses by more than the margin fails the screen.
    assert run.screen(int(completion / (1 + SCREEN_MARGIN) ** 2)) is None


@pytest.mark.parametrize(
    ("collective", "gpus", "size", "config", "tbs", "domains"),
    [
        ("allgather", 8, 100_000_000, "NAP+NAR", 1001, 1),
        ("allgather", 8, 100_000_000, "NAP+NAR", 1001, 8),
        ("allreduce", 8, 100_000_000, "UA", 448, 1),
        ("alltoall", 8, 100_000_000, "NAP", 224, 4),
        ("allreduce", 16, 100_000_000, "NAP+NAR", 240, 2),
        ("alltoall", 4, 10_000_000, "NUMA+NAR", 48, 12),
    ],
)
def test_a_run_is_within_the_screen_margin(collective, gpus, size, config, tbs, domains):
    _check_band(_flow_run(collective, gpus, size, config, tbs, domains))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    collective=st.sampled_from(["allgather", "allreduce", "alltoall", "reducescatter"]),
    gpus=st.sampled_from([2, 4, 8]),
    size=st.sampled_from([1_000_000, 10_000_000, 100_000_000]),
    config=st.sampled_from(["UA", "UA+NAR", "NUMA", "NAP", "NAP+NAR", "NAP*+NAR"]),
    per_peer=st.sampled_from([1, 4, 16]),
    domains=st.sampled_from([1, 2, 4, 8]),
)
def test_drawn_runs_are_within_the_screen_margin(collective, gpus, size, config, per_peer, domains):
    if domains > 1 and not Configuration.parse(config).uses_domains:
        domains = 1
    _check_band(_flow_run(collective, gpus, size, config, per_peer * (gpus - 1), domains))


@pytest.mark.parametrize(
    ("collective", "gpus", "size", "config"),
    [
        ("alltoall", 8, 10_000_000, "NAP*+NAR"),
        ("allgather", 8, 10_000_000, "NAP+NAR"),
        ("allreduce", 4, 10_000_000, "NAP"),
    ],
)
def test_a_search_that_screens_gives_the_answer_of_one_that_does_not(
    collective, gpus, size, config, monkeypatch
):
    monkeypatch.setattr(tbsearch, "candidate_counts", lambda n: candidate_counts(n, 48))
    pod = load_preset("nextgen-4die").fit(gpus).pod
    found = {}
    for screening in (True, False):
        if not screening:
            monkeypatch.setattr(FlowEngine, "screens", False)
            monkeypatch.setattr(search_runs, "screened_run", lambda run, screen, ruled_out: run)
        tbsearch._CACHE.clear()
        found[screening] = best_threadblocks(
            pod, collective, size, config, gpus=gpus, engine="flow"
        )
    screened, plain = found[True], found[False]
    assert screened.screened, "the case should screen some candidates out"
    assert plain.screened == ()
    assert (screened.threadblocks, screened.granularity) == (plain.threadblocks, plain.granularity)
    assert screened.result.completion_ps == plain.result.completion_ps
    # What the screen ruled out, the plain search cut or skipped, or it lost to the best.
    lost = {(c, d) for c, d, _ in [*plain.cut, *plain.skipped]}
    best = plain.result.completion_ps
    for count, domains, _ in screened.screened:
        tried = [t for c, d, t in plain.tried if (c, d) == (count, domains)]
        assert (count, domains) in lost or tried[0] > best

"""Which engine a sweep point may take (``experiments/engines.py``), for its cache key: the
bound on a threadblock search's messages holds for every count the search tries."""

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.lowering.admission import flag_messages, packet_lines
from nunasim.experiments.engines import point_engines, search_messages_bound
from nunasim.experiments.sweep import Point
from nunasim.experiments.tbsearch import candidate_counts
from nunasim.io.presets import load_preset
from nunasim.scenario import Configuration

PRESET = load_preset("nextgen-4die")


@settings(max_examples=12, deadline=None)
@given(
    collective=st.sampled_from(["allgather", "allreduce", "alltoall", "allreduce:ring"]),
    gpus=st.sampled_from([2, 3, 5, 8]),
    size=st.integers(1, 50_000_000),
)
def test_no_run_of_a_search_makes_more_messages_than_the_bound(collective, gpus, size):
    bound = search_messages_bound(builtin_plan(collective, gpus=gpus), size, PRESET)
    for count in candidate_counts(gpus):
        plan = builtin_plan(collective, gpus=gpus, tbs=count)
        lines = packet_lines(plan, plan.chunk_bytes(size), PRESET.socket.line_bytes)
        assert lines + flag_messages(plan) <= bound, count


def _names(point):
    return [engine.name for engine in point_engines(point, PRESET)]


def test_a_point_may_run_on_the_flow_engine_as_its_engine_says():
    point = Point("allgather", 100_000, Configuration.parse("UA"), gpus=8, threadblocks=7)
    assert _names(point) == ["packet"]
    assert _names(replace(point, engine="flow")) == ["flow"]
    assert _names(replace(point, size=1_000_000_000)) == ["flow"]
    assert _names(replace(point, size=1_000_000_000, engine="packet")) == ["packet"]


def test_a_search_may_take_every_engine_up_to_the_one_its_largest_run_takes():
    point = Point("allgather", 100_000, Configuration.parse("UA"), gpus=8, threadblocks="auto")
    assert _names(point) == ["packet"]
    assert _names(replace(point, size=1_000_000_000)) == ["packet", "flow"]

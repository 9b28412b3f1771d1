"""The flow engine against the packet engine on the same placed scenarios: completion
within 10 %, and the same ordering of UA and NAP+NAR wherever the packet engine separates
them (docs/engine.md, "The flow engine", lists the measured table and where they differ)."""

import dataclasses
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.flow.engine import simulate_flow
from nunasim.engine.lowering.lower import lower
from nunasim.engine.packet.engine import simulate
from nunasim.io.presets import load_preset
from nunasim.scenario import Scenario

TOLERANCE = 0.10
# Below this relative gap the packet engine does not separate two configurations.
SEPARATED = 0.03


@cache
def _completions(collective: str, gpus: int, tbs: int, size: int, config: str) -> tuple[int, int]:
    plan = builtin_plan(collective, gpus=gpus, tbs=tbs)
    preset = load_preset("nextgen-4die")
    packet = Scenario(preset, plan, size, config, engine="packet")
    placement = packet.placement()
    flow = Scenario(preset, plan, size, config, engine="flow")
    return packet.run(placement).completion_ps, flow.run(placement).completion_ps


def _check(collective: str, gpus: int, tbs: int, size: int) -> None:
    runs = {c: _completions(collective, gpus, tbs, size, c) for c in ("UA", "NAP+NAR")}
    for config, (packet, flow) in runs.items():
        assert abs(flow - packet) <= TOLERANCE * packet, (config, packet, flow)
    (packet_ua, flow_ua), (packet_nap, flow_nap) = runs["UA"], runs["NAP+NAR"]
    if abs(packet_ua - packet_nap) > SEPARATED * min(packet_ua, packet_nap):
        assert (packet_ua > packet_nap) == (flow_ua > flow_nap), runs


FAST = [("allgather", 8, 7, 1_000_000), ("alltoall", 8, 7, 1_000_000)]
# Where the flow engine leaves the 10 % band (docs/engine.md, "Where they differ"): NAP+NAR
# packs one threadblock per peer onto two routers, and the packet engine's bursts of
# reads queue at their shared stack, links and ejection port, which a fluid does not see.
BURSTS = "NAP+NAR's clustered threadblocks queue in bursts the fluid model does not see"
DIFFER = {("allgather", 8, 7, 1_000_000), ("alltoall", 8, 7, 1_000_000)}
# NAP+NAR's 16 MB All-to-All on 16 GPUs (1.19x, docs/engine.md, "16 GPUs"): max-min fairness
# gives every threadblock sharing a bottleneck the same rate, where the packet engine's FIFO
# links let some finish their reads early; a threadblock that copies before it sends then
# finishes its copy 10.9 us later in the flow engine, and its peer waits for its flag.
FAIR = "max-min fair shares keep threadblocks in step where FIFO links let some run ahead"
UNFAIR = {("alltoall", 16, 15, 16_000_000)}


def _marks(case: tuple) -> list:
    if case in DIFFER:
        return [pytest.mark.xfail(reason=BURSTS, strict=False)]
    if case in UNFAIR:
        return [pytest.mark.xfail(reason=FAIR, strict=False)]
    return []


SLOW = [
    pytest.param(*case, marks=_marks(case))
    for case in (
        (collective, gpus, gpus - 1, size)
        for collective in ("allgather", "allreduce", "alltoall")
        for gpus in (8, 16)
        for size in (1_000_000, 4_000_000, 16_000_000, 64_000_000)
        # The packet engine's 16-GPU 64 MB runs and the 8-GPU 64 MB All-Reduce (9.3 M
        # messages) need 9-12 GB of arrays (docs/limits.md): beyond the packet engine's
        # default budget on this 24 GB machine and far beyond what auto gives it (4 M).
        if gpus * size <= 8 * 64_000_000
        and (collective, gpus, size) != ("allreduce", 8, 64_000_000)
    )
]


@pytest.mark.parametrize(("collective", "gpus", "tbs", "size"), FAST)
def test_flow_follows_packet_where_threadblocks_spread(collective, gpus, tbs, size):
    packet, flow = _completions(collective, gpus, tbs, size, "UA")
    assert abs(flow - packet) <= TOLERANCE * packet, (packet, flow)


@pytest.mark.slow
@pytest.mark.parametrize(("collective", "gpus", "tbs", "size"), SLOW)
def test_flow_follows_packet_across_sizes(collective, gpus, tbs, size):
    _check(collective, gpus, tbs, size)


# Counts the threadblock search picks for Fig. 9's 10 MB points (many threadblocks a peer):
# each step's fetches fit in its CU's window, so fetching and delivering overlap
# (``engine/flow/pipeline.py``). Before that rule the flow engine was 13-18 % slow here.
SEARCHED = [
    ("allgather", 8, 112, 10_000_000, "UA"),
    ("allgather", 8, 1008, 10_000_000, "NAP*"),
    ("allreduce", 8, 448, 10_000_000, "NAP+NAR"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("collective", "gpus", "tbs", "size", "config"), SEARCHED)
def test_flow_follows_packet_at_the_counts_the_search_picks(collective, gpus, tbs, size, config):
    packet, flow = _completions(collective, gpus, tbs, size, config)
    assert abs(flow - packet) <= TOLERANCE * packet, (packet, flow)


# Steps longer than their CU's share of the request window run in two phases on the flow
# engine, deliveries only once every fetch has drained, where the packet engine's CU
# starts storing within a fraction of a microsecond (docs/engine.md, "Steps a few windows
# long"): measured 1.129 under UA here (814-line steps), 1.19 at 100 MB, 448 threadblocks.
@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="measured 8.56 us against the packet engine's 7.58: the flow engine's first store "
    "flow starts at 2.71 us, after its step's fetches; the packet engine's first store leaves "
    "at 0.35 us and 27 % of the store data by 1 us",
)
def test_flow_follows_packet_where_steps_are_a_few_windows_long():
    packet, flow = _completions("allgather", 8, 84, 20_000_000, "UA")
    assert abs(flow - packet) <= TOLERANCE * packet, (packet, flow)


@settings(max_examples=5, deadline=None)
@given(collective=st.sampled_from(["allgather", "alltoall"]), window=st.integers(8, 90))
def test_flow_follows_packet_through_a_window_of_any_size(collective, window):
    """45 lines a peer through a window of 8 to 90 slots: one round trip, two (where the
    window's rate alone made it 1.4) or several; the flow engine within 10 % of the packet
    engine, and never earlier than its zero-load path."""
    plan = builtin_plan(collective, gpus=4, tbs=3)
    scenario = Scenario(load_preset("nextgen-4die"), plan, 46_080, "UA", engine="packet")
    placement = scenario.placement()
    socket = dataclasses.replace(scenario.pod.socket, outstanding_requests=window)
    pod = dataclasses.replace(scenario.pod, socket=socket)
    packet = int(simulate(lower(pod, plan, placement, scenario.dtype)).step_end.max())
    flow = simulate_flow(pod, plan, placement, scenario.dtype)
    assert abs(flow.completion_ps - packet) <= TOLERANCE * packet, (packet, flow.completion_ps)
    assert flow.completion_ps >= flow.lower_bound_ps


def test_auto_picks_the_packet_engine_for_what_it_fits_and_the_flow_engine_beyond():
    preset = load_preset("nextgen-4die")
    small = Scenario(preset, builtin_plan("allgather", gpus=4, tbs=3), "64kB", "UA")
    large = Scenario(preset, builtin_plan("allgather", gpus=64, tbs=63), "1GB", "UA")
    assert small.chosen_engine == "packet" and large.chosen_engine == "flow"
    result = small.run()
    assert result.engine == "packet" and result.to_row()["engine"] == "packet"


def test_an_unknown_engine_is_refused():
    from nunasim.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown engine"):
        Scenario(load_preset("nextgen-4die"), builtin_plan("allgather", gpus=2), "1kB", engine="x")

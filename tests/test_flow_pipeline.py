"""Overlapping fetches and deliveries (``engine/flow/pipeline.py``): a step whose fetches its
CU's window holds at once starts its deliveries its lines' mean fetch after its fetches,
and they are no sooner done than its slowest line could be; a longer step keeps its two
phases; a delivery flow's tail is its lines' mean trip. The loop's side is in
test_flow_vs_packet.py."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.engine.flow.demand import Demands
from nunasim.engine.flow.pipeline import overlap

NRES = 6  # resources before the CUs' windows
CUS = 4
WINDOWS = range(NRES, NRES + CUS)
WINDOW = 100
FETCH_TRIP, DELIVER_TRIP = 300_000, 1_500_000  # mean zero-load trips, ps
FETCH_TAIL, DELIVER_TAIL = 450_000, 2_000_000  # slowest lines', ps


def _demands(fetches: list[int], deliveries: list[int]) -> Demands:
    """Group g in step g: ``fetches[g]`` fetches over resource 0 and the CU's window, then
    ``deliveries[g]`` deliveries over resources 0 and 1 and the window."""
    start, res, coef, ops, tails = [0], [], [], [], []
    for f, d in zip(fetches, deliveries, strict=True):
        phases = ((f, FETCH_TRIP, FETCH_TAIL, [0]), (d, DELIVER_TRIP, DELIVER_TAIL, [0, 1]))
        for n, trip, tail, links in phases:
            ops.append(n)
            tails.append(tail)
            if n:
                res += [*links, NRES]
                coef += [500.0 + 10 * len(res) for _ in links] + [trip / WINDOW]
            start.append(len(res))
    lines = np.array([n for pair in zip(fetches, deliveries, strict=True) for n in pair])
    trips = np.array([t for _ in fetches for t in (FETCH_TRIP, DELIVER_TRIP)])
    groups = len(fetches)
    return Demands(
        flow_step=np.repeat(np.arange(groups), 2),
        flow_ops=np.array(ops, dtype=np.int64),
        flow_tail_ps=np.array(tails, dtype=np.int64),
        entry_start=np.array(start, dtype=np.int64),
        entry_res=np.array(res, dtype=np.int64),
        entry_coef=np.array(coef),
        res_flits=np.zeros(NRES, dtype=np.int64),
        access_lines=lines,
        access_data=256 * lines,
        access_route_ps=lines * trips,
        access_route_max_ps=np.array([FETCH_TAIL, DELIVER_TAIL] * groups),
        landed=np.zeros(0, dtype=np.int64),
    )


def _overlap(demands: Demands, tb_cu: list[int]):
    groups = len(demands.flow_ops) // 2
    fetches = np.tile([True, False], groups)
    group = np.repeat(np.arange(groups), 2)
    floor = np.zeros(2 * groups, dtype=np.int64)
    return overlap(
        demands, fetches, group, floor, np.arange(groups), np.array(tb_cu), WINDOWS, WINDOW
    )


def test_a_step_the_window_holds_overlaps_its_fetches_and_deliveries():
    demands = _demands([80], [40])
    flows = _overlap(demands, [0])
    assert flows.step_delay_ps[0] == FETCH_TRIP  # the first lines back
    # the delivery's last line takes its lines' mean trip, and no sooner than the slowest
    # fetch and then the slowest delivery after the step began
    assert flows.demands.flow_tail_ps[1] == DELIVER_TRIP
    assert flows.floor_ps[1] == FETCH_TAIL + DELIVER_TAIL - FETCH_TRIP
    assert flows.demands.flow_tail_ps[0] == FETCH_TAIL
    np.testing.assert_array_equal(flows.demands.flow_ops, demands.flow_ops)


def test_a_step_longer_than_the_window_keeps_two_phases():
    flows = _overlap(_demands([120], [40]), [0])
    assert flows.step_delay_ps[0] == 0
    assert flows.floor_ps[1] == 0
    assert flows.demands.flow_tail_ps[1] == DELIVER_TRIP


def test_threadblocks_on_one_cu_share_its_window():
    demands = _demands([80, 80], [40, 40])
    assert list(_overlap(demands, [0, 1]).step_delay_ps) == [FETCH_TRIP, FETCH_TRIP]
    assert list(_overlap(demands, [2, 2]).step_delay_ps) == [0, 0]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 300), st.integers(0, 300)), min_size=1, max_size=6),
    st.lists(st.integers(0, CUS - 1), min_size=6, max_size=6),
)
def test_only_steps_with_fetches_and_deliveries_the_window_holds_overlap(groups, cus):
    cus = cus[: len(groups)]
    flows = _overlap(_demands([f for f, _ in groups], [d for _, d in groups]), cus)
    for g, (f, d) in enumerate(groups):
        share = WINDOW / cus.count(cus[g])
        assert (flows.step_delay_ps[g] > 0) == (f > 0 and d > 0 and f <= share)

"""The request window's floor on a delivery flow (``engine/flow/rounds.py``): ``n`` requests
of one round trip through ``w`` slots leave in ``ceil(n / w)`` rounds."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.engine.flow.demand import Demands
from nunasim.engine.flow.rounds import window_floor_ps

NRES = 10  # resources before the CUs' windows
CUS = 3


def _one_delivery(lines: int, trip_ps: int, tail_ps: int, window: int, cu: int) -> Demands:
    """Group 0: an empty fetch flow and a delivery flow of ``lines`` requests, each holding
    a slot of CU ``cu`` for ``trip_ps``, besides a link it crosses."""
    empty = np.zeros(0, dtype=np.int64)
    return Demands(
        flow_step=np.zeros(2, dtype=np.int64),
        flow_ops=np.array([0, lines]),
        flow_tail_ps=np.array([0, tail_ps]),
        entry_start=np.array([0, 0, 2]),
        entry_res=np.array([3, NRES + cu]),
        entry_coef=np.array([307.0, trip_ps / window]),
        res_flits=empty,
        access_lines=np.array([lines]),
        access_data=np.array([256 * lines]),
        access_route_ps=empty,
        access_route_max_ps=empty,
        landed=empty,
    )


@settings(max_examples=50, deadline=None)
@given(
    lines=st.integers(1, 5000),
    window=st.integers(1, 1000),
    trip_ps=st.integers(1, 2_000_000),
    extra_ps=st.integers(0, 500_000),
    cu=st.integers(0, CUS - 1),
)
def test_a_delivery_waits_whole_round_trips_for_its_slots(lines, window, trip_ps, extra_ps, cu):
    tail_ps = trip_ps + extra_ps  # the slowest line's trip, at least the mean one
    demands = _one_delivery(lines, trip_ps, tail_ps, window, cu)
    floor = window_floor_ps(
        demands, np.array([False]), np.array([0]), range(NRES, NRES + CUS), window
    )
    rounds = -(-lines // window)
    assert floor[0] == 0  # a fetch flow has none
    assert abs(floor[1] - (tail_ps + (rounds - 1) * trip_ps)) <= 1
    # one round when the window holds every line: the zero-load tail alone
    if lines <= window:
        assert floor[1] == tail_ps

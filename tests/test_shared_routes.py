"""Messages that travel the same route share one copy of it in the packet core's table
(``nunasim.engine.packet.shared_routes``): every message reads exactly its own entries,
each distinct route is kept once, hashes that collide never merge two routes, and a run
with shared routes is the run without them, to the bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.kernel.rows import ROUTE_DTYPE, ROUTE_FIELDS
from nunasim.engine.lowering.lower import lower
from nunasim.engine.packet import shared_routes
from nunasim.engine.packet.engine import core_inputs, simulate
from nunasim.engine.packet.shared_routes import share_routes
from nunasim.io.presets import load_preset
from nunasim.scenario import Scenario


def _table(routes: list[list[tuple[int, int]]]) -> tuple[np.ndarray, np.ndarray]:
    start = np.zeros(len(routes) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in routes], out=start[1:])
    table = np.zeros((int(start[-1]), ROUTE_FIELDS), dtype=ROUTE_DTYPE)
    for m, route in enumerate(routes):
        for j, entry in enumerate(route):
            table[start[m] + j] = entry
    return start, table


def _own(start: np.ndarray, table: np.ndarray, m: int) -> list[tuple[int, int]]:
    return [tuple(int(x) for x in row) for row in table[start[m] : start[m + 1]]]


# Routes drawn from a few short ones, so that most repeat; entries include large resource
# ids and delays, which the hash packs into one word.
_ENTRY = st.tuples(st.sampled_from([0, 1, 7, 2**31 - 1]), st.sampled_from([0, 3, 2**31 - 1]))
_ROUTES = st.lists(st.lists(_ENTRY, max_size=4), min_size=1, max_size=6)


@given(pool=_ROUTES, picks=st.lists(st.integers(0, 5), min_size=1, max_size=40))
@settings(max_examples=150, deadline=None)
def test_every_message_reads_its_own_route_and_each_route_is_kept_once(pool, picks):
    routes = [pool[i % len(pool)] for i in picks]
    start, table = _table(routes)
    shared = share_routes(start, table, at_most=1.0)
    assert shared is not None
    for m in range(len(routes)):
        assert _own(shared.start, shared.table, int(shared.msg_route[m])) == _own(start, table, m)
    kept = [tuple(_own(shared.start, shared.table, r)) for r in range(len(shared.start) - 1)]
    assert len(kept) == len(set(kept)) == len({tuple(r) for r in routes})
    # numbered in order of each route's first message
    numbers = list(shared.msg_route)
    assert [numbers.index(r) for r in range(len(kept))] == sorted(set(map(numbers.index, numbers)))


def test_routes_whose_hashes_collide_stay_apart(monkeypatch):
    """With every hash the same (the mixing constant 0, the finder run uncompiled), only
    the entry-by-entry comparison tells routes apart, and it does."""
    monkeypatch.setattr(shared_routes, "_MIX", 0)
    routes = [[(1, 0), (2, 0)], [(1, 0), (2, 5)], [(1, 0), (2, 0)], [(2, 0), (1, 0)], [], [(1, 0)]]
    routes += [[], [(2, 0), (1, 0)]]
    start, table = _table(routes)
    msg_route, first = shared_routes._distinct.py_func(start, table, 1.0)
    assert list(msg_route) == [0, 1, 0, 2, 3, 4, 3, 2]
    assert list(first) == [0, 1, 3, 4, 5]


def test_routes_that_mostly_differ_are_not_shared():
    routes = [[(m, 0), (m + 1, 0)] for m in range(10)] + [[(0, 0), (1, 0)]]
    start, table = _table(routes)
    assert share_routes(start, table) is None  # 20 of 22 entries distinct
    assert share_routes(start[:1], table[:0]) is None  # no message


@pytest.mark.parametrize(
    ("preset", "collective", "gpus", "size", "config"),
    [
        ("nextgen-4die", "allgather", 4, "300kB", "NAP+NAR"),
        ("nextgen-4die", "allreduce", 4, "200kB", "NAP*+NAR"),
        ("nextgen-4die-vc", "alltoall", 4, "200kB", "NAP+NAR"),
    ],
)
def test_a_run_with_shared_routes_is_the_run_without(
    monkeypatch, preset, collective, gpus, size, config
):
    pod = load_preset(preset).fit(gpus).pod
    scenario = Scenario(pod, builtin_plan(collective, gpus=gpus), size, config, "auto")
    lowered = lower(pod, scenario.plan, scenario.placement())
    traces = []
    for share in (1.0, 0.0):
        monkeypatch.setattr(shared_routes, "SHARE_AT_MOST", share)
        inputs = core_inputs(lowered)
        traces.append(simulate(lowered))
        distinct = len(inputs.route_start) - 1
        assert (distinct < lowered.messages) == (share > 0), distinct
    shared, own = traces
    assert shared.events == own.events
    for name in ("step_begin", "step_end", "msg_issue", "msg_port_in", "msg_dst_in", "msg_done"):
        assert (getattr(shared, name) == getattr(own, name)).all(), name
    assert (shared.res_flits == own.res_flits).all()
    assert (shared.res_wait_max == own.res_wait_max).all()

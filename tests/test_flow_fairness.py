"""The flow engine's rate computation and waves: the compiled code against the plain
references it replaced (bit for bit), and the max-min fairness of the rates."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.engine.flow.waves import leave
from reference_fairness import (
    compiled_rates,
    drawn_flows,
    drawn_rows,
    reference_rates,
    reference_scan,
)


@st.composite
def flow_sets(draw):
    """Flows with their demands (CSR over resources) and an active subset in some order."""
    nres = draw(st.integers(1, 12))
    nflows = draw(st.integers(1, 30))
    rows = drawn_rows(draw, nres, nflows, 5)
    return drawn_flows(draw, rows, nres)


@settings(max_examples=100, deadline=None)
@given(flow_sets())
def test_rates_equal_the_reference_bit_for_bit(flows):
    active, start, res, coef, nres = flows
    rate, bound = compiled_rates(*flows)
    want_rate, want_bound = reference_rates(list(active), start, res, coef, nres)
    for f in active:
        assert rate[f] == want_rate[f]
        assert bound[f] == want_bound[f]


@settings(max_examples=100, deadline=None)
@given(flow_sets())
def test_rates_are_max_min_fair(flows):
    """No resource is over-full, and every flow's bottleneck is full and gives no flow a
    higher rate than it: raising the flow would take from one no better off."""
    active, start, res, coef, nres = flows
    rate, bound = compiled_rates(*flows)
    busy = np.zeros(nres)
    on = [[] for _ in range(nres)]
    for f in active:
        assert rate[f] > 0
        for x in range(start[f], start[f + 1]):
            busy[res[x]] += coef[x] * rate[f]
            on[res[x]].append(f)
    assert np.all(busy <= 1 + 1e-9)
    for f in active:
        e = bound[f]
        assert e in res[start[f] : start[f + 1]]
        assert busy[e] >= 1 - 1e-9
        assert all(rate[g] <= rate[f] * (1 + 1e-9) for g in on[e])


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(st.permutations(range(n)), st.data())))
def test_a_wave_leaves_as_the_scan_did(case):
    active, data = case
    leaving = set(data.draw(st.lists(st.sampled_from(active), unique=True)))
    want_order, want_active = reference_scan(active, leaving)
    nflows = len(active)
    arranged = np.array(active, dtype=np.int64)
    position = np.zeros(nflows, dtype=np.int64)
    position[arranged] = np.arange(nflows)
    marked = np.zeros(nflows, dtype=np.bool_)
    wave = np.empty(nflows, dtype=np.int64)
    for k, f in enumerate(leaving):
        marked[f] = True
        wave[k] = position[f]
    order = np.empty(nflows, dtype=np.int64)
    left = leave(arranged, nflows, position, marked, wave, len(leaving), order)
    assert list(order[: len(leaving)]) == want_order
    assert list(arranged[:left]) == want_active
    assert all(position[f] == j for j, f in enumerate(want_active))
    assert not marked.any()

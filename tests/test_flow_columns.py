"""Resources with the same column of demands, kept once (``flow.columns``): the same rates
and the same freezing resources, bit for bit, as with every copy in."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.engine.flow import columns
from nunasim.engine.flow.columns import distinct_entries
from nunasim.engine.flow.fairness import by_resource
from reference_fairness import compiled_rates, drawn_flows, drawn_rows


@st.composite
def flows_with_copies(draw):
    """Flows with their demands (CSR over resources), some resources' columns repeated on
    other resources (at any place in each flow's entries), ids shuffled so that a copy is
    as often the smaller id as the larger; and an active subset in some order."""
    nres = draw(st.integers(1, 8))
    nflows = draw(st.integers(1, 20))
    rows = drawn_rows(draw, nres, nflows, 4)
    for copied in draw(st.lists(st.integers(0, nres - 1), max_size=4)):
        new = nres
        nres += 1
        for row in rows:
            share = [c for e, c in row if e == copied]
            if share:
                row.insert(draw(st.integers(0, len(row))), (new, share[0]))
    rename = draw(st.permutations(range(nres)))
    return drawn_flows(draw, [[(rename[e], c) for e, c in row] for row in rows], nres)


def _columns(start, res, coef, nres):
    columns = [[] for _ in range(nres)]
    for f in range(len(start) - 1):
        for x in range(start[f], start[f + 1]):
            columns[res[x]].append((f, coef[x : x + 1].view(np.int64)[0]))
    return columns


@settings(max_examples=200, deadline=None)
@given(flows_with_copies())
def test_rates_and_bottlenecks_are_the_same_bit_for_bit(flows):
    active, start, res, coef, nres = flows
    rate, bound = compiled_rates(*flows)
    kept = distinct_entries(start, res, coef, nres)
    kept_rate, kept_bound = compiled_rates(active, *kept, nres)
    assert rate[active].tobytes() == kept_rate[active].tobytes()
    assert np.array_equal(bound[active], kept_bound[active])


@settings(max_examples=200, deadline=None)
@given(flows_with_copies())
def test_exactly_the_repeats_of_a_smaller_resource_go(flows):
    _, start, res, coef, nres = flows
    cols = _columns(start, res, coef, nres)
    repeat = [bool(cols[e]) and cols[e] in cols[:e] for e in range(nres)]
    kept_start, kept_res, kept_coef = distinct_entries(start, res, coef, nres)
    for f in range(len(start) - 1):
        row = slice(start[f], start[f + 1])
        want = [(e, c) for e, c in zip(res[row], coef[row], strict=True) if not repeat[e]]
        got = slice(kept_start[f], kept_start[f + 1])  # in the flow's own order
        assert list(zip(kept_res[got], kept_coef[got], strict=True)) == want


def test_a_share_one_bit_apart_is_another_column():
    share = 0.1
    nudged = np.nextafter(share, 1.0)
    start = np.array([0, 2, 4], dtype=np.int64)
    res = np.array([0, 1, 0, 1], dtype=np.int64)
    same = np.array([share, share, 0.2, 0.2])
    apart = np.array([share, nudged, 0.2, 0.2])
    assert list(distinct_entries(start, res, same, 2)[1]) == [0, 0]
    assert list(distinct_entries(start, res, apart, 2)[1]) == [0, 1, 0, 1]


def test_columns_whose_digests_collide_are_compared_in_full():
    """With every digest forced equal, only exact copies count as copies."""
    start = np.array([0, 3, 6], dtype=np.int64)
    res = np.array([0, 1, 2, 0, 1, 2], dtype=np.int64)
    coef = np.array([0.1, 0.1, 0.1, 0.2, 0.3, 0.2])  # 2 repeats 0; 1 differs in flow 1
    bits = coef.view(np.int64)
    col_flow, col_entry = np.empty(6, dtype=np.int32), np.empty(6, dtype=np.int32)
    col_start = by_resource(start, res, 3, col_flow, col_entry)
    count = np.diff(col_start)
    collided = np.zeros(3, dtype=np.uint64)
    order = np.arange(3)
    copy = columns._copies(order, count, collided, col_start, col_flow, col_entry, bits)
    assert list(copy) == [False, False, True]

"""The shared kernel's constants agree with every layer that names them."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.engine.kernel import heap, kinds, rows
from nunasim.engine.lowering import messages, resources
from nunasim.engine.packet import events as ev
from nunasim.io.presets import load_preset
from nunasim.mapping import accesses


def test_message_kinds_are_the_access_kinds_and_a_flag():
    assert (kinds.READ, kinds.LOAD, kinds.WRITE, kinds.STORE) == (
        accesses.READ,
        accesses.LOAD,
        accesses.WRITE,
        accesses.STORE,
    )
    assert len(set(kinds.MESSAGE_KINDS)) == len(kinds.MESSAGE_KINDS)
    assert kinds.FLAG not in (accesses.READ, accesses.LOAD, accesses.WRITE, accesses.STORE)
    assert messages.FLAG == kinds.FLAG and messages.STORE == kinds.STORE


def test_resource_kinds_number_the_resources_and_name_the_tables():
    assert tuple(range(len(kinds.KINDS))) == kinds.KINDS
    assert len(kinds.RESOURCE_NAMES) == len(kinds.KINDS) == len(set(kinds.RESOURCE_NAMES))
    pod = load_preset("nextgen-4die").pod.with_sockets(2)
    numbering = resources.resource_numbering(pod, 2)
    built = resources.build_resources(pod, numbering)
    # The flat numbering runs kind by kind in KINDS order.
    first = numbering.first
    for kind in kinds.KINDS:
        assert (built.kind[first[kind] : first[kind + 1]] == kind).all()


def test_row_columns_are_distinct_and_fit_their_rows():
    resource_columns = [
        rows.FREE_AT,
        rows.OCC,
        rows.LAT,
        rows.KIND,
        rows.FLITS,
        rows.WAIT_MAX,
        rows.VCS,
        rows.CREDIT_PS,
        rows.BUF_FLITS,
        rows.FLIT_PS,
        rows.TAIL_CREDIT,
        rows.HEAD_PS,
    ]
    assert sorted(resource_columns) == list(range(rows.RES_FIELDS))
    assert sorted([rows.ROUTE_RES, rows.ROUTE_POST]) == list(range(rows.ROUTE_FIELDS))
    assert np.iinfo(rows.ROUTE_DTYPE).max == rows.ROUTE_MAX


def test_the_event_kinds_fit_their_bits_and_the_keys_their_time():
    events = [ev.EV_ROUTE, ev.EV_ACK, ev.EV_COMPUTE, ev.EV_STEP, ev.EV_CREDIT]
    events += [ev.EV_OUTPUT, ev.EV_RUN]
    assert len(set(events)) == len(events) and max(events) <= ev.EV_MASK
    assert heap.TIME_LIMIT_PS << heap.SEQ_BITS == 1 << 63


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 2), st.integers(-50, 50)), max_size=60))
def test_scatter_at_is_ufunc_at_and_writes_through(entries):
    """``scatter_at`` adds (and maximises) exactly as ``ufunc.at`` does, into the array it is
    given, for one index array and for a tuple of them, on arrays a compiled kernel made as
    on numpy's own."""
    from nunasim.engine.analytic.bound import _route_sums
    from nunasim.jit import scatter_at

    rows = np.array([e[0] for e in entries], dtype=np.int64)
    cols = np.array([e[1] for e in entries], dtype=np.int64)
    values = np.array([e[2] for e in entries], dtype=np.int64)
    # a kernel's own arrays: its route sums of one-entry routes give back ``values``
    made, _ = _route_sums(
        np.zeros(len(values), dtype=np.int64),
        np.arange(len(values) + 1, dtype=np.int64),
        values,
        np.zeros(1, dtype=np.int64),
        np.zeros(len(values), dtype=np.int64),
        np.zeros(len(values), dtype=np.bool_),
    )
    assert np.array_equal(made, values)
    for ufunc in (np.add, np.maximum):
        expected = np.zeros(10, dtype=np.int64)
        ufunc.at(expected, rows, values)
        got = np.zeros(10, dtype=np.int64)
        scatter_at(ufunc, got, rows, made)
        assert np.array_equal(got, expected)
        grid, expected_grid = np.zeros((10, 3), dtype=np.int64), np.zeros((10, 3), dtype=np.int64)
        ufunc.at(expected_grid, (rows, cols), values)
        scatter_at(ufunc, grid, (rows, cols), made)
        assert np.array_equal(grid, expected_grid)

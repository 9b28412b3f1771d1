"""The packet core's event queue with runs (``nunasim.engine.packet.runs``) hands out
exactly the events a plain heap of every event would, in the same order: a differential
test over random schedules, sequence-number wraps and out-of-order pushes included."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.kernel.heap import SEQ_BITS, event_key, pop_event, push_key
from nunasim.engine.lowering.lower import lower
from nunasim.engine.noc.run import run_noc
from nunasim.engine.packet import state
from nunasim.engine.packet.engine import simulate
from nunasim.engine.packet.events import EV_ACK, EV_BITS, EV_ROUTE
from nunasim.engine.packet.runs import CURSOR_FIELDS, pop_next, push_run, run_classes
from nunasim.io.presets import load_preset
from nunasim.scenario import Scenario


def _python(function):
    return getattr(function, "py_func", function)


# The helpers as plain Python: the loop inlines them; here they run uncompiled.
push_run_ = _python(push_run)
pop_next_ = _python(pop_next)
push_key_ = _python(push_key)
pop_event_ = _python(pop_event)


@st.composite
def schedules(draw):
    """Runs with a fixed delay each, and a list of operations: a pop, or a push of a new
    message's event into a run at the clock plus the run's delay (in order) or plus any
    delay (possibly out of the run's order)."""
    runs = draw(st.integers(1, 6))
    delays = draw(st.lists(st.integers(0, 50), min_size=runs, max_size=runs))
    ops = draw(
        st.lists(
            st.tuples(
                st.sampled_from(("push", "push", "pop", "odd")),
                st.integers(0, runs - 1),
                st.integers(0, 60),
            ),
            min_size=1,
            max_size=200,
        )
    )
    # near the wrap of the sequence numbers, sometimes
    first_seq = draw(st.sampled_from((0, (1 << SEQ_BITS) - 5)))
    return delays, ops, first_seq


@settings(max_examples=150, deadline=None)
@given(schedules())
def test_runs_pop_what_a_plain_heap_pops(schedule):
    delays, ops, seq = schedule
    nruns = len(delays)
    kinds = np.array([EV_ACK if r % 2 else EV_ROUTE for r in range(nruns)], dtype=np.int64)
    size = len(ops) + 1
    hk, hp = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
    rk, rp = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
    cursor = np.zeros((size, CURSOR_FIELDS), dtype=np.int64)
    runs = (
        np.full(nruns, -1, dtype=np.int64),
        np.full(nruns, -1, dtype=np.int64),
        np.zeros(nruns, dtype=np.int64),
        cursor,
        kinds,
    )
    n = ref = 0
    now = 0
    message = 0
    for op, r, delay in ops:
        if op == "pop":
            if n == 0:
                assert ref == 0
                continue
            t, payload, n = pop_next_(hk, hp, n, runs)
            t_ref, payload_ref, ref = pop_event_(rk, rp, ref)
            assert (t, payload) == (t_ref, payload_ref)
            now = t
            continue
        t = now + (delays[r] if op == "push" else delay)
        n = push_run_(hk, hp, n, t, seq, message, r, runs)
        key = event_key(t, seq)
        ref = push_key_(rk, rp, ref, key, (message << EV_BITS) | int(kinds[r]))
        seq += 1
        message += 1
    while ref > 0:  # everything left comes out in the same order too
        assert n > 0
        t, payload, n = pop_next_(hk, hp, n, runs)
        t_ref, payload_ref, ref = pop_event_(rk, rp, ref)
        assert (t, payload) == (t_ref, payload_ref)
    assert n == 0


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=120), st.integers(0, 3))
def test_the_heap_pops_in_key_order(keys, unused):
    """Whatever the heap's shape (full sets of four children or a last, partial one), every
    pop hands out the smallest key left, with the payload pushed with it."""
    size = len(keys) + unused
    hk, hp = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
    n = 0
    for i, key in enumerate(keys):
        n = push_key_(hk, hp, n, event_key(key, i), i)
    popped = []
    while n:
        t, payload, n = pop_event_(hk, hp, n)
        popped.append((t, payload))
    assert popped == sorted((key, i) for i, key in enumerate(keys))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 50), min_size=1, max_size=60),
    st.sampled_from((0, 1 << 30)),
    st.integers(0, 500),
)
def test_run_classes_rank_each_delay_among_the_distinct_ones(delays, spread, resources):
    """Each message's issue run is the resources' count plus its delay's rank among the
    distinct delays, over a small range (a table) and a wide one (a sort) alike."""
    pre = np.array(delays, dtype=np.int64) * (1 + spread)
    classes = run_classes(resources, pre, np.zeros(len(pre), dtype=np.int64))
    distinct, rank = np.unique(pre, return_inverse=True)
    assert classes.issue_run.tolist() == (resources + rank.ravel()).tolist()
    assert classes.ack_run.tolist() == [resources + len(distinct)] * len(pre)
    assert len(classes.run_kind) == resources + len(distinct) + 1


def test_run_classes_number_resources_then_issue_then_acknowledgement_delays():
    pre = np.array([7, 3, 7, 9], dtype=np.int64)
    ack = np.array([0, 5, 5, 0], dtype=np.int64)
    classes = run_classes(10, pre, ack)
    assert classes.issue_run.tolist() == [11, 10, 11, 12]  # delays 3, 7, 9 after 10 resources
    assert classes.ack_run.tolist() == [13, 14, 14, 13]  # then delays 0 and 5
    assert classes.run_kind.tolist() == [EV_ROUTE] * 13 + [EV_ACK] * 2


@pytest.mark.parametrize(
    ("preset", "collective", "gpus", "size", "config"),
    [
        ("nextgen-4die", "allgather", 4, "300kB", "UA"),
        ("nextgen-4die", "allreduce", 4, "200kB", "NAP+NAR"),
        ("nextgen-4die-vc", "alltoall", 4, "200kB", "UA+NAR"),
    ],
)
def test_a_run_with_runs_is_the_run_without(monkeypatch, preset, collective, gpus, size, config):
    """Runs on (from the first message) and off give the same trace and event count."""
    pod = load_preset(preset).fit(gpus).pod
    scenario = Scenario(pod, builtin_plan(collective, gpus=gpus), size, config, "auto")
    lowered = lower(pod, scenario.plan, scenario.placement())
    traces = []
    for threshold in (0, 1 << 62):
        monkeypatch.setattr(state, "RUNS_FROM_MESSAGES", threshold)
        traces.append(simulate(lowered))
    on, off = traces
    assert on.events == off.events
    for name in ("step_begin", "step_end", "msg_issue", "msg_done", "msg_stack_in"):
        assert (getattr(on, name) == getattr(off, name)).all(), name
    assert (on.res_flits == off.res_flits).all() and (on.res_wait_max == off.res_wait_max).all()


def test_noc_credit_runs_with_runs_are_the_runs_without(monkeypatch):
    socket = load_preset("mesh8x8-vc").pod.socket
    results = []
    for threshold in (0, 1 << 62):
        monkeypatch.setattr(state, "RUNS_FROM_MESSAGES", threshold)
        noc = run_noc(socket, "uniform", 0.45, 2, cycles=600, warmup=100, seed=2)
        results.append((noc.events, noc.head_ps.tolist()))
    assert results[0] == results[1]

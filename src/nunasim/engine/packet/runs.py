"""The packet core's event queue: the event heap, and beside it runs of events that fall
due in the order they were scheduled.

Most of the core's events are a message's, due a fixed delay after something the loop does
in time order: a message leaving a FIFO resource is next due its departure plus that
resource's latency and the route's fixed delay after it; a message issued at ``t`` is due
``t`` plus its pure delay before its first resource; an acknowledgement ``t`` plus the
reverse trip. A resource serves its flits one after another, so the events it schedules
fall due in the order it schedules them, and so do those of one delay scheduled as the
clock advances. Each such *run* of events is a list linked through its messages (a message
has at most one event pending): a message's row of ``cursor`` (``nunasim.engine.packet.
state``) holds, beside its route cursor, the next message of its run and that message's
event key, so the event that reads a message's cursor finds its run's next event there
too. The heap holds only the first event of each run, under that event's own key; popping
it hands out that event and puts the run's next one in its place, in one pass down the
heap.

The loop handles exactly the events it would handle with every event on the heap, in the
same order: every run is in key order (an event whose key would come before its run's last
is pushed on the heap by itself instead, which only a sequence number's wrap past
``2**SEQ_BITS`` at one picosecond can cause), and the heap holds each run's first, so its
root is the smallest key of all. What changes is the heap's size: a 32-GPU 10 MB
All-Gather keeps 1.2 million events pending, a heap far beyond the caches, where there are
some 40,000 resources and a few hundred distinct delays.

Run ``r`` is resource ``r`` for ``r < resources``, then one run per distinct pure delay
before a first resource (issues and flags), then one per distinct acknowledgement delay.

Inlined into the compiled loop (``nunasim.engine.packet.core``); after a change here clear
numba's caches (see ``nunasim.engine.packet.events``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.engine.jit import jit, unchecked
from nunasim.engine.kernel.heap import SEQ_BITS, event_key, push_key, sift_down
from nunasim.engine.packet.events import EV_ACK, EV_BITS, EV_MASK, EV_ROUTE, EV_RUN

# Indexing without numba's negative-index wrap-around, for positions the loop computes
# (``nunasim.jit.unchecked``; docs/engine.md, "Indices without wrap-around").
_load, _store, _load2, _store2 = unchecked()

# the columns of a message's row of the loop's ``cursor``: its next route entry, its route's
# end, the next message of the run its event is in, and that message's event key
POS = 0
END = 1
NEXT = 2
NEXT_KEY = 3
CURSOR_FIELDS = 4

# Runs are kept from this many messages on; below it every push goes on the heap, as
# without runs. They pay on 12 of 14 small and mid-sized runs measured, from a 2-GPU 1 MB
# All-Gather up (the loop 0.89-1.28 times as fast, 1.1 in the median;
# docs/engine-measured.md, "The event queue, measured"), and on every large one, so they
# are on from the first message: the threshold remains for the tests that compare a run
# with runs against the same run without.
RUNS_FROM_MESSAGES = 0
# delays spanning at most this many picoseconds are numbered through a table of the span
DENSE_SPAN = 1 << 24
# ``run_tail`` of a run with no event in it, and of a run that takes none (runs off):
# every push into a closed run goes on the heap by itself
EMPTY = -1
CLOSED = -2


class RunClasses(NamedTuple):
    """Which run a message's events join: ``issue_run[m]`` after its issue (its pure delay
    before its first resource), ``ack_run[m]`` after its route ends (its acknowledgement's
    delay), each resource's own run after it; ``run_kind[r]`` the kind of run r's events."""

    issue_run: np.ndarray
    ack_run: np.ndarray
    run_kind: np.ndarray


def run_classes(resources: int, msg_pre_ps: np.ndarray, msg_ack_ps: np.ndarray) -> RunClasses:
    """The runs of a core run's messages: one per resource, one per distinct pure delay
    before a first resource, one per distinct acknowledgement delay."""
    pre_count, issue_run = _classes(msg_pre_ps, resources)
    routed = resources + pre_count
    ack_count, ack_run = _classes(msg_ack_ps, routed)
    kinds = np.full(routed + ack_count, EV_ACK, dtype=np.int64)
    kinds[:routed] = EV_ROUTE
    return RunClasses(issue_run=issue_run, ack_run=ack_run, run_kind=kinds)


def _classes(values: np.ndarray, first: int) -> tuple[int, np.ndarray]:
    """How many distinct values, and each value's class: ``first`` plus its rank among
    them; by a table over the values' range where it is small (delays are, and a sort of
    millions is not cheap). One array per value is made: with millions of messages the
    copies, not the arithmetic, are the cost."""
    if len(values) == 0:
        return 0, np.zeros(0, dtype=np.int64)
    low = int(values.min())
    span = int(values.max()) - low + 1
    if span == 1:  # one delay for all (a NoC run's)
        return 1, np.full(len(values), first, dtype=np.int64)
    if span > DENSE_SPAN:
        distinct, rank = np.unique(values, return_inverse=True)
        rank = rank.ravel().astype(np.int64, copy=False)
        rank += first
        return len(distinct), rank
    offset = np.subtract(values, low, dtype=np.int64)
    present = np.zeros(span, dtype=np.int64)
    present[offset] = 1
    table = np.cumsum(present)
    table += first - 1
    np.take(table, offset, out=offset, mode="clip")  # in place: offsets are in range
    return int(present.sum()), offset


@jit(inline=True)
def start_route(m, cursor, msg_route, route_start):
    """Point message ``m``'s cursor at the first entry of its route, as it is issued: the
    cursor is not filled in before the run, so that its pages are first touched by the
    messages that use them (a NoC run's 1.5 M rows: some 30 ms less)."""
    r = _load(msg_route, m)
    _store2(cursor, m, POS, _load(route_start, r))
    _store2(cursor, m, END, _load(route_start, r + 1))


@jit(inline=True)
def push_run(hk, hp, n, t, seq, m, r, runs):
    """Schedule message ``m``'s event at ``t`` (the ``seq``-th scheduled) in run ``r``: at
    the end of the run, or on the heap as the run's first, or on the heap by itself (out of
    the run's order, or the run is CLOSED). ``runs``: (run_head, run_tail, run_last,
    cursor, run_kind), where ``run_last[r]`` is the key of run r's last event."""
    run_head, run_tail, run_last, cursor, run_kind = runs
    key = event_key(t, seq)
    tail = _load(run_tail, r)
    if tail >= 0 and key > _load(run_last, r):  # in order: it joins the run
        _store2(cursor, tail, NEXT, m)
        _store2(cursor, tail, NEXT_KEY, key)
        _store2(cursor, m, NEXT, -1)
        _store(run_tail, r, m)
        _store(run_last, r, key)
        return n
    if tail == EMPTY:
        _store(run_head, r, m)
        _store(run_tail, r, m)
        _store(run_last, r, key)
        _store2(cursor, m, NEXT, -1)
        payload = (r << EV_BITS) | EV_RUN
    else:
        payload = (m << EV_BITS) | _load(run_kind, r)
    return push_key(hk, hp, n, key, payload)


@jit(inline=True)
def pop_next(hk, hp, n, runs):
    """Remove the event of the smallest key: (its time, its payload, events on the heap).
    One pass down the heap either way: the root's run's next event, or the heap's last
    item, moves down from the root."""
    run_head, run_tail, _, cursor, run_kind = runs
    key = _load(hk, 0)
    payload = _load(hp, 0)
    if payload & EV_MASK == EV_RUN:
        r = payload >> EV_BITS
        m = _load(run_head, r)
        after = _load2(cursor, m, NEXT)
        if after >= 0:
            _store(run_head, r, after)
            down_key = _load2(cursor, m, NEXT_KEY)
            down_payload = payload
        else:  # the run is empty now
            _store(run_head, r, -1)
            _store(run_tail, r, EMPTY)
            n -= 1
            down_key = _load(hk, n)
            down_payload = _load(hp, n)
        payload = (m << EV_BITS) | _load(run_kind, r)
    else:
        n -= 1
        down_key = _load(hk, n)
        down_payload = _load(hp, n)
    sift_down(hk, hp, n, down_key, down_payload)
    return key >> SEQ_BITS, payload, n


@jit(inline=True)
def event_message(payload, run_head, run_kind):
    """The message and kind of the event a heap entry stands for: ``(-1, kind)`` for an
    event that is not a message's."""
    kind = payload & EV_MASK
    if kind == EV_RUN:
        r = payload >> EV_BITS
        return run_head[r], run_kind[r]
    if kind in (EV_ROUTE, EV_ACK):
        return payload >> EV_BITS, kind
    return -1, kind

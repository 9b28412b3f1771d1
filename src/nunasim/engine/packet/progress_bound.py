"""A run's completion bounded from below by the work its resources have left, so that a
run with a deadline stops as soon as it provably cannot meet it.

Every resource serves one message at a time, each for the resource's occupancy, and a
collective completes only once every message of it that a step waits for has been
through every resource of its route: a read's data, a store's acknowledgement, a flag,
and a data-polled store whose arrival releases a step (one whose arrival releases none
is left out, as nothing waits for it). So at time ``t``, a resource ``e`` with ``r > 0``
services left, free from ``FREE_AT[e]``, holds the end back to at least ``max(t,
FREE_AT[e]) + (r - 1) * OCC[e] + LAT[e]``: its last service starts no earlier than
``(r - 1) * OCC[e]`` after the first, and that message leaves ``LAT[e]`` after it starts.
It then still has the rest of its route to go, and after it what waits for it: at least
the least such *tail* after ``e`` of any message the end waits for.

A message's tail follows the chain of what waits for it, at zero load: the pure delays
and the later resources' latencies of its route, a store's acknowledgement, and then
everything its step's end starts before the collective can end (``step_tails``): the
flags it sends, which must land and release their receivers, and its successors. A
flag's own chain is short (its receiver ends when it lands), and a resource's flags
would set its least tail, so the bound is taken twice: over every message, and over
the data messages alone (``OWED_DATA``, ``TAIL_DATA``), whose last service must still
be followed by a flag. A run's last messages are such chains: a threadblock's last
stores queue at a port, and its flag goes only once they are acknowledged
(docs/engine-measured.md, "Losing runs stopped at the best so far").

When the bound passes the deadline the run would be cut there anyway, later: stopping
it now changes no answer, only what the loser costs.

Inlined into the compiled loop (``nunasim.engine.packet.core``); after a change here clear
numba's caches (see ``nunasim.engine.packet.events``).
"""

from __future__ import annotations

import numpy as np

from nunasim.engine.jit import jit
from nunasim.engine.kernel.kinds import FLAG, LOAD
from nunasim.engine.kernel.ready import initially_ready, satisfy
from nunasim.engine.kernel.rows import FLITS, FREE_AT, LAT, OCC, ROUTE_POST, ROUTE_RES

# Events between two checks of the bound, at least; a check reads every resource once, so
# it is also at least a few times their count.
CHECK_EVERY = 1 << 14


# The columns of ``route_loads``'s rows, one per resource
OWED = 0  # services it owes before the collective can end
TAIL = 1  # the least zero-load time from leaving it to the end, over those services
OWED_DATA = 2  # the same over data messages alone (not flags)
TAIL_DATA = 3
OWED_FIELDS = 4
NO_TAIL = np.iinfo(np.int64).max // 4  # a resource that owes nothing (never read)


def release_edges(
    succ_start: np.ndarray,
    succ: np.ndarray,
    flag_start: np.ndarray,
    flag_target: np.ndarray,
    flag_trip: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What each step's end releases, as one CSR (``start``, the step released, the delay
    until then): its successors at once, and each flag's receiver ``flag_trip`` later."""
    steps = len(succ_start) - 1
    owner = np.concatenate(
        [
            np.repeat(np.arange(steps), np.diff(succ_start)),
            np.repeat(np.arange(steps), np.diff(flag_start)),
        ]
    )
    order = np.argsort(owner, kind="stable")
    released = np.concatenate([succ, flag_target]).astype(np.int64)[order]
    delay = np.concatenate([np.zeros(len(succ), dtype=np.int64), flag_trip])[order]
    start = np.searchsorted(owner[order], np.arange(steps + 1)).astype(np.int64)
    return start, released, delay


@jit
def step_tails(step_compute_ps, lineop_start, edge_start, released, delay):
    """Each step's least zero-load time from its end to the collective's end, and from
    its start (a step with line operations may end as it starts; one with none computes
    first), over ``release_edges``: the steps are taken in an order in which each comes
    after everything its end releases."""
    steps = step_compute_ps.shape[0]
    waits = np.zeros(steps, dtype=np.int64)  # what releases it, over these edges
    for x in range(released.shape[0]):
        waits[released[x]] += 1
    order = np.empty(steps, dtype=np.int64)
    done = initially_ready(waits, order)
    head = 0
    while head < done:
        s = order[head]
        head += 1
        for x in range(edge_start[s], edge_start[s + 1]):
            done = satisfy(released[x], waits, order, done)
    after_end = np.zeros(steps, dtype=np.int64)
    after_start = np.zeros(steps, dtype=np.int64)
    for j in range(done - 1, -1, -1):  # a step in a cycle (it deadlocks) keeps 0
        s = order[j]
        tail = 0
        for x in range(edge_start[s], edge_start[s + 1]):
            tail = max(tail, delay[x] + after_start[released[x]])
        after_end[s] = tail
        empty = lineop_start[s + 1] == lineop_start[s]
        after_start[s] = tail + (step_compute_ps[s] if empty else 0)
    return after_end, after_start


@jit
def _flag_trips(route, pos, pos_end, res, flag_msg, msg_pre_ps):
    """Each flag's zero-load time from its issue to its landing."""
    trip = np.empty(flag_msg.shape[0], dtype=np.int64)
    for k in range(flag_msg.shape[0]):
        f = flag_msg[k]
        total = msg_pre_ps[f]
        for p in range(pos[f], pos_end[f]):
            total += res[route[p, ROUTE_RES], LAT] + route[p, ROUTE_POST]
        trip[k] = total
    return trip


@jit
def _message_chains(kinds, lineop, lineop_step, target, ack_ps, release_start, release, steps):
    """Each message's zero-load time from the end of its route to the collective's end
    (-1: the end does not wait for it). ``steps``: ``step_tails``'s two arrays."""
    after_end, after_start = steps
    chain = np.empty(kinds.shape[0], dtype=np.int64)
    for m in range(kinds.shape[0]):
        a = target[m]
        if kinds[m] == FLAG:
            chain[m] = after_start[a]
        elif a >= 0:  # data-polled: its landing may release steps (its step ended at issue)
            tail = -1
            for k in range(release_start[a], release_start[a + 1]):
                tail = max(tail, after_start[release[k]])
            chain[m] = tail
        elif kinds[m] <= LOAD:  # its line operation, then its step, end after it
            chain[m] = after_end[lineop_step[lineop[m]]]
        else:  # a fenced write or store: its step ends after its acknowledgement
            chain[m] = ack_ps[m] + after_end[lineop_step[lineop[m]]]
    return chain


@jit
def _route_loads(route, pos, pos_end, res, msg_kind, chain):
    owed = np.zeros((res.shape[0], OWED_FIELDS), dtype=np.int64)
    owed[:, TAIL] = NO_TAIL
    owed[:, TAIL_DATA] = NO_TAIL
    for m in range(pos.shape[0]):
        if chain[m] < 0:
            continue  # data-polled, releasing nothing: the end does not wait for it
        counts, tail = (OWED, TAIL) if msg_kind[m] == FLAG else (OWED_DATA, TAIL_DATA)
        rest = chain[m]  # zero-load time from reaching entry p to the end
        for p in range(pos_end[m] - 1, pos[m] - 1, -1):
            e = route[p, ROUTE_RES]
            after = route[p, ROUTE_POST] + rest
            owed[e, counts] += 1
            if after < owed[e, tail]:
                owed[e, tail] = after
            rest = res[e, LAT] + after
    # every message counts in the first pair, data messages in both
    for e in range(res.shape[0]):
        owed[e, OWED] += owed[e, OWED_DATA]
        owed[e, TAIL] = min(owed[e, TAIL], owed[e, TAIL_DATA])
    return owed


def route_loads(inputs, pos: np.ndarray, pos_end: np.ndarray) -> np.ndarray:
    """Each resource's row (``OWED``, ``TAIL``, ``OWED_DATA``, ``TAIL_DATA``) over the
    route entries on it of every message a step waits for; ``inputs``: the run's
    ``CoreInputs``, ``pos`` and ``pos_end``: each message's route entries."""
    i = inputs
    trips = _flag_trips(i.route, pos, pos_end, i.res, i.flag_msg, i.msg_pre_ps)
    edges = release_edges(i.succ_start, i.succ, i.flag_start, i.msg_target[i.flag_msg], trips)
    steps = step_tails(i.step_compute_ps, i.lineop_start, *edges)
    chain = _message_chains(
        i.msg_kind,
        i.msg_lineop,
        i.lineop_step,
        i.msg_target,
        i.msg_ack_ps,
        i.release_start,
        i.release,
        steps,
    )
    return _route_loads(i.route, pos, pos_end, i.res, i.msg_kind, chain)


@jit(inline=True)
def _ends_after(res, e, start, left, tail, stop_ps):
    return left > 0 and start + (left - 1) * res[e, OCC] + res[e, LAT] + tail > stop_ps


@jit(inline=True)
def misses_deadline(res, owed, t, stop_ps):
    """Whether the work the resources have left at ``t`` ends after ``stop_ps``. A
    resource's flits served count against its data messages too: fewer left, never
    more."""
    for e in range(res.shape[0]):
        served = res[e, FLITS]
        start = res[e, FREE_AT] if res[e, FREE_AT] > t else t
        if _ends_after(res, e, start, owed[e, OWED] - served, owed[e, TAIL], stop_ps):
            return True
        if _ends_after(res, e, start, owed[e, OWED_DATA] - served, owed[e, TAIL_DATA], stop_ps):
            return True
    return False

"""The packet engine's event loop: one event per flit per resource, integer picoseconds.

Events are kept in a 4-ary heap ordered by (time, sequence number): ties are broken by
the order in which events were scheduled, so a run is exactly repeatable. Every resource
is a FIFO server: a flit arriving at time t starts at max(t, free), holds the resource for
its occupancy and moves on after its latency (plus any pure delay that follows it on the
route, such as the plane's). Since events are handled in time order, a resource serves
flits in order of arrival.

Written in the subset of Python that numba compiles; see ``nunasim.engine.jit``.
"""

from __future__ import annotations

import numpy as np

from nunasim.engine.jit import jit

# event kinds, packed with their argument as arg * 4 + kind
EV_ROUTE = 0
EV_ACK = 1
EV_COMPUTE = 2
EV_STEP = 3  # a step that only computes has finished

# message kinds (as in lower.py)
READ, LOAD, WRITE, STORE, FLAG = 0, 1, 2, 3, 4
# resource kinds
LINK, EGRESS, PLANE_OUT, STACK, INJECT, EJECT = 0, 1, 2, 3, 4, 5


# An event's key packs its time and its sequence number: time << SEQ_BITS | seq mod
# 2^SEQ_BITS. Keys order events by time, then (for events scheduled fewer than 2^SEQ_BITS
# events apart, which is every tie in practice) by the order they were scheduled in; the
# order is a fixed function of the run either way, so runs repeat exactly. One integer per
# key makes the heap about 2.5 times faster than comparing (time, sequence) pairs.
SEQ_BITS = 23
SEQ_MASK = (1 << SEQ_BITS) - 1
TIME_LIMIT_PS = 1 << (63 - SEQ_BITS)  # 1.1 s of simulated time


@jit(inline=True)
def _push(hk, hp, n, t, seq, payload):
    """Insert into a 4-ary heap of (key, payload): the hole moves up to its place."""
    if t >= TIME_LIMIT_PS:
        raise ValueError("the packet engine simulates at most 1.1 s of time")
    key = (t << SEQ_BITS) | (seq & SEQ_MASK)
    i = n
    while i > 0:
        p = (i - 1) >> 2
        if hk[p] <= key:
            break
        hk[i] = hk[p]
        hp[i] = hp[p]
        i = p
    hk[i] = key
    hp[i] = payload
    return n + 1


@jit(inline=True)
def _pop(hk, hp, n):
    """Remove the smallest key; the last item moves down from the root's hole."""
    key, payload = hk[0], hp[0]
    n -= 1
    last_key, last_payload = hk[n], hp[n]
    i = 0
    while True:
        first = 4 * i + 1
        if first >= n:
            break
        best = first
        best_key = hk[first]
        end = first + 4
        if end > n:
            end = n
        for c in range(first + 1, end):
            if hk[c] < best_key:
                best = c
                best_key = hk[c]
        if last_key <= best_key:
            break
        hk[i] = best_key
        hp[i] = hp[best]
        i = best
    hk[i] = last_key
    hp[i] = last_payload
    return key >> SEQ_BITS, payload, n


@jit(inline=True)
def _touch(cu, is_touched, touched, ntouched):
    """Note that CU ``cu`` may issue (its queue grew or its window opened)."""
    if not is_touched[cu]:
        is_touched[cu] = True
        touched[ntouched] = cu
        ntouched += 1
    return ntouched


@jit(inline=True)
def _enqueue(qhead, qtail, qnext, cu, first, end):
    """Append messages first..end-1 to the CU's issue queue."""
    for m in range(first, end):
        if qtail[cu] < 0:
            qhead[cu] = m
        else:
            qnext[qtail[cu]] = m
        qtail[cu] = m


@jit(inline=True)
def _satisfy(w, wait, ready, nready):
    """One of step ``w``'s waits is over; it becomes ready when none is left."""
    wait[w] -= 1
    if wait[w] == 0:
        ready[nready] = w
        nready += 1
    return nready


@jit(inline=True)
def _finish_step(s, t, hk, hp, n, seq, nready, steps):
    """Step ``s`` is done at ``t``: send its flags, release its successors. ``steps`` holds
    the step bookkeeping arrays (see ``run``)."""
    step_end, flag_start, flag_msg, msg_issue, msg_pre, succ_start, succ, wait, ready = steps
    step_end[s] = t
    for k in range(flag_start[s], flag_start[s + 1]):
        f = flag_msg[k]
        msg_issue[f] = t
        n = _push(hk, hp, n, t + msg_pre[f], seq, f * 4 + EV_ROUTE)
        seq += 1
    for k in range(succ_start[s], succ_start[s + 1]):
        nready = _satisfy(succ[k], wait, ready, nready)
    return n, seq, nready


@jit(inline=True)
def _line_delivered(lo, t, hk, hp, n, seq, nready, steps, lines):
    """One sink of line operation ``lo`` is delivered at ``t``; the last completes the line
    operation, and the last line operation its step. ``lines`` holds the line operations'
    bookkeeping arrays (see ``run``)."""
    lo_sinks, lineop_step, step_left = lines
    lo_sinks[lo] -= 1
    if lo_sinks[lo] == 0:
        s = lineop_step[lo]
        step_left[s] -= 1
        if step_left[s] == 0:
            n, seq, nready = _finish_step(s, t, hk, hp, n, seq, nready, steps)
    return n, seq, nready


@jit
def run(
    res,
    tb_cu,
    step_tb,
    step_wait0,
    step_compute,
    succ_start,
    succ,
    lineop_start,
    lineop_step,
    lineop_compute,
    lineop_msgs,
    flag_start,
    flag_msg,
    msg_kind,
    msg_lineop,
    msg_cu,
    msg_target,
    arrival_left0,
    release_start,
    release,
    msg_ack,
    msg_pre,
    route_start,
    route,
    ncus,
    window,
    # outputs, filled in place
    step_begin,
    step_end,
    msg_issue,
    msg_port_in,
    msg_port_out,
    msg_dst_in,
    msg_stack_in,
    msg_done,
):
    """Run to completion; returns the number of events handled.

    ``res`` has a row per resource: free-at, occupancy, latency, kind, (unused), flits,
    longest wait (the last two filled in). ``route`` has a row per route entry: resource,
    pure delay after it. Rows keep what one event touches in one cache line.

    A write or store with ``msg_target >= 0`` is data-polled (LL, LL128, packets): it
    counts as delivered for its line operation once issued, and it counts down the arrival
    counter ``msg_target`` when it lands; the counter's last line releases the steps in
    ``release``. Its acknowledgement only frees the CU's request slot.
    """
    nsteps = step_tb.shape[0]
    nlo = lineop_compute.shape[0]
    nmsg = msg_kind.shape[0]
    wait = step_wait0.copy()
    arrival_left = arrival_left0.copy()
    lo_sources = np.empty(nlo, dtype=np.int64)
    lo_sinks = np.empty(nlo, dtype=np.int64)
    for lo in range(nlo):
        lo_sources[lo] = lineop_msgs[lo, 1] - lineop_msgs[lo, 0]
        lo_sinks[lo] = lineop_msgs[lo, 2] - lineop_msgs[lo, 1]
    step_left = np.empty(nsteps, dtype=np.int64)
    for s in range(nsteps):
        step_left[s] = lineop_start[s + 1] - lineop_start[s]
    inflight = np.zeros(ncus, dtype=np.int64)
    compute_free = np.zeros(ncus, dtype=np.int64)
    qhead = np.full(ncus, -1, dtype=np.int64)
    qtail = np.full(ncus, -1, dtype=np.int64)
    qnext = np.full(nmsg, -1, dtype=np.int64)
    pos = route_start[:-1].copy()
    cap = nmsg + nlo + nsteps + 2
    hk = np.empty(cap, dtype=np.int64)
    hp = np.empty(cap, dtype=np.int64)
    n = 0
    seq = 0
    ready = np.empty(nsteps, dtype=np.int64)
    nready = 0
    steps = (step_end, flag_start, flag_msg, msg_issue, msg_pre, succ_start, succ, wait, ready)
    lines = (lo_sinks, lineop_step, step_left)
    touched = np.empty(ncus, dtype=np.int64)  # CUs whose queue grew or window opened
    ntouched = 0
    is_touched = np.zeros(ncus, dtype=np.bool_)
    events = 0

    for s in range(nsteps):
        if wait[s] == 0:
            ready[nready] = s
            nready += 1
    t = 0
    while True:
        # Start every ready step at time t; an empty step completes at once.
        while nready > 0:
            nready -= 1
            s = ready[nready]
            step_begin[s] = t
            cu = tb_cu[step_tb[s]]
            if step_left[s] == 0:
                if step_compute[s] > 0:  # a compute-only step, on the CU's compute unit
                    begin = max(t, compute_free[cu])
                    compute_free[cu] = begin + step_compute[s]
                    n = _push(hk, hp, n, compute_free[cu], seq, s * 4 + EV_STEP)
                    seq += 1
                else:
                    n, seq, nready = _finish_step(s, t, hk, hp, n, seq, nready, steps)
                continue
            for lo in range(lineop_start[s], lineop_start[s + 1]):
                if lineop_msgs[lo, 1] > lineop_msgs[lo, 0]:
                    _enqueue(qhead, qtail, qnext, cu, lineop_msgs[lo, 0], lineop_msgs[lo, 1])
                else:  # nothing to fetch: deliver at once
                    _enqueue(qhead, qtail, qnext, cu, lineop_msgs[lo, 1], lineop_msgs[lo, 2])
            ntouched = _touch(cu, is_touched, touched, ntouched)
        # Issue from every touched CU as far as its window allows.
        for i in range(ntouched):
            cu = touched[i]
            is_touched[cu] = False
            while qhead[cu] >= 0 and inflight[cu] < window:
                m = qhead[cu]
                qhead[cu] = qnext[m]
                if qhead[cu] < 0:
                    qtail[cu] = -1
                inflight[cu] += 1
                msg_issue[m] = t
                n = _push(hk, hp, n, t + msg_pre[m], seq, m * 4 + EV_ROUTE)
                seq += 1
                if msg_target[m] >= 0:  # data-polled: no fence, delivered once issued
                    n, seq, nready = _line_delivered(
                        msg_lineop[m], t, hk, hp, n, seq, nready, steps, lines
                    )
        ntouched = 0
        if nready > 0:  # steps completed by issuing: start their successors at t
            continue
        if n == 0:
            break
        t, payload, n = _pop(hk, hp, n)
        events += 1
        kind = payload & 3
        arg = payload >> 2

        if kind == EV_ROUTE:
            m = arg
            p = pos[m]
            if p < route_start[m + 1]:
                e = route[p, 0]
                pos[m] = p + 1
                start = res[e, 0]
                if start < t:
                    start = t
                elif start - t > res[e, 6]:
                    res[e, 6] = start - t
                res[e, 0] = start + res[e, 1]
                res[e, 5] += 1
                k = res[e, 3]
                leave = start + res[e, 2]
                if k != LINK:  # most hops are links, which stamp nothing
                    if k == EGRESS:
                        msg_port_in[m] = t
                        msg_port_out[m] = leave
                    elif k == PLANE_OUT:
                        msg_dst_in[m] = leave
                    elif k == STACK:
                        msg_stack_in[m] = t
                n = _push(hk, hp, n, leave + route[p, 1], seq, payload)
                seq += 1
                continue
            # The message has reached the end of its route.
            msg_done[m] = t
            mk = msg_kind[m]
            if mk == FLAG:
                nready = _satisfy(msg_target[m], wait, ready, nready)
                continue
            if mk <= LOAD:  # READ or LOAD: the data is back at the CU
                cu = msg_cu[m]
                inflight[cu] -= 1
                ntouched = _touch(cu, is_touched, touched, ntouched)
                lo = msg_lineop[m]
                lo_sources[lo] -= 1
                if lo_sources[lo] == 0:
                    if lo_sinks[lo] == 0:  # a pure load (background work): the line is done
                        s = lineop_step[lo]
                        step_left[s] -= 1
                        if step_left[s] == 0:
                            n, seq, nready = _finish_step(s, t, hk, hp, n, seq, nready, steps)
                    elif lineop_compute[lo] > 0:
                        begin = max(t, compute_free[cu])
                        compute_free[cu] = begin + lineop_compute[lo]
                        n = _push(hk, hp, n, compute_free[cu], seq, lo * 4 + EV_COMPUTE)
                        seq += 1
                    else:
                        _enqueue(qhead, qtail, qnext, cu, lineop_msgs[lo, 1], lineop_msgs[lo, 2])
                continue
            # A write or a store: acknowledged after the reverse path's latency.
            n = _push(hk, hp, n, t + msg_ack[m], seq, m * 4 + EV_ACK)
            seq += 1
            a = msg_target[m]
            if a >= 0:  # data-polled: the receivers poll the data, released by its last line
                arrival_left[a] -= 1
                if arrival_left[a] == 0:
                    for k in range(release_start[a], release_start[a + 1]):
                        nready = _satisfy(release[k], wait, ready, nready)
        elif kind == EV_COMPUTE:
            lo = arg
            cu = msg_cu[lineop_msgs[lo, 1]]
            _enqueue(qhead, qtail, qnext, cu, lineop_msgs[lo, 1], lineop_msgs[lo, 2])
            ntouched = _touch(cu, is_touched, touched, ntouched)
        elif kind == EV_STEP:
            n, seq, nready = _finish_step(arg, t, hk, hp, n, seq, nready, steps)
        else:  # EV_ACK
            m = arg
            cu = msg_cu[m]
            inflight[cu] -= 1
            ntouched = _touch(cu, is_touched, touched, ntouched)
            if msg_target[m] < 0:  # a data-polled line was delivered when issued
                n, seq, nready = _line_delivered(
                    msg_lineop[m], t, hk, hp, n, seq, nready, steps, lines
                )
    return events

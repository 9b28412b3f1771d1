"""The packet engine's event loop: one event per flit per resource, integer picoseconds.

Events are kept in a binary heap ordered by (time, sequence number): ties are broken by
the order in which events were scheduled, so a run is exactly repeatable. Every resource
is a FIFO server: a flit arriving at time t starts at max(t, free), holds the resource for
its occupancy and moves on after its latency. Since events are handled in time order, a
resource serves flits in order of arrival.

Written in the subset of Python that numba compiles; see ``nunasim.engine.jit``.
"""

from __future__ import annotations

import numpy as np

from nunasim.engine.jit import jit

EV_ROUTE = 0
EV_ACK = 1
EV_COMPUTE = 2

# message kinds (as in lower.py)
READ, LOAD, WRITE, STORE, FLAG = 0, 1, 2, 3, 4
# resource kinds
LINK, EGRESS, PLANE_OUT, STACK, INJECT, EJECT = 0, 1, 2, 3, 4, 5


@jit
def _push(ht, hs, hk, ha, n, t, seq, kind, arg):
    i = n
    ht[i] = t
    hs[i] = seq
    hk[i] = kind
    ha[i] = arg
    while i > 0:
        p = (i - 1) >> 1
        if ht[p] < ht[i] or (ht[p] == ht[i] and hs[p] < hs[i]):
            break
        ht[i], ht[p] = ht[p], ht[i]
        hs[i], hs[p] = hs[p], hs[i]
        hk[i], hk[p] = hk[p], hk[i]
        ha[i], ha[p] = ha[p], ha[i]
        i = p
    return n + 1


@jit
def _pop(ht, hs, hk, ha, n):
    t, kind, arg = ht[0], hk[0], ha[0]
    n -= 1
    ht[0], hs[0], hk[0], ha[0] = ht[n], hs[n], hk[n], ha[n]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= n:
            break
        child = left
        right = left + 1
        if right < n and (ht[right] < ht[left] or (ht[right] == ht[left] and hs[right] < hs[left])):
            child = right
        if ht[i] < ht[child] or (ht[i] == ht[child] and hs[i] < hs[child]):
            break
        ht[i], ht[child] = ht[child], ht[i]
        hs[i], hs[child] = hs[child], hs[i]
        hk[i], hk[child] = hk[child], hk[i]
        ha[i], ha[child] = ha[child], ha[i]
        i = child
    return t, kind, arg, n


@jit
def run(
    occ,
    lat,
    rkind,
    tb_cu,
    step_tb,
    step_wait0,
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
    msg_ack,
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
    res_busy,
    res_wait_max,
    res_flits,
):
    """Run to completion; returns the number of events handled."""
    nres = occ.shape[0]
    nsteps = step_tb.shape[0]
    nlo = lineop_compute.shape[0]
    nmsg = msg_kind.shape[0]
    free = np.zeros(nres, dtype=np.int64)
    wait = step_wait0.copy()
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
    pos = np.zeros(nmsg, dtype=np.int64)
    cap = nmsg + nlo + 2
    ht = np.empty(cap, dtype=np.int64)
    hs = np.empty(cap, dtype=np.int64)
    hk = np.empty(cap, dtype=np.int64)
    ha = np.empty(cap, dtype=np.int64)
    n = 0
    seq = 0
    ready = np.empty(nsteps, dtype=np.int64)
    nready = 0
    touched = np.empty(ncus, dtype=np.int64)  # CUs whose queues grew at this instant
    ntouched = 0
    is_touched = np.zeros(ncus, dtype=np.bool_)
    events = 0

    for s in range(nsteps):
        if wait[s] == 0:
            ready[nready] = s
            nready += 1
    t = 0
    while True:
        # Start every ready step at time t; completing an empty step may ready others.
        while nready > 0:
            nready -= 1
            s = ready[nready]
            step_begin[s] = t
            if step_left[s] == 0:
                step_end[s] = t
                for k in range(flag_start[s], flag_start[s + 1]):
                    m = flag_msg[k]
                    msg_issue[m] = t
                    n = _push(ht, hs, hk, ha, n, t, seq, EV_ROUTE, m)
                    seq += 1
                for k in range(succ_start[s], succ_start[s + 1]):
                    w = succ[k]
                    wait[w] -= 1
                    if wait[w] == 0:
                        ready[nready] = w
                        nready += 1
                continue
            cu = tb_cu[step_tb[s]]
            for lo in range(lineop_start[s], lineop_start[s + 1]):
                for m in range(lineop_msgs[lo, 0], lineop_msgs[lo, 1]):
                    if qtail[cu] < 0:
                        qhead[cu] = m
                    else:
                        qnext[qtail[cu]] = m
                    qtail[cu] = m
            if not is_touched[cu]:
                is_touched[cu] = True
                touched[ntouched] = cu
                ntouched += 1
        # Issue from every CU whose queue grew or whose window opened.
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
                n = _push(ht, hs, hk, ha, n, t, seq, EV_ROUTE, m)
                seq += 1
        ntouched = 0
        if n == 0:
            break
        t, kind, arg, n = _pop(ht, hs, hk, ha, n)
        events += 1

        if kind == EV_ROUTE:
            m = arg
            p = route_start[m] + pos[m]
            if p < route_start[m + 1]:
                e = route[p]
                pos[m] += 1
                if e < 0:
                    n = _push(ht, hs, hk, ha, n, t - e - 1, seq, EV_ROUTE, m)
                    seq += 1
                    continue
                start = max(t, free[e])
                free[e] = start + occ[e]
                res_busy[e] += occ[e]
                res_flits[e] += 1
                if start - t > res_wait_max[e]:
                    res_wait_max[e] = start - t
                k = rkind[e]
                if k == EGRESS and msg_port_in[m] < 0:
                    msg_port_in[m] = t
                    msg_port_out[m] = start + lat[e]
                elif k == PLANE_OUT and msg_dst_in[m] < 0:
                    msg_dst_in[m] = start + lat[e]
                elif k == STACK:
                    msg_stack_in[m] = t
                n = _push(ht, hs, hk, ha, n, start + lat[e], seq, EV_ROUTE, m)
                seq += 1
                continue
            # The message has reached the end of its route.
            msg_done[m] = t
            mk = msg_kind[m]
            if mk == FLAG:
                w = msg_target[m]
                wait[w] -= 1
                if wait[w] == 0:
                    ready[nready] = w
                    nready += 1
                continue
            if mk <= LOAD:  # READ or LOAD: data is back at the CU
                cu = msg_cu[m]
                inflight[cu] -= 1
                if not is_touched[cu]:
                    is_touched[cu] = True
                    touched[ntouched] = cu
                    ntouched += 1
                lo = msg_lineop[m]
                lo_sources[lo] -= 1
                if lo_sources[lo] == 0:
                    if lineop_compute[lo] > 0:
                        begin = max(t, compute_free[cu])
                        compute_free[cu] = begin + lineop_compute[lo]
                        n = _push(ht, hs, hk, ha, n, compute_free[cu], seq, EV_COMPUTE, lo)
                        seq += 1
                    else:
                        for k2 in range(lineop_msgs[lo, 1], lineop_msgs[lo, 2]):
                            if qtail[cu] < 0:
                                qhead[cu] = k2
                            else:
                                qnext[qtail[cu]] = k2
                            qtail[cu] = k2
                continue
            # A write or store: acknowledged after the reverse path's latency.
            n = _push(ht, hs, hk, ha, n, t + msg_ack[m], seq, EV_ACK, m)
            seq += 1
        elif kind == EV_COMPUTE:
            lo = arg
            cu = msg_cu[lineop_msgs[lo, 1]]
            for k2 in range(lineop_msgs[lo, 1], lineop_msgs[lo, 2]):
                if qtail[cu] < 0:
                    qhead[cu] = k2
                else:
                    qnext[qtail[cu]] = k2
                qtail[cu] = k2
            if not is_touched[cu]:
                is_touched[cu] = True
                touched[ntouched] = cu
                ntouched += 1
        else:  # EV_ACK
            m = arg
            cu = msg_cu[m]
            inflight[cu] -= 1
            if not is_touched[cu]:
                is_touched[cu] = True
                touched[ntouched] = cu
                ntouched += 1
            lo = msg_lineop[m]
            lo_sinks[lo] -= 1
            if lo_sinks[lo] == 0:
                s = lineop_step[lo]
                step_left[s] -= 1
                if step_left[s] == 0:
                    step_end[s] = t
                    for k in range(flag_start[s], flag_start[s + 1]):
                        f = flag_msg[k]
                        msg_issue[f] = t
                        n = _push(ht, hs, hk, ha, n, t, seq, EV_ROUTE, f)
                        seq += 1
                    for k in range(succ_start[s], succ_start[s + 1]):
                        w = succ[k]
                        wait[w] -= 1
                        if wait[w] == 0:
                            ready[nready] = w
                            nready += 1
    return events

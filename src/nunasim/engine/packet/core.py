"""The packet core: one event per flit per resource, integer picoseconds.

Both the collective engine (``nunasim.engine.packet.engine``) and the synthetic NoC mode
(``nunasim.engine.noc.inputs``) lower what they simulate into one ``CoreInputs`` and call ``run``,
so both share this event loop, its heap and its resource model.

Events are kept in a 4-ary heap ordered by (time, sequence number): ties are broken by
the order in which events were scheduled, so a run is exactly repeatable. Every resource
is a FIFO server: a flit arriving at time t starts at max(t, free), holds the resource for
its occupancy and moves on after its latency (plus any pure delay that follows it on the
route, such as the plane's). Since events are handled in time order, a resource serves
flits in order of arrival.

A resource may also be credit flow-controlled (its VCS column): then a message starts on it
only once a virtual channel of the buffer downstream is free, waiting in the resource's
FIFO wait queue (woken by the credit's return, never polled) while holding the channel it
occupies upstream, so a full buffer stops the links behind it. A message longer than that
buffer (BUF_FLITS) holds the channel upstream as well until it has moved on (wormhole).
Without such resources the loop takes exactly the path it takes without the feature.

The loop is written in the subset of Python that numba compiles; see ``nunasim.engine.jit``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.engine.jit import jit, prefetcher
from nunasim.engine.kernel.heap import SEQ_BITS, pop_event, push_event
from nunasim.engine.kernel.kinds import EGRESS, FLAG, LINK, LOAD, PLANE_OUT, STACK
from nunasim.engine.kernel.ready import any_unfinished, initially_ready
from nunasim.engine.kernel.rows import (
    BUF_FLITS,
    CREDIT_PS,
    FLIT_PS,
    FLITS,
    FREE_AT,
    KIND,
    LAT,
    OCC,
    ROUTE_POST,
    ROUTE_RES,
    VCS,
    WAIT_MAX,
)

# The event kinds are this loop's own. The constants it shares with the other loops live in
# ``nunasim.engine.kernel``, whose docstring says how to refresh numba's cache after one
# changes (the cache notices changes to this file, not to the modules it takes them from).

# event kinds, packed with their argument as arg << EV_BITS | kind
EV_ROUTE = 0
EV_ACK = 1
EV_COMPUTE = 2
EV_STEP = 3  # a step that only computes has finished
EV_CREDIT = 4  # a virtual channel of a resource's downstream buffer is free again
EV_BITS = 3
EV_MASK = (1 << EV_BITS) - 1


class CoreInputs(NamedTuple):
    """Everything a run reads, as flat integer arrays. The step, line-operation, flag,
    message and arrival-counter arrays mean what the fields of the same names of a lowered
    scenario mean (``nunasim.engine.lowering.lower.Lowered``); CSR ``*_start`` arrays have one entry
    more than their owners. ``res`` is also written: its FREE_AT, FLITS and WAIT_MAX
    columns are filled in by the run."""

    res: np.ndarray  # [resource, RES_FIELDS]
    tb_cu: np.ndarray
    step_tb: np.ndarray
    step_wait: np.ndarray
    step_compute_ps: np.ndarray
    # Steps released at given times (open-loop injection), in order of time: step
    # timed_step[i] has one wait more, met at timed_at[i] before any event of that time.
    timed_step: np.ndarray
    timed_at: np.ndarray
    succ_start: np.ndarray
    succ: np.ndarray
    lineop_start: np.ndarray
    lineop_step: np.ndarray
    lineop_compute_ps: np.ndarray
    lineop_msgs: np.ndarray
    flag_start: np.ndarray
    flag_msg: np.ndarray
    msg_kind: np.ndarray  # int64 here
    msg_lineop: np.ndarray
    msg_cu: np.ndarray
    msg_target: np.ndarray
    arrival_lines: np.ndarray
    release_start: np.ndarray
    release: np.ndarray
    msg_ack_ps: np.ndarray
    msg_pre_ps: np.ndarray
    msg_route: np.ndarray  # the route a message travels (messages may share one)
    route_start: np.ndarray  # CSR over routes
    route: np.ndarray  # [route entry, ROUTE_FIELDS], ROUTE_DTYPE
    ncus: int
    window: int
    stop_step: int  # the run ends once this step has finished; -1: when nothing is left
    # The run gives up once its clock passes this time with a step unfinished (it cannot
    # then end by it: every event left is due later); -1: never. A search's cut-off.
    stop_ps: int


class CoreOutputs(NamedTuple):
    """Timestamps a run fills in (ps; -1 where a stage does not apply or was not reached)."""

    step_begin: np.ndarray
    step_end: np.ndarray
    msg_issue: np.ndarray
    msg_port_in: np.ndarray  # arrival at an EGRESS resource
    msg_port_out: np.ndarray  # departure from it
    msg_dst_in: np.ndarray  # departure from a PLANE_OUT resource
    msg_stack_in: np.ndarray  # arrival at a STACK resource
    msg_done: np.ndarray  # end of the route

    @classmethod
    def unfilled(cls, steps: int, messages: int) -> CoreOutputs:
        def filled(count: int) -> np.ndarray:
            return np.full(count, -1, dtype=np.int64)

        return cls(filled(steps), filled(steps), *(filled(messages) for _ in range(6)))


def run(inputs: CoreInputs, outputs: CoreOutputs) -> tuple[int, bool]:
    """Run to completion (or to ``inputs.stop_step``, or until it passes ``inputs.stop_ps``
    unfinished), filling ``outputs`` and the run's columns of ``inputs.res``; returns the
    number of events handled and whether it stopped at ``stop_ps``."""
    if (np.diff(inputs.timed_at) < 0).any():
        raise ValueError("timed releases must be in order of time")
    # The compiled loop takes the two bundles whole (a kernel takes at most 12 arguments):
    # typing them costs the call about 2.5 us more than passing their fields one by one,
    # once per run (benchmarks/packet_kernel_calls.py).
    return _loop(inputs, outputs)


_prefetch = prefetcher()  # the compiled loop calls it by this global name


@jit(inline=True)
def _prefetch_ahead(hp, n, pos, pos_end, route, res):
    """Ask the memory for what the coming events will read while this one is handled. The
    loop is bound by memory latency: an event reads its message's route cursor, then the
    route entry it points to, then that resource's row, each a cache miss once the run
    outgrows the cache, one after the other. The next event is the heap's root and the ones
    after it are among the root's children and grandchildren, so: for the root, the row of
    the resource it moves to (its cursor and route entry were asked for at the events
    before); for the children, their route entries; for the grandchildren, their cursors.
    A 64-GPU All-Gather runs 1.5 to 2 times as fast. Hints only: nothing computed changes."""
    head = hp[0]
    if head & EV_MASK == EV_ROUTE:
        m = head >> EV_BITS
        p = pos[m]
        if p < pos_end[m]:
            _prefetch(res, route[p, ROUTE_RES])
    end = min(n, 21)
    for c in range(1, end):
        ahead = hp[c]
        if ahead & EV_MASK == EV_ROUTE:
            m = ahead >> EV_BITS
            if c < 5:
                _prefetch(route, pos[m])
            else:
                _prefetch(pos, m)
                _prefetch(pos_end, m)


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
    step_end, flag_start, flag_msg, msg_issue, msg_pre_ps, succ_start, succ, wait, ready = steps
    step_end[s] = t
    for k in range(flag_start[s], flag_start[s + 1]):
        f = flag_msg[k]
        msg_issue[f] = t
        n = push_event(hk, hp, n, t + msg_pre_ps[f], seq, (f << EV_BITS) | EV_ROUTE)
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
def _loop(inputs, outputs):
    """The event loop over one run's ``CoreInputs`` and ``CoreOutputs`` (see ``run``).

    A write or store with ``msg_target >= 0`` is data-polled (LL, LL128, packets): it
    counts as delivered for its line operation once issued, and it counts down the arrival
    counter ``msg_target`` when it lands; the counter's last line releases the steps in
    ``release``. Its acknowledgement only frees the CU's request slot.
    """
    res = inputs.res
    tb_cu = inputs.tb_cu
    step_tb = inputs.step_tb
    step_wait = inputs.step_wait
    step_compute_ps = inputs.step_compute_ps
    timed_step = inputs.timed_step
    timed_at = inputs.timed_at
    succ_start = inputs.succ_start
    succ = inputs.succ
    lineop_start = inputs.lineop_start
    lineop_step = inputs.lineop_step
    lineop_compute_ps = inputs.lineop_compute_ps
    lineop_msgs = inputs.lineop_msgs
    flag_start = inputs.flag_start
    flag_msg = inputs.flag_msg
    msg_kind = inputs.msg_kind
    msg_lineop = inputs.msg_lineop
    msg_cu = inputs.msg_cu
    msg_target = inputs.msg_target
    arrival_lines = inputs.arrival_lines
    release_start = inputs.release_start
    release = inputs.release
    msg_ack_ps = inputs.msg_ack_ps
    msg_pre_ps = inputs.msg_pre_ps
    msg_route = inputs.msg_route
    route_start = inputs.route_start
    route = inputs.route
    ncus = inputs.ncus
    window = inputs.window
    stop_step = inputs.stop_step
    stop_ps = inputs.stop_ps
    step_begin = outputs.step_begin
    step_end = outputs.step_end
    msg_issue = outputs.msg_issue
    msg_port_in = outputs.msg_port_in
    msg_port_out = outputs.msg_port_out
    msg_dst_in = outputs.msg_dst_in
    msg_stack_in = outputs.msg_stack_in
    msg_done = outputs.msg_done
    nsteps = step_tb.shape[0]
    nlo = lineop_compute_ps.shape[0]
    nmsg = msg_kind.shape[0]
    wait = step_wait.copy()
    arrival_left = arrival_lines.copy()
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
    pos = np.empty(nmsg, dtype=np.int64)  # next route entry of each message
    pos_end = np.empty(nmsg, dtype=np.int64)
    for m in range(nmsg):
        pos[m] = route_start[msg_route[m]]
        pos_end[m] = route_start[msg_route[m] + 1]
    nres = res.shape[0]
    flow = False
    for e in range(nres):
        if res[e, VCS] > 0:
            flow = True
    credits = res[:, VCS].copy()
    held = np.full(nmsg, -1, dtype=np.int64)  # the resource whose downstream VC m holds
    # The VC m still holds one buffer further upstream (wormhole: its tail is there), and
    # when m started on the resource that drains it.
    spanned = np.full(nmsg, -1, dtype=np.int64)
    spanned_start = np.zeros(nmsg, dtype=np.int64)
    wq_head = np.full(nres, -1, dtype=np.int64)  # messages waiting for a credit, FIFO
    wq_tail = np.full(nres, -1, dtype=np.int64)
    wnext = np.full(nmsg, -1, dtype=np.int64)
    arrived = np.zeros(nmsg, dtype=np.int64)  # when a message reached its next resource
    granted = np.zeros(nmsg, dtype=np.bool_)  # woken with a VC of its next resource
    # A message has at most one event pending, and each VC at most one credit in flight.
    cap = nmsg + nlo + nsteps + 2
    if flow:
        cap += credits.sum()
    hk = np.empty(cap, dtype=np.int64)
    hp = np.empty(cap, dtype=np.int64)
    n = 0
    seq = 0
    ready = np.empty(nsteps, dtype=np.int64)
    steps = (step_end, flag_start, flag_msg, msg_issue, msg_pre_ps, succ_start, succ, wait, ready)
    lines = (lo_sinks, lineop_step, step_left)
    touched = np.empty(ncus, dtype=np.int64)  # CUs whose queue grew or window opened
    ntouched = 0
    is_touched = np.zeros(ncus, dtype=np.bool_)
    events = 0

    ntimed = timed_step.shape[0]
    nxt = 0  # the next timed release
    for i in range(ntimed):
        wait[timed_step[i]] += 1
    nready = initially_ready(wait, ready)
    t = 0
    while True:
        # Start every ready step at time t; an empty step completes at once.
        while nready > 0:
            nready -= 1
            s = ready[nready]
            step_begin[s] = t
            cu = tb_cu[step_tb[s]]
            if step_left[s] == 0:
                if step_compute_ps[s] > 0:  # a compute-only step, on the CU's compute unit
                    begin = max(t, compute_free[cu])
                    compute_free[cu] = begin + step_compute_ps[s]
                    n = push_event(hk, hp, n, compute_free[cu], seq, (s << EV_BITS) | EV_STEP)
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
                n = push_event(hk, hp, n, t + msg_pre_ps[m], seq, (m << EV_BITS) | EV_ROUTE)
                seq += 1
                if msg_target[m] >= 0:  # data-polled: no fence, delivered once issued
                    n, seq, nready = _line_delivered(
                        msg_lineop[m], t, hk, hp, n, seq, nready, steps, lines
                    )
        ntouched = 0
        if nready > 0:  # steps completed by issuing: start their successors at t
            continue
        if stop_step >= 0 and step_end[stop_step] >= 0:
            break
        if nxt < ntimed and (n == 0 or timed_at[nxt] <= hk[0] >> SEQ_BITS):
            # Timed releases are consumed in order beside the heap rather than pushed
            # onto it: open-loop traffic would otherwise fill the heap with every packet.
            t = timed_at[nxt]
            nready = _satisfy(timed_step[nxt], wait, ready, nready)
            nxt += 1
            events += 1
            continue
        if n == 0:
            break
        t, payload, n = pop_event(hk, hp, n)
        if stop_ps >= 0 and t > stop_ps:
            if any_unfinished(step_end):
                return events, True
            stop_ps = -1  # every step ended in time: run what is left to its end
        events += 1
        if n > 0:
            _prefetch_ahead(hp, n, pos, pos_end, route, res)
        kind = payload & EV_MASK
        arg = payload >> EV_BITS

        if kind == EV_ROUTE:
            m = arg
            p = pos[m]
            if p < pos_end[m]:
                e = route[p, ROUTE_RES]
                if flow:
                    if granted[m]:  # woken by a credit, which it already holds
                        granted[m] = False
                    else:
                        arrived[m] = t
                        if res[e, VCS] > 0:
                            if credits[e] == 0:  # every VC downstream is taken: wait
                                wnext[m] = -1
                                if wq_tail[e] < 0:
                                    wq_head[e] = m
                                else:
                                    wnext[wq_tail[e]] = m
                                wq_tail[e] = m
                                continue
                            credits[e] -= 1
                pos[m] = p + 1
                start = res[e, FREE_AT]
                if start < t:
                    start = t
                elif start - t > res[e, WAIT_MAX]:
                    res[e, WAIT_MAX] = start - t
                res[e, FREE_AT] = start + res[e, OCC]
                res[e, FLITS] += 1
                k = res[e, KIND]
                leave = start + res[e, LAT]
                if k != LINK:  # most hops are links, which stamp nothing
                    if k == EGRESS:
                        msg_port_in[m] = t
                        msg_port_out[m] = leave
                    elif k == PLANE_OUT:
                        msg_dst_in[m] = leave
                    elif k == STACK:
                        msg_stack_in[m] = t
                if flow:
                    if start - arrived[m] > res[e, WAIT_MAX]:  # the wait for a credit counts
                        res[e, WAIT_MAX] = start - arrived[m]
                    h = held[m]
                    g = spanned[m]
                    if g >= 0:
                        # The tail crosses h once the flits beyond h's buffer have left it
                        # over e (and their credits came back): then g's VC is free.
                        over = res[e, OCC] - res[h, BUF_FLITS] * res[e, FLIT_PS]
                        tail = start + over + res[h, CREDIT_PS] + res[h, FLIT_PS]
                        if tail < spanned_start[m] + res[h, OCC]:
                            tail = spanned_start[m] + res[h, OCC]
                        n = push_event(
                            hk, hp, n, tail + res[g, CREDIT_PS], seq, (g << EV_BITS) | EV_CREDIT
                        )
                        seq += 1
                        spanned[m] = -1
                    if h >= 0:
                        if (
                            res[e, BUF_FLITS] > 0
                            and res[e, OCC] > res[e, BUF_FLITS] * res[e, FLIT_PS]
                        ):
                            # Longer than e's buffer: h's VC is free only once m's head has
                            # moved on from there (its next start).
                            spanned[m] = h
                            spanned_start[m] = start
                        else:  # free once this message has left that buffer
                            back = start + res[e, OCC] + res[h, CREDIT_PS]
                            n = push_event(hk, hp, n, back, seq, (h << EV_BITS) | EV_CREDIT)
                            seq += 1
                    held[m] = e if res[e, VCS] > 0 else -1
                n = push_event(hk, hp, n, leave + route[p, ROUTE_POST], seq, payload)
                seq += 1
                continue
            # The message has reached the end of its route.
            if flow and spanned[m] >= 0:  # the route ended with m spanning two buffers
                g = spanned[m]
                tail = spanned_start[m] + res[held[m], OCC] + res[g, CREDIT_PS]
                n = push_event(hk, hp, n, tail, seq, (g << EV_BITS) | EV_CREDIT)
                seq += 1
                spanned[m] = -1
            if flow and held[m] >= 0:  # a route ending on a flow-controlled resource
                h = held[m]
                n = push_event(hk, hp, n, t + res[h, CREDIT_PS], seq, (h << EV_BITS) | EV_CREDIT)
                seq += 1
                held[m] = -1
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
                    elif lineop_compute_ps[lo] > 0:
                        begin = max(t, compute_free[cu])
                        compute_free[cu] = begin + lineop_compute_ps[lo]
                        n = push_event(
                            hk, hp, n, compute_free[cu], seq, (lo << EV_BITS) | EV_COMPUTE
                        )
                        seq += 1
                    else:
                        _enqueue(qhead, qtail, qnext, cu, lineop_msgs[lo, 1], lineop_msgs[lo, 2])
                continue
            # A write or a store: acknowledged after the reverse path's latency.
            n = push_event(hk, hp, n, t + msg_ack_ps[m], seq, (m << EV_BITS) | EV_ACK)
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
        elif kind == EV_CREDIT:
            e = arg
            m = wq_head[e]
            if m < 0:
                credits[e] += 1
                continue
            # The first waiter takes the returned VC and moves on now.
            wq_head[e] = wnext[m]
            if wq_head[e] < 0:
                wq_tail[e] = -1
            granted[m] = True
            n = push_event(hk, hp, n, t, seq, (m << EV_BITS) | EV_ROUTE)
            seq += 1
        else:  # EV_ACK
            m = arg
            cu = msg_cu[m]
            inflight[cu] -= 1
            ntouched = _touch(cu, is_touched, touched, ntouched)
            if msg_target[m] < 0:  # a data-polled line was delivered when issued
                n, seq, nready = _line_delivered(
                    msg_lineop[m], t, hk, hp, n, seq, nready, steps, lines
                )
    return events, False

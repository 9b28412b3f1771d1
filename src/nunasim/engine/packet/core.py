"""The packet core: one event per flit per resource, integer picoseconds.

Both the collective engine (``nunasim.engine.packet.engine``) and the synthetic NoC mode
(``nunasim.engine.noc.inputs``) lower what they simulate into one ``CoreInputs`` and call ``run``,
so both share this event loop, its heap and its resource model.

Events are kept in a 4-ary heap ordered by (time, sequence number): ties are broken by
the order in which events were scheduled, so a run is exactly repeatable (on large runs,
events that fall due in the order they are scheduled wait in runs beside the heap, which
holds each run's first: the same events in the same order, ``nunasim.engine.packet.runs``).
Every resource
is a FIFO server: a flit arriving at time t starts at max(t, free), holds the resource for
its occupancy and moves on after its latency (plus any pure delay that follows it on the
route, such as the plane's). Since events are handled in time order, a resource serves
flits in order of arrival.

A resource may also be credit flow-controlled (its VCS column): it then feeds an input
buffer of VCS virtual channels of BUF_FLITS flits, as the input port of an input-queued VC
router does, and the loop moves messages through those buffers as such a router moves
packets (``docs/noc.md``, "What is modelled" and "Against BookSim2"):

- each VC of a buffer is a FIFO: only the message at its head may ask for its next
  resource, the one behind it only once the head's tail has left and its own head has then
  passed the stages a router spends on a packet's head alone (HEAD_PS: route computation
  and VC allocation), head-of-line blocking; a message reaching an emptied VC sooner after
  than those stages allow waits for them too;
- the VCs of a buffer share its port into the switch, one flit per flit time of the
  channel that feeds it: a message whose port is busy asks again when it is free, and one
  whose next resource is busy waits in that resource's queue of buffered messages, in
  order, served one at a time as the resource comes free (EV_OUTPUT), holding no port;
- a message is allocated a VC of the buffer downstream that no waiting message holds,
  round-robin and blind to credits, as a VC allocator is; it starts with a credit for each
  of its flits, taken then, or holds the VC until they are back; with every VC held it
  waits, in order of arrival, in the resource's wait queue. Credits wake both waits (never
  polled) and the message stays at the head of the buffer it is in, so a full buffer stops
  the links behind it;
- every flit's slot is freed when the flit leaves the buffer, and its credit reaches the
  resource upstream CREDIT_PS later (one event per message returns all its flits' credits,
  at the tail's; an event on the heap only while a message waits for that VC, see
  ``nunasim.engine.packet.credits``);
- with TAIL_CREDIT, only an empty VC (every credit back) takes a message.

Without such resources the loop takes exactly the path it takes without the feature.

The loop is written in the subset of Python that numba compiles; see ``nunasim.engine.jit``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.engine.jit import jit, unchecked
from nunasim.engine.kernel.heap import SEQ_BITS, push_event
from nunasim.engine.kernel.kinds import EGRESS, FLAG, LINK, LOAD, PLANE_OUT, STACK
from nunasim.engine.kernel.ready import any_unfinished, initially_ready, satisfy
from nunasim.engine.kernel.rows import (
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
from nunasim.engine.packet.credits import (
    _append,
    _credits_taken,
    _due,
    _leave_buffer,
    _pick_vc,
    _returned,
    _serve_output,
    _watch,
    _watch_all,
)
from nunasim.engine.packet.events import (
    EV_BITS,
    EV_COMPUTE,
    EV_CREDIT,
    EV_MASK,
    EV_OUTPUT,
    EV_ROUTE,
    EV_STEP,
    PH_ARRIVE,
    PH_GRANTED,
    PH_REQUEST,
)
from nunasim.engine.packet.outputs import CoreOutputs, check_stages
from nunasim.engine.packet.prefetch import PREFETCH_FROM, _prefetch_ahead
from nunasim.engine.packet.progress_bound import CHECK_EVERY, misses_deadline
from nunasim.engine.packet.runs import END, POS, pop_next, push_run, start_route
from nunasim.engine.packet.state import loop_state
from nunasim.engine.packet.steps import (
    _enqueue,
    _finish_step,
    _line_delivered,
    _touch,
)

# Indexing without numba's negative-index wrap-around, for positions the loop computes
# (``nunasim.jit.unchecked``; docs/engine.md, "Indices without wrap-around").
_load, _store, _load2, _store2 = unchecked()


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


def run(inputs: CoreInputs, outputs: CoreOutputs) -> tuple[int, bool]:
    """Run to completion (or to ``inputs.stop_step``, or until it passes ``inputs.stop_ps``
    unfinished), filling ``outputs`` and the run's columns of ``inputs.res``; returns the
    number of events handled and whether it stopped at ``stop_ps``."""
    if (inputs.timed_at[1:] < inputs.timed_at[:-1]).any():
        raise ValueError("timed releases must be in order of time")
    check_stages(outputs, inputs.res[:, KIND], len(inputs.step_tb), len(inputs.msg_kind))
    # The compiled loop takes the bundles whole (a kernel takes at most 12 arguments):
    # typing them costs the call about 2.5 us more than passing their fields one by one,
    # once per run (benchmarks/packet_kernel_calls.py).
    return _loop(inputs, outputs, loop_state(inputs))


@jit(nrt=False)
def _loop(inputs, outputs, state):
    """The event loop over one run's ``CoreInputs`` and ``CoreOutputs`` (see ``run``).

    A write or store with ``msg_target >= 0`` is data-polled (LL, LL128, packets): it
    counts as delivered for its line operation once issued, and it counts down the arrival
    counter ``msg_target`` when it lands; the counter's last line releases the steps in
    ``release``. Its acknowledgement only frees the CU's request slot. ``state``: the
    arrays it works on, as they start (``nunasim.engine.packet.state``); it allocates none.
    """
    res = inputs.res
    tb_cu = inputs.tb_cu
    step_tb = inputs.step_tb
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
    release_start = inputs.release_start
    release = inputs.release
    msg_ack_ps = inputs.msg_ack_ps
    msg_pre_ps = inputs.msg_pre_ps
    route = inputs.route
    msg_route = inputs.msg_route
    route_start = inputs.route_start
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
    begins = step_begin.shape[0] > 0  # stamps the caller left out are not written
    issues = msg_issue.shape[0] > 0
    nres = res.shape[0]
    wait = state.wait
    arrival_left = state.arrival_left
    lo_sources = state.lo_sources
    lo_sinks = state.lo_sinks
    step_left = state.step_left
    ready = state.ready
    inflight = state.inflight
    compute_free = state.compute_free
    qhead = state.qhead
    qtail = state.qtail
    qnext = state.qnext
    touched = state.touched  # CUs whose queue grew or window opened
    is_touched = state.is_touched
    cursor = state.cursor  # each message's next route entry and its route's end
    # Credit flow control: VC v (numbered resource by resource: resource e's are
    # vc_start[e] .. vc_start[e + 1] - 1) of the buffer fed by resource vc_res[v] has
    # credit[v] free flit slots and holds a FIFO of messages (fifo_head, fifo_tail,
    # fifo_next); in_vc[m] is the VC whose buffer message m is in (-1: none).
    vc_start = state.vc_start
    flow = vc_start[nres] > 0  # any credit flow-controlled resource (it has VCs)
    vc_res = state.vc_res
    credit = state.credit
    fifo_head = state.fifo_head
    fifo_tail = state.fifo_tail
    fifo_next = state.fifo_next
    in_vc = state.in_vc
    behind = state.behind  # arrived, not yet at the head
    hol_ok = state.hol_ok  # at the head: free to go from
    phase = state.phase
    granted_vc = state.granted_vc
    vc_ok = state.vc_ok  # VC v's next head goes at vc_ok[v] at the earliest
    buffers = (vc_res, fifo_head, fifo_tail, fifo_next, behind, hol_ok, phase, res, vc_ok)
    held = state.held  # the message allocated VC v, waiting for credits
    vc_rr = state.vc_rr  # round-robin pointer of e's VC allocation
    wq_head = state.wq_head  # messages waiting for a free VC, FIFO
    wq_tail = state.wq_tail
    wnext = state.wnext
    arrived = state.arrived  # when it asked for its resource
    # The input port of the buffer resource u feeds is crossing the switch until port_free[u].
    port_free = state.port_free
    # Buffered messages waiting for a busy resource e, FIFO, and whether an EV_OUTPUT event
    # will serve them.
    oq_head = state.oq_head
    oq_tail = state.oq_tail
    onext = state.onext
    out_armed = state.out_armed
    outputs_q = (oq_head, out_armed, res)
    # The credit returns' bookkeeping ``_returned``, ``_watch`` and ``_return_credits`` share:
    # each VC's ring of returns due (CSR ``ring_start``), its first entry and how many it
    # holds, then the VC state they read.
    returns = (
        state.ring_key,
        state.ring_start,
        state.ring_head,
        state.ring_count,
        credit,
        vc_start,
        res,
        vc_res,
        held,
        wq_head,
    )
    hk = state.hk
    hp = state.hp
    issue_run = state.issue_run
    ack_run = state.ack_run
    runs = (state.run_head, state.run_tail, state.run_last, cursor, state.run_kind)
    n = 0
    seq = 0
    steps = (
        step_end,
        flag_start,
        flag_msg,
        msg_issue,
        msg_pre_ps,
        issue_run,
        succ_start,
        succ,
        wait,
        ready,
        msg_route,
        route_start,
    )
    lines = (lo_sinks, lineop_step, step_left)
    ntouched = 0
    events = 0
    now = 0  # the key of the event being handled

    ntimed = timed_step.shape[0]
    nxt = 0  # the next timed release
    nready = initially_ready(wait, ready)
    t = 0
    next_check = 0
    owed = state.owed
    while True:
        # Start every ready step at time t; an empty step completes at once.
        while nready > 0:
            nready -= 1
            s = ready[nready]
            if begins:
                step_begin[s] = t
            cu = tb_cu[step_tb[s]]
            if step_left[s] == 0:
                if step_compute_ps[s] > 0:  # a compute-only step, on the CU's compute unit
                    begin = max(t, compute_free[cu])
                    compute_free[cu] = begin + step_compute_ps[s]
                    n = push_event(hk, hp, n, compute_free[cu], seq, (s << EV_BITS) | EV_STEP)
                    seq += 1
                else:
                    n, seq, nready = _finish_step(s, t, hk, hp, n, seq, nready, steps, runs)
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
                if issues:
                    msg_issue[m] = t
                start_route(m, cursor, msg_route, route_start)
                n = push_run(hk, hp, n, t + msg_pre_ps[m], seq, m, issue_run[m], runs)
                seq += 1
                if msg_target[m] >= 0:  # data-polled: no fence, delivered once issued
                    n, seq, nready = _line_delivered(
                        msg_lineop[m], t, hk, hp, n, seq, nready, steps, lines, runs
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
            nready = satisfy(timed_step[nxt], wait, ready, nready)
            nxt += 1
            events += 1
            continue
        if n == 0:
            now = -1  # drained: every credit return left counts as handled
            break
        now = hk[0]  # the key of the event handled
        t, payload, n = pop_next(hk, hp, n, runs)
        if stop_ps >= 0 and t > stop_ps:
            if any_unfinished(step_end):
                return events + _due(now, returns), True
            stop_ps = -1  # every step ended in time: run what is left to its end
        if stop_ps >= 0 and events >= next_check:  # or cannot end in time: see its module
            next_check = events + max(CHECK_EVERY, 4 * nres)
            if misses_deadline(res, owed, t, stop_ps):
                return events + _due(now, returns), True
        events += 1
        if n >= PREFETCH_FROM:
            _prefetch_ahead(hp, n, route, res, runs)
        kind = payload & EV_MASK
        arg = payload >> EV_BITS

        if kind == EV_ROUTE:
            m = arg
            p = _load2(cursor, m, POS)
            b = _load(in_vc, m) if flow else -1
            if b >= 0:
                if _load(phase, m) == PH_ARRIVE:
                    _store(arrived, m, t)  # its wait for the next resource counts from here
                    if _load(fifo_head, b) != m:  # behind another message: wait for it to go
                        _store(behind, m, True)
                        continue
                    if _load(hol_ok, m) > t:  # the message ahead's tail is still leaving
                        _store(phase, m, PH_REQUEST)
                        n = push_event(hk, hp, n, _load(hol_ok, m), seq, payload)
                        seq += 1
                        continue
                if p == _load2(cursor, m, END):  # the route ends in this buffer: the sink takes it
                    n, seq = _leave_buffer(m, b, t, 0, t, hk, hp, n, seq, buffers, returns)
                    _store(in_vc, m, -1)
            if p < _load2(cursor, m, END):
                e = _load2(route, p, ROUTE_RES)
                v = -1
                if flow:
                    ph = _load(phase, m)
                    if ph == PH_ARRIVE:
                        _store(arrived, m, t)
                    b = _load(in_vc, m)
                    port = _load(port_free, _load(vc_res, b)) if b >= 0 else 0
                    if b >= 0 and (port > t or _load2(res, e, FREE_AT) > t):
                        if ph != PH_GRANTED:
                            _store(phase, m, PH_REQUEST)
                        if port > t:
                            # The buffer's input port sends one flit at a time: another
                            # VC's message is crossing the switch from it. Ask again then.
                            n = push_event(hk, hp, n, port, seq, payload)
                            seq += 1
                        else:  # e is busy: wait for it in order, not holding the port
                            _append(oq_head, oq_tail, onext, e, m)
                        n, seq = _serve_output(e, t, hk, hp, n, seq, outputs_q)
                        continue
                    if ph == PH_GRANTED:  # woken by a credit, which it already took
                        v = _load(granted_vc, m)
                    else:
                        if _load2(res, e, VCS) > 0:
                            events += _returned(e, now, returns)
                            v = _pick_vc(res, e, vc_start, credit, held, vc_rr)
                            if v < 0:  # every VC downstream is held: wait for one
                                if wq_head[e] < 0:
                                    n = _watch_all(e, hk, hp, n, returns)
                                _append(wq_head, wq_tail, wnext, e, m)
                                n, seq = _serve_output(e, t, hk, hp, n, seq, outputs_q)
                                continue
                            take = _credits_taken(res, e)
                            have = _load(credit, v)
                            if have < take:  # allocated, it waits for v's credits
                                held[v] = m
                                n = _watch(v, hk, hp, n, returns)
                                n, seq = _serve_output(e, t, hk, hp, n, seq, outputs_q)
                                continue
                            _store(credit, v, have - take)
                    _store(phase, m, PH_ARRIVE)
                _store2(cursor, m, POS, p + 1)
                start = _load2(res, e, FREE_AT)
                if start < t:
                    start = t
                elif start - t > _load2(res, e, WAIT_MAX):
                    _store2(res, e, WAIT_MAX, start - t)
                _store2(res, e, FREE_AT, start + _load2(res, e, OCC))
                _store2(res, e, FLITS, _load2(res, e, FLITS) + 1)
                k = _load2(res, e, KIND)
                leave = start + _load2(res, e, LAT)
                if k != LINK:  # most hops are links, which stamp nothing
                    if k == EGRESS:
                        msg_port_in[m] = t
                        msg_port_out[m] = leave
                    elif k == PLANE_OUT:
                        msg_dst_in[m] = leave
                    elif k == STACK:
                        msg_stack_in[m] = t
                if flow:
                    waited = start - _load(arrived, m)
                    if waited > _load2(res, e, WAIT_MAX):  # the wait for a credit counts
                        _store2(res, e, WAIT_MAX, waited)
                    b = _load(in_vc, m)
                    occ = _load2(res, e, OCC)
                    if b >= 0:  # its head leaves the buffer it is in as it starts on e
                        # Its flits cross the switch at the rate they came in at.
                        u = _load(vc_res, b)
                        _store(port_free, u, start + _load2(res, u, OCC))
                        fps = _load2(res, e, FLIT_PS)
                        gap = occ - fps if fps > 0 else 0
                        n, seq = _leave_buffer(
                            m, b, start, gap, start + occ, hk, hp, n, seq, buffers, returns
                        )
                    n, seq = _serve_output(e, t, hk, hp, n, seq, outputs_q)
                    _store(in_vc, m, v)
                    if v >= 0:  # and joins the back of VC v's buffer downstream
                        _store(fifo_next, m, -1)
                        last = _load(fifo_tail, v)
                        if last < 0:
                            _store(fifo_head, v, m)
                            _store(hol_ok, m, _load(vc_ok, v))
                        else:
                            _store(fifo_next, last, m)
                        _store(fifo_tail, v, m)
                n = push_run(hk, hp, n, leave + _load2(route, p, ROUTE_POST), seq, m, e, runs)
                seq += 1
                continue
            # The message has reached the end of its route.
            msg_done[m] = t
            mk = msg_kind[m]
            if mk == FLAG:
                nready = satisfy(msg_target[m], wait, ready, nready)
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
                            n, seq, nready = _finish_step(s, t, hk, hp, n, seq, nready, steps, runs)
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
            n = push_run(hk, hp, n, t + msg_ack_ps[m], seq, m, ack_run[m], runs)
            seq += 1
            a = msg_target[m]
            if a >= 0:  # data-polled: the receivers poll the data, released by its last line
                arrival_left[a] -= 1
                if arrival_left[a] == 0:
                    for k in range(release_start[a], release_start[a + 1]):
                        nready = satisfy(release[k], wait, ready, nready)
        elif kind == EV_COMPUTE:
            lo = arg
            cu = msg_cu[lineop_msgs[lo, 1]]
            _enqueue(qhead, qtail, qnext, cu, lineop_msgs[lo, 1], lineop_msgs[lo, 2])
            ntouched = _touch(cu, is_touched, touched, ntouched)
        elif kind == EV_OUTPUT:
            e = arg
            out_armed[e] = False
            if res[e, FREE_AT] > t:  # taken meanwhile by a message from outside a buffer
                n, seq = _serve_output(e, t, hk, hp, n, seq, outputs_q)
            elif oq_head[e] >= 0:  # the first waiter asks again now
                m = oq_head[e]
                oq_head[e] = onext[m]
                if oq_head[e] < 0:
                    oq_tail[e] = -1
                n = push_event(hk, hp, n, t, seq, (m << EV_BITS) | EV_ROUTE)
                seq += 1
        elif kind == EV_STEP:
            n, seq, nready = _finish_step(arg, t, hk, hp, n, seq, nready, steps, runs)
        elif kind == EV_CREDIT:
            b = arg
            e = vc_res[b]
            events += _returned(e, now, returns)  # the returns due before this one
            take = _credits_taken(res, e)
            credit[b] += take
            m = held[b]
            if m >= 0 and credit[b] >= take:  # the message allocated b can go now
                held[b] = -1
                credit[b] -= take
                granted_vc[m] = b
                phase[m] = PH_GRANTED
                n = push_event(hk, hp, n, t, seq, (m << EV_BITS) | EV_ROUTE)
                seq += 1
            # The waiters are allocated VCs in their order of arrival while one is free.
            while wq_head[e] >= 0:
                v = _pick_vc(res, e, vc_start, credit, held, vc_rr)
                if v < 0:
                    break
                m = wq_head[e]
                wq_head[e] = wnext[m]
                if wq_head[e] < 0:
                    wq_tail[e] = -1
                if credit[v] < take:
                    held[v] = m
                    n = _watch(v, hk, hp, n, returns)
                    continue
                credit[v] -= take
                granted_vc[m] = v
                phase[m] = PH_GRANTED
                n = push_event(hk, hp, n, t, seq, (m << EV_BITS) | EV_ROUTE)
                seq += 1
        else:  # EV_ACK
            m = arg
            cu = msg_cu[m]
            inflight[cu] -= 1
            ntouched = _touch(cu, is_touched, touched, ntouched)
            if msg_target[m] < 0:  # a data-polled line was delivered when issued
                n, seq, nready = _line_delivered(
                    msg_lineop[m], t, hk, hp, n, seq, nready, steps, lines, runs
                )
    return events + _due(now, returns), False

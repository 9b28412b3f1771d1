"""The flow engine's event loop: steps start, their flows drain at max-min fair rates,
steps end, flags and landings release their successors.

A step moves in two phases (``demand``): its fetch flows join the active set when it
starts; once they have all drained, its delivery flows join; once those have drained, the
step ends. A flow is *drained* once its last line operation has been issued through its
resources at the rates it was given, and is done a *tail* later: the zero-load latency
of its slowest line (a fetch and the combination; a fenced delivery and its
acknowledgement). A flow its CU's request window held back (its rate was frozen by the
window) was paced by its round trips, which its drain already counts: it is done at its
drain, or its tail after its start if that is later; and no flow is done before its
*floor* after its start (``rounds``: its CU's window lets its lines through in whole round
trips). A delivery phase starts when the last fetch flow is drained (the CU then issues
deliveries as slots free) and no earlier than the first line could have been fetched and
combined. A step whose fetches all fit in its CU's request window at once (``pipeline``)
overlaps them: its delivery flows join its fetch flows its *delay* after it begins (its
lines' mean fetch), a fetch flow is done only once its last line is delivered too (its
delivery flow's tail later), and the step ends when both are done.

Rates are recomputed (``fairness``) whenever flows join or leave, but not for every one
of a wave of near-simultaneous changes: with ``a`` the age of the oldest active flow, the
drains and events due within ``tolerance * a`` after the next one are handled together.
The flows drain at their own projected times (the others keep their rates until the wave
is over, never faster than max-min fairness allows), the events are then handled in time
order (those the drains caused included), steps they release start at the last one's
time, and the rates are shared again once. A wave then costs one computation instead of
one per change, and no step starts later than a ``tolerance`` fraction of the age of what
is running.

Time is integer picoseconds: drains round up, and an event due before the loop's clock
(possible only inside such a wave) takes effect at the clock.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.engine.flow.fairness import crossings, max_min_rates
from nunasim.engine.flow.waves import leave
from nunasim.engine.jit import jit
from nunasim.engine.kernel.heap import SEQ_BITS, pop_event, push_event
from nunasim.engine.kernel.keyheap import heap_pop, heap_push
from nunasim.engine.kernel.ready import any_unfinished, initially_ready, satisfy


class FlowGraph(NamedTuple):
    """The steps and what releases them, as the loop reads them (one row per step unless
    said otherwise; CSR ``*_start`` arrays have one entry more than their owners)."""

    step_wait: np.ndarray  # waits before a step may start
    succ_start: np.ndarray  # CSR: steps whose waits a step's end satisfies
    succ: np.ndarray
    flag_start: np.ndarray  # CSR: flags a step sends when it ends
    flag_target: np.ndarray  # per flag: the step it releases
    flag_ps: np.ndarray  # per flag: its route's zero-load latency
    step_group_start: np.ndarray  # CSR: a step's groups (flows 2 g and 2 g + 1)
    step_delay: np.ndarray  # > 0: its deliveries start this long after its fetches
    counter_start: np.ndarray  # CSR over flows: the arrival counters a flow lands
    counter_ps: np.ndarray  # per counter: its slowest line's landing after the flow's start
    release_start: np.ndarray  # CSR over counters: steps its last line releases
    release: np.ndarray


class FlowLoads(NamedTuple):
    """The flows and the resources they cross, as the loop reads them."""

    flow_ops: np.ndarray  # line operations a flow issues
    flow_tail_ps: np.ndarray  # its slowest line's zero-load latency after its drain
    flow_floor_ps: np.ndarray  # no flow is done before this long after its start
    entry_start: np.ndarray  # CSR over flows: the resources a flow crosses
    entry_res: np.ndarray
    entry_coef: np.ndarray  # the share of its rate each takes
    nres: int  # resources, the CUs' request windows last
    windows: int  # request windows (one per CU)


EV_SATISFY = 0  # one wait of a step is over
EV_END = 1  # a step has ended
EV_LAND = 2  # a data-polled transfer's last line has landed
EV_DELIVER = 3  # a step's fetches are done: its deliveries start
EV_BITS = 2
EV_MASK = (1 << EV_BITS) - 1


@jit(inline=True)
def _start_phase(s, phase, t, graph, flow_ops, flows, nactive, heap, n, seq):
    """Flows of ``phase`` of step ``s`` join the active set at ``t``; a phase with nothing to
    move is over at once (the step's deliveries start, or it ends). A step that overlaps
    (``step_delay`` > 0) starts its deliveries its delay after its fetches, and ends once
    both are done. ``flows`` is the loop's flow and step bookkeeping (see ``run_flows``),
    ``heap`` its event heap. Returns the active count, the queue's size and the next
    sequence number."""
    step_group_start, step_delay = graph.step_group_start, graph.step_delay
    flow_begin, remaining, active, step_left, step_done = flows
    hk, hp = heap
    overlapping = step_delay[s] > 0
    if phase == 0 or not overlapping:
        step_done[s] = t
    joined = 0
    for g in range(step_group_start[s], step_group_start[s + 1]):
        f = 2 * g + phase
        if flow_ops[f] > 0:
            flow_begin[f] = t
            remaining[f] = flow_ops[f]
            active[nactive + joined] = f
            joined += 1
    if overlapping:
        if phase == 0:  # the step's flows left to drain: its fetches and its deliveries
            step_left[s] = joined
            for g in range(step_group_start[s], step_group_start[s + 1]):
                if flow_ops[2 * g + 1] > 0:
                    step_left[s] += 1
            n = push_event(hk, hp, n, t + step_delay[s], seq, (s << EV_BITS) | EV_DELIVER)
            seq += 1
        return nactive + joined, n, seq
    step_left[s] = joined
    if joined == 0:
        kind = EV_DELIVER if phase == 0 else EV_END
        n = push_event(hk, hp, n, t, seq, (s << EV_BITS) | kind)
        seq += 1
    return nactive + joined, n, seq


@jit
def run_flows(graph, loads, tolerance, zero_load, stop_ps):
    """Run every step; returns each step's begin and end, each flow's begin and drain,
    the number of events handled and of rate computations, the (flow, resource) pairs
    those computations shared, summed, and whether the run gave up at ``stop_ps``: once
    the next drain or event is due after it with a step unfinished (everything left
    happens later, so that step would end later; -1: never). Flow ``2 g`` is group
    ``g``'s fetches, ``2 g + 1`` its deliveries; resources ``nres - 2 * windows`` to
    ``nres - windows`` are the CUs' request windows."""
    step_wait, succ_start, succ = graph.step_wait, graph.succ_start, graph.succ
    flag_start, flag_target, flag_ps = graph.flag_start, graph.flag_target, graph.flag_ps
    step_group_start, counter_ps = graph.step_group_start, graph.counter_ps
    release_start, release = graph.release_start, graph.release
    flow_ops = loads.flow_ops
    entry_start, entry_res, entry_coef = loads.entry_start, loads.entry_res, loads.entry_coef
    nres, windows = loads.nres, loads.windows
    nsteps = step_wait.shape[0]
    nflows = flow_ops.shape[0]
    wait = step_wait.copy()
    step_begin = np.full(nsteps, -1, dtype=np.int64)
    step_end = np.full(nsteps, -1, dtype=np.int64)
    step_left = np.zeros(nsteps, dtype=np.int64)
    step_done = np.zeros(nsteps, dtype=np.int64)  # latest end of its phase's flows so far
    flow_step = np.empty(nflows, dtype=np.int64)
    for s in range(nsteps):
        for g in range(step_group_start[s], step_group_start[s + 1]):
            flow_step[2 * g] = s
            flow_step[2 * g + 1] = s
    flow_begin = np.full(nflows, -1, dtype=np.int64)
    flow_drain = np.full(nflows, -1, dtype=np.int64)
    remaining = np.zeros(nflows, dtype=np.float64)
    rate = np.zeros(nflows, dtype=np.float64)
    bound = np.full(nflows, -1, dtype=np.int64)
    active = np.empty(nflows, dtype=np.int64)
    nactive = 0
    position = np.zeros(nflows, dtype=np.int64)  # in ``active``, set by ``max_min_rates``
    # the active flows by projected drain, as of the last rate computation
    drain_at = np.empty(nflows, dtype=np.float64)
    drain_flow = np.empty(nflows, dtype=np.int64)
    ndrains = 0
    wave = np.empty(nflows, dtype=np.int64)  # positions of the flows leaving in a wave
    leaving = np.zeros(nflows, dtype=np.bool_)
    order = np.empty(nflows, dtype=np.int64)  # the flows of a wave, as they leave
    if zero_load:  # no rates to share
        crossing_start, crossing = crossings(entry_start[:1], entry_res[:0], nres)
    else:
        crossing_start, crossing = crossings(entry_start, entry_res, nres)
    cap = 2 * nsteps + flag_target.shape[0] + counter_ps.shape[0] + release.shape[0] + 2
    hk = np.empty(cap, dtype=np.int64)
    hp = np.empty(cap, dtype=np.int64)
    n = 0
    seq = 0
    # What the helpers share with the loop (tuples of the same arrays, not copies).
    heap = (hk, hp)
    flows = (flow_begin, remaining, active, step_left, step_done)
    drains = (flow_step, flow_drain, flow_begin, step_done, step_left)
    ready = np.empty(nsteps, dtype=np.int64)
    nready = initially_ready(wait, ready)
    t = 0
    t_rates = 0  # when the rates last changed
    first_drain = np.inf
    oldest = 0
    dirty = False
    events = 0
    computations = 0
    pairs = 0  # (flow, resource) pairs, summed over the computations
    window_first, window_end = nres - 2 * windows, nres - windows
    cut = False
    while True:
        # Start every ready step at t: its fetch flows join the active set.
        while nready > 0:
            nready -= 1
            s = ready[nready]
            step_begin[s] = t
            before = nactive
            nactive, n, seq = _start_phase(s, 0, t, graph, flow_ops, flows, nactive, heap, n, seq)
            dirty = dirty or nactive > before
        if zero_load:  # every flow drains as it starts
            for j in range(nactive):
                f = active[j]
                n, seq = _drain(f, t, False, graph, loads, drains, heap, n, seq)
            nactive = 0
        if dirty and nactive > 0:
            # ``remaining`` is as of ``t_rates``, when the rates last changed (a flow
            # that joined since has no rate yet): bring it to ``t`` and share again.
            for j in range(nactive):
                f = active[j]
                remaining[f] -= rate[f] * (t - t_rates)
            t_rates = t
            pairs += max_min_rates(
                active,
                nactive,
                entry_start,
                entry_res,
                entry_coef,
                crossing_start,
                crossing,
                position,
                rate,
                bound,
            )
            computations += 1
            # Until the next computation the rates hold, so do the first drain and the
            # earliest start of an active flow.
            first_drain = np.inf
            oldest = t
            ndrains = 0
            for j in range(nactive):
                f = active[j]
                finish = t_rates + remaining[f] / rate[f]
                first_drain = min(first_drain, finish)
                oldest = min(oldest, flow_begin[f])
                ndrains = heap_push(drain_at, drain_flow, ndrains, finish, f)
        dirty = False
        if nactive == 0 and n == 0:
            break
        if nactive == 0:
            first_drain = np.inf
            oldest = t
        # A wave: the next drain or event, and every drain and event due within the
        # tolerance after it (a fraction of the age of the oldest running flow). Drains
        # leave at their own times (the rates hold until the wave is over, so no flow runs
        # faster than max-min fairness allows), then the events are handled in time
        # order, those the drains caused included, and the rates are shared again once.
        first = first_drain
        if n > 0:
            first = min(first, hk[0] >> SEQ_BITS)
        if stop_ps >= 0 and first > stop_ps:
            if any_unfinished(step_end):
                cut = True
                break
            stop_ps = -1  # every step ended in time: run what is left to its end
        late = max(first - oldest, 0)  # an event may be due before the clock
        until = np.int64(np.ceil(first + tolerance * late))
        # The flows due by ``until`` leave in the order a scan of ``active`` would take
        # them (``waves``).
        last = t
        nwave = 0
        while ndrains > 0 and drain_at[0] <= until:
            finish, f, ndrains = heap_pop(drain_at, drain_flow, ndrains)
            wave[nwave] = position[f]
            nwave += 1
            leaving[f] = True
        if nwave > 0:
            nactive = leave(active, nactive, position, leaving, wave, nwave, order)
            dirty = True
        for k in range(nwave):
            f = order[k]
            finish = t_rates + remaining[f] / rate[f]
            windowed = window_first <= bound[f] < window_end
            n, seq = _drain(
                f, np.int64(np.ceil(finish)), windowed, graph, loads, drains, heap, n, seq
            )
            remaining[f] = 0.0
            last = max(last, np.int64(np.ceil(finish)))
        while n > 0 and (hk[0] >> SEQ_BITS) <= until:
            te, payload, n = pop_event(hk, hp, n)
            events += 1
            if te > t:
                t = te
            kind = payload & EV_MASK
            arg = payload >> EV_BITS
            if kind == EV_SATISFY:
                wait[arg] -= 1
                if wait[arg] == 0:
                    ready[nready] = arg
                    nready += 1
            elif kind == EV_DELIVER:
                before = nactive
                nactive, n, seq = _start_phase(
                    arg, 1, t, graph, flow_ops, flows, nactive, heap, n, seq
                )
                dirty = dirty or nactive > before
            elif kind == EV_END:
                s = arg
                step_end[s] = te
                for k in range(flag_start[s], flag_start[s + 1]):
                    n = push_event(
                        hk,
                        hp,
                        n,
                        max(te + flag_ps[k], t),
                        seq,
                        (flag_target[k] << EV_BITS) | EV_SATISFY,
                    )
                    seq += 1
                for k in range(succ_start[s], succ_start[s + 1]):
                    nready = satisfy(succ[k], wait, ready, nready)
            else:  # EV_LAND
                for k in range(release_start[arg], release_start[arg + 1]):
                    nready = satisfy(release[k], wait, ready, nready)
        t = max(t, last)
    return step_begin, step_end, flow_begin, flow_drain, events, computations, pairs, cut


@jit(inline=True)
def _drain(f, t, windowed, graph, loads, state, heap, n, seq):
    """Flow ``f`` has issued its last line operation at ``t``: its landings are due, and
    when its phase's last flow is done the step's next phase starts (or the step ends).
    ``state`` is the loop's drain bookkeeping (see ``run_flows``), ``heap`` its event heap."""
    counter_start, counter_ps, step_delay = graph.counter_start, graph.counter_ps, graph.step_delay
    flow_tail_ps, flow_floor_ps = loads.flow_tail_ps, loads.flow_floor_ps
    flow_step, flow_drain, flow_begin, step_done, step_left = state
    hk, hp = heap
    flow_drain[f] = t
    for c in range(counter_start[f], counter_start[f + 1]):
        land = max(t, flow_begin[f] + counter_ps[c]) if windowed else t + counter_ps[c]
        n = push_event(hk, hp, n, land, seq, (c << EV_BITS) | EV_LAND)
        seq += 1
    s = flow_step[f]
    # A fetch phase's deliveries start once fetched, not before one line could be; a
    # window-paced flow's drain already counts its round trips.
    if f % 2 == 0 or windowed:
        done = max(t, flow_begin[f] + flow_tail_ps[f])
    else:
        done = t + flow_tail_ps[f]
    # No sooner than its CU's request window lets its lines through in whole round trips.
    done = max(done, flow_begin[f] + flow_floor_ps[f])
    overlapping = step_delay[s] > 0
    if overlapping and f % 2 == 0:  # its last line is yet to be delivered
        done += flow_tail_ps[f + 1]
    step_done[s] = max(step_done[s], done)
    step_left[s] -= 1
    if step_left[s] == 0:
        kind = EV_DELIVER if f % 2 == 0 and not overlapping else EV_END
        n = push_event(hk, hp, n, step_done[s], seq, (s << EV_BITS) | kind)
        seq += 1
    return n, seq

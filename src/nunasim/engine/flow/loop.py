"""The flow engine's event loop: steps start, their flows drain at max-min fair rates,
steps end, flags and landings release their successors.

A flow joins the active set when its step starts and is *drained* once its line
operations have all been issued through its resources at the rates it was given; its step
ends a tail later (the zero-load time of its slowest line operation, acknowledgement
included), after all of its flows. Rates are recomputed (``fairness``) whenever flows join
or leave. Flows whose projected drains fall within ``tolerance`` of the current rate
epoch's length after the first one leave together, each at its own projected time: the
others keep their rates until then (never faster than max-min fairness allows), and a
wave of near-simultaneous drains costs one recomputation instead of one per flow.

Time is integer picoseconds: drains round up, and an event due before the loop's clock
(possible only inside such a wave) takes effect at the clock.
"""

from __future__ import annotations

import numpy as np

from nunasim.engine.flow.fairness import max_min_rates
from nunasim.engine.jit import jit
from nunasim.engine.packet.core import SEQ_BITS, _pop, _push

EV_SATISFY = 0  # one wait of a step is over
EV_END = 1  # a step has ended
EV_LAND = 2  # a data-polled transfer's last line has landed
EV_BITS = 2
EV_MASK = (1 << EV_BITS) - 1


@jit
def run_flows(
    step_wait, succ_start, succ, flag_start, flag_target, flag_ps,
    step_flow_start, flow_ops, flow_tail_ps, counter_start, counter_ps, release_start, release,
    entry_start, entry_res, entry_coef, nres, tolerance, zero_load,
):
    """Run every step; returns each step's begin and end, each flow's begin and drain,
    and the number of events handled and of rate computations."""
    nsteps = step_wait.shape[0]
    nflows = flow_ops.shape[0]
    wait = step_wait.copy()
    step_begin = np.full(nsteps, -1, dtype=np.int64)
    step_end = np.full(nsteps, -1, dtype=np.int64)
    step_left = np.zeros(nsteps, dtype=np.int64)
    step_done = np.zeros(nsteps, dtype=np.int64)  # latest end of its flows so far
    flow_step = np.empty(nflows, dtype=np.int64)
    for s in range(nsteps):
        for f in range(step_flow_start[s], step_flow_start[s + 1]):
            flow_step[f] = s
    flow_begin = np.full(nflows, -1, dtype=np.int64)
    flow_drain = np.full(nflows, -1, dtype=np.int64)
    remaining = flow_ops.astype(np.float64)
    rate = np.zeros(nflows, dtype=np.float64)
    active = np.empty(nflows, dtype=np.int64)
    nactive = 0
    cap = nsteps + flag_target.shape[0] + counter_ps.shape[0] + release.shape[0] + 2
    hk = np.empty(cap, dtype=np.int64)
    hp = np.empty(cap, dtype=np.int64)
    n = 0
    seq = 0
    ready = np.empty(nsteps, dtype=np.int64)
    nready = 0
    for s in range(nsteps):
        if wait[s] == 0:
            ready[nready] = s
            nready += 1
    t = 0
    epoch = 0  # when the rates were last computed
    dirty = False
    events = 0
    computations = 0
    while True:
        # Start every ready step at t; its flows join the active set.
        while nready > 0:
            nready -= 1
            s = ready[nready]
            step_begin[s] = t
            step_done[s] = t
            step_left[s] = step_flow_start[s + 1] - step_flow_start[s]
            if step_left[s] == 0:
                n = _push(hk, hp, n, t, seq, (s << EV_BITS) | EV_END)
                seq += 1
                continue
            for f in range(step_flow_start[s], step_flow_start[s + 1]):
                flow_begin[f] = t
                if zero_load:
                    remaining[f] = 0.0
                active[nactive] = f
                nactive += 1
                dirty = True
        # Flows with nothing left (zero load) drain at once.
        j = 0
        while j < nactive:
            f = active[j]
            if remaining[f] <= 0.0:
                n, seq = _drain(f, t, flow_step, flow_drain, flow_tail_ps, step_done, step_left,
                                counter_start, counter_ps, hk, hp, n, seq)
                nactive -= 1
                active[j] = active[nactive]
            else:
                j += 1
        if dirty and nactive > 0:
            max_min_rates(active, nactive, entry_start, entry_res, entry_coef, nres, rate)
            computations += 1
            epoch = t
        dirty = False
        next_event = hk[0] >> SEQ_BITS if n > 0 else -1
        if nactive == 0 and n == 0:
            break
        first_drain = np.inf
        for j in range(nactive):
            f = active[j]
            first_drain = min(first_drain, t + remaining[f] / rate[f])
        if n > 0 and (nactive == 0 or next_event <= first_drain):
            # the next event comes first: advance the flows to it and handle it
            te, payload, n = _pop(hk, hp, n)
            events += 1
            if te > t:
                for j in range(nactive):
                    f = active[j]
                    remaining[f] -= rate[f] * (te - t)
                t = te
            kind = payload & EV_MASK
            arg = payload >> EV_BITS
            if kind == EV_SATISFY:
                wait[arg] -= 1
                if wait[arg] == 0:
                    ready[nready] = arg
                    nready += 1
            elif kind == EV_END:
                s = arg
                step_end[s] = te
                for k in range(flag_start[s], flag_start[s + 1]):
                    n = _push(hk, hp, n, max(te + flag_ps[k], t), seq,
                              (flag_target[k] << EV_BITS) | EV_SATISFY)
                    seq += 1
                for k in range(succ_start[s], succ_start[s + 1]):
                    w = succ[k]
                    wait[w] -= 1
                    if wait[w] == 0:
                        ready[nready] = w
                        nready += 1
            else:  # EV_LAND
                for k in range(release_start[arg], release_start[arg + 1]):
                    n = _push(hk, hp, n, t, seq, (release[k] << EV_BITS) | EV_SATISFY)
                    seq += 1
            continue
        # Drains come first: the earliest and those within the tolerance after it leave.
        horizon = first_drain + tolerance * (first_drain - epoch)
        until = np.int64(np.ceil(horizon))
        if n > 0 and next_event < until:
            until = next_event
        j = 0
        while j < nactive:
            f = active[j]
            finish = t + remaining[f] / rate[f]
            if finish <= until:
                n, seq = _drain(f, np.int64(np.ceil(finish)), flow_step, flow_drain,
                                flow_tail_ps, step_done, step_left, counter_start, counter_ps,
                                hk, hp, n, seq)
                remaining[f] = 0.0
                nactive -= 1
                active[j] = active[nactive]
            else:
                remaining[f] -= rate[f] * (until - t)
                j += 1
        t = max(t, until)
        dirty = True
    return step_begin, step_end, flow_begin, flow_drain, events, computations


@jit(inline=True)
def _drain(f, t, flow_step, flow_drain, flow_tail_ps, step_done, step_left,
           counter_start, counter_ps, hk, hp, n, seq):
    """Flow ``f`` has issued its last line operation at ``t``: its landings are due, and
    its step ends when its last flow has."""
    flow_drain[f] = t
    for c in range(counter_start[f], counter_start[f + 1]):
        n = _push(hk, hp, n, t + counter_ps[c], seq, (c << EV_BITS) | EV_LAND)
        seq += 1
    s = flow_step[f]
    step_done[s] = max(step_done[s], t + flow_tail_ps[f])
    step_left[s] -= 1
    if step_left[s] == 0:
        n = _push(hk, hp, n, step_done[s], seq, (s << EV_BITS) | EV_END)
        seq += 1
    return n, seq

"""The packet core's step bookkeeping: the CUs' issue queues, steps' waits, their ends and
their line operations' deliveries.

Inlined into the compiled loop (``nunasim.engine.packet.core``); after a change here clear
numba's caches (see ``nunasim.engine.packet.events``).
"""

from __future__ import annotations

from nunasim.engine.jit import jit
from nunasim.engine.kernel.ready import satisfy
from nunasim.engine.packet.credits import _append
from nunasim.engine.packet.runs import push_run, start_route


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
        _append(qhead, qtail, qnext, cu, m)


@jit(inline=True)
def _finish_step(s, t, hk, hp, n, seq, nready, steps, runs):
    """Step ``s`` is done at ``t``: send its flags, release its successors. ``steps`` holds
    the step bookkeeping arrays (see ``run``), ``runs`` the event queue's runs."""
    step_end, flag_start, flag_msg, msg_issue, msg_pre_ps, issue_run, succ_start = steps[:7]
    succ, wait, ready, msg_route, route_start = steps[7:]
    step_end[s] = t
    for k in range(flag_start[s], flag_start[s + 1]):
        f = flag_msg[k]
        if msg_issue.shape[0] > 0:  # not left out
            msg_issue[f] = t
        start_route(f, runs[3], msg_route, route_start)
        n = push_run(hk, hp, n, t + msg_pre_ps[f], seq, f, issue_run[f], runs)
        seq += 1
    for k in range(succ_start[s], succ_start[s + 1]):
        nready = satisfy(succ[k], wait, ready, nready)
    return n, seq, nready


@jit(inline=True)
def _line_delivered(lo, t, hk, hp, n, seq, nready, steps, lines, runs):
    """One sink of line operation ``lo`` is delivered at ``t``; the last completes the line
    operation, and the last line operation its step. ``lines`` holds the line operations'
    bookkeeping arrays (see ``run``)."""
    lo_sinks, lineop_step, step_left = lines
    lo_sinks[lo] -= 1
    if lo_sinks[lo] == 0:
        s = lineop_step[lo]
        step_left[s] -= 1
        if step_left[s] == 0:
            n, seq, nready = _finish_step(s, t, hk, hp, n, seq, nready, steps, runs)
    return n, seq, nready

"""The analytic oracle: zero-load latencies and lower bounds no simulation may beat.

- ``store_latency_ps``: one remote store at zero load, from its injection into the source
  NoC (after the CU's L1 latency) to the completion of the write at the destination stack:
  source NoC to the egress port, one flit on the port, the plane, destination NoC from the
  ingress port (same ordinal) to the stack, the stack's access. Computed from the hardware
  description alone, independently of the engine's routes.
- ``lower_bound_ps``: the largest of (a) the zero-load critical path of the plan's steps,
  where a step takes at least its slowest line's fetch, reduction and delivery (with
  acknowledgement; a data-polled line is delivered once issued) and a flag takes its
  zero-load route (a data-polled transfer releases its receiver when its slowest line
  lands: the step's start, that line's fetch and reduction, and its route), and (b) for
  every resource the departure of the last of its n flits: (n - 1) occupancies and one
  latency (counting the collective's messages only, not a background GEMM's).
"""

from __future__ import annotations

import numpy as np

from nunasim.engine.jit import jit
from nunasim.engine.kernel.ready import initially_ready
from nunasim.engine.lowering.lower import Lowered
from nunasim.hardware import Pod


def store_latency_ps(pod: Pod, cu_router: int, port: int, stack: int) -> int:
    return pod.store_trip_at(cu_router, port, stack).after_l1_ps


def route_latency_ps(lowered: Lowered) -> np.ndarray:
    """Zero-load time of every message's route, from issue to its end."""
    # Routes are consecutive runs of entries (two at least): each total is a difference of
    # running sums, computed in place (the entries are most of a lowered scenario).
    running = lowered.resources.lat[lowered.route]
    running += lowered.route_post_ps
    np.cumsum(running, out=running)
    start = lowered.route_start
    before = np.where(start[:-1] > 0, running[np.maximum(start[:-1] - 1, 0)], 0)
    return running[start[1:] - 1] - before + lowered.msg_pre_ps


def critical_path_ps(lowered: Lowered) -> int:
    """The collective's zero-load critical path: its last step's end (``step_ends_ps``)."""
    end = step_ends_ps(lowered)
    collective = ~lowered.step_background
    return int(end[collective].max()) if collective.any() else 0


def step_ends_ps(lowered: Lowered) -> np.ndarray:
    """Each step's end on the zero-load critical path: nothing waits for a resource."""
    lo = lowered
    route = route_latency_ps(lo)
    # Per line operation: its slowest fetch, plus its reduction, then its slowest fenced
    # delivery (with acknowledgement); a step takes its slowest operation.
    op = lo.msg_lineop
    data = op >= 0
    source = np.zeros(lo.messages, dtype=bool)
    source[data] = np.arange(lo.messages)[data] < lo.lineop_msgs[op[data], 1]
    sink = data & ~source
    fetch = np.zeros(len(lo.lineop_step), dtype=np.int64)
    np.maximum.at(fetch, op[source], route[source])
    issued = fetch + lo.lineop_compute_ps
    polled = sink & (lo.msg_target >= 0)
    fenced = sink & ~polled
    deliver = np.zeros(len(lo.lineop_step), dtype=np.int64)
    np.maximum.at(deliver, op[fenced], route[fenced] + lo.msg_ack_ps[fenced])
    duration = np.zeros(lo.steps, dtype=np.int64)
    np.maximum.at(duration, lo.lineop_step, issued + deliver)
    # per arrival counter: its step, and its slowest line's landing after the step's start
    arrival_step = np.full(len(lo.arrival_lines), -1, dtype=np.int64)
    arrival_at = np.zeros(len(lo.arrival_lines), dtype=np.int64)
    counter = lo.msg_target[polled]
    arrival_step[counter] = lo.lineop_step[op[polled]]
    np.maximum.at(arrival_at, counter, issued[op[polled]] + route[polled])
    # Per step, the arrival counters whose slowest line it sends (CSR), in counter order.
    landing = np.nonzero(arrival_step >= 0)[0]
    landing = landing[np.argsort(arrival_step[landing], kind="stable")]
    landing_start = np.zeros(lo.steps + 1, dtype=np.int64)
    np.cumsum(np.bincount(arrival_step[landing], minlength=lo.steps), out=landing_start[1:])
    return _walk(
        lo.step_wait.astype(np.int64),
        duration,
        lo.succ_start,
        lo.succ,
        lo.flag_start,
        lo.msg_target[lo.flag_msg],
        route[lo.flag_msg],
        landing_start,
        landing,
        arrival_at[landing],
        lo.release_start,
        lo.release,
    )


@jit
def _walk(
    waiting: np.ndarray,
    took: np.ndarray,
    succ_start: np.ndarray,
    succ: np.ndarray,
    flag_start: np.ndarray,
    flag_target: np.ndarray,
    flag_route: np.ndarray,
    landing_start: np.ndarray,
    landing: np.ndarray,
    landing_at: np.ndarray,
    release_start: np.ndarray,
    release: np.ndarray,
) -> np.ndarray:
    """Each step's end on the zero-load critical path: a step starts when the last of its
    waits is released (``waiting``, consumed) and takes ``took``. Its end releases its
    successors; each flag it sends releases its receiver a route later; each arrival
    counter whose slowest line it sends releases that counter's steps when the line lands
    (``landing_at`` after the step's start)."""
    steps = len(took)
    start = np.zeros(steps, dtype=np.int64)
    end = np.zeros(steps, dtype=np.int64)
    ready = np.empty(steps, dtype=np.int64)
    top = initially_ready(waiting, ready)
    while top > 0:
        top -= 1
        s = ready[top]
        done = start[s] + took[s]
        end[s] = done
        for i in range(succ_start[s], succ_start[s + 1]):
            top = _release(succ[i], done, start, waiting, ready, top)
        for k in range(flag_start[s], flag_start[s + 1]):
            top = _release(flag_target[k], done + flag_route[k], start, waiting, ready, top)
        for i in range(landing_start[s], landing_start[s + 1]):
            a = landing[i]
            at = start[s] + landing_at[i]
            for j in range(release_start[a], release_start[a + 1]):
                top = _release(release[j], at, start, waiting, ready, top)
    return end


@jit(inline=True)
def _release(
    w: int, at: int, start: np.ndarray, waiting: np.ndarray, ready: np.ndarray, top: int
) -> int:
    if at > start[w]:
        start[w] = at
    waiting[w] -= 1
    if waiting[w] == 0:
        ready[top] = w
        top += 1
    return top


def lower_bound_ps(lowered: Lowered) -> int:
    lo = lowered
    # Only the collective's own messages: background work may finish after it.
    owner_step = np.where(lo.msg_lineop >= 0, lo.lineop_step[np.maximum(lo.msg_lineop, 0)], -1)
    flag_owner = np.repeat(np.arange(lo.steps), np.diff(lo.flag_start))
    owner_step[lo.flag_msg] = flag_owner
    mine = ~lo.step_background[owner_step]
    entries = lo.route if mine.all() else lo.route[np.repeat(mine, np.diff(lo.route_start))]
    flits = np.bincount(entries, minlength=len(lo.resources.occ))
    # The last of n flits through a resource starts at least (n - 1) occupancies after the
    # first and leaves after the resource's latency; the run ends after that.
    used = flits > 0
    resource = (
        int(((flits[used] - 1) * lo.resources.occ[used] + lo.resources.lat[used]).max())
        if used.any()
        else 0
    )
    return max(critical_path_ps(lo), resource)

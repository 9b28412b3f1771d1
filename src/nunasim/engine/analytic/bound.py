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
- ``window_bound_ps``: a bound of the packet core's alone, from its CUs' request windows;
  the threadblock search skips with it too, and it is not reported (``bounds_ps``).
"""

from __future__ import annotations

import numpy as np

from nunasim.engine.jit import jit
from nunasim.engine.kernel.kinds import FLAG, LOAD
from nunasim.engine.kernel.ready import initially_ready
from nunasim.engine.lowering.lower import Lowered
from nunasim.hardware import Pod
from nunasim.jit import scatter_at


def store_latency_ps(pod: Pod, cu_router: int, port: int, stack: int) -> int:
    return pod.store_trip_at(cu_router, port, stack).after_l1_ps


def route_latency_ps(lowered: Lowered) -> np.ndarray:
    """Zero-load time of every message's route, from issue to its end."""
    return route_sums(lowered, np.zeros(lowered.messages, dtype=np.bool_))[0]


def route_sums(lowered: Lowered, counted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every message's zero-load route time (``route_latency_ps``), and how many flits
    each resource carries of the messages ``counted`` marks: one compiled pass over the
    route entries, which are most of a lowered scenario."""
    lo = lowered
    return _route_sums(
        lo.route,
        lo.route_start,
        lo.route_post_ps,
        lo.resources.lat,
        lo.msg_pre_ps,
        counted,
    )


@jit
def _route_sums(
    route: np.ndarray,
    route_start: np.ndarray,
    route_post: np.ndarray,
    lat: np.ndarray,
    pre: np.ndarray,
    counted: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    messages = route_start.shape[0] - 1
    trip = np.empty(messages, dtype=np.int64)
    flits = np.zeros(lat.shape[0], dtype=np.int64)
    for m in range(messages):
        total = pre[m]
        for p in range(route_start[m], route_start[m + 1]):
            e = route[p]
            total += lat[e] + route_post[p]
            if counted[m]:
                flits[e] += 1
        trip[m] = total
    return trip, flits


def critical_path_ps(lowered: Lowered, route: np.ndarray | None = None) -> int:
    """The collective's zero-load critical path: its last step's end (``step_ends_ps``)."""
    end = step_ends_ps(lowered, route)
    collective = ~lowered.step_background
    return int(end[collective].max()) if collective.any() else 0


def step_ends_ps(lowered: Lowered, route: np.ndarray | None = None) -> np.ndarray:
    """Each step's end on the zero-load critical path: nothing waits for a resource.
    ``route``: the messages' ``route_latency_ps``, if known."""
    lo = lowered
    route = route_latency_ps(lo) if route is None else route
    # Per line operation: its slowest fetch, plus its reduction, then its slowest fenced
    # delivery (with acknowledgement); a step takes its slowest operation.
    op = lo.msg_lineop
    data = op >= 0
    source = np.zeros(lo.messages, dtype=bool)
    source[data] = np.arange(lo.messages)[data] < lo.lineop_msgs[op[data], 1]
    sink = data & ~source
    fetch = np.zeros(len(lo.lineop_step), dtype=np.int64)
    scatter_at(np.maximum, fetch, op[source], route[source])
    issued = fetch + lo.lineop_compute_ps
    polled = sink & (lo.msg_target >= 0)
    fenced = sink & ~polled
    deliver = np.zeros(len(lo.lineop_step), dtype=np.int64)
    scatter_at(np.maximum, deliver, op[fenced], route[fenced] + lo.msg_ack_ps[fenced])
    duration = np.zeros(lo.steps, dtype=np.int64)
    scatter_at(np.maximum, duration, lo.lineop_step, issued + deliver)
    # per arrival counter: its step, and its slowest line's landing after the step's start
    arrival_step = np.full(len(lo.arrival_lines), -1, dtype=np.int64)
    arrival_at = np.zeros(len(lo.arrival_lines), dtype=np.int64)
    counter = lo.msg_target[polled]
    arrival_step[counter] = lo.lineop_step[op[polled]]
    scatter_at(np.maximum, arrival_at, counter, issued[op[polled]] + route[polled])
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


def collective_messages(lowered: Lowered) -> np.ndarray:
    """Which messages are the collective's own (a background GEMM's may finish after it)."""
    lo = lowered
    owner_step = np.where(lo.msg_lineop >= 0, lo.lineop_step[np.maximum(lo.msg_lineop, 0)], -1)
    flag_owner = np.repeat(np.arange(lo.steps), np.diff(lo.flag_start))
    owner_step[lo.flag_msg] = flag_owner
    return ~lo.step_background[owner_step]


def lower_bound_ps(lowered: Lowered) -> int:
    return bounds_ps(lowered)[0]


def bounds_ps(lowered: Lowered) -> tuple[int, int]:
    """``lower_bound_ps``, and the window bound (``window_bound_ps``) beside it."""
    lo = lowered
    mine = collective_messages(lo)
    route, flits = route_sums(lo, mine)
    # The last of n flits through a resource starts at least (n - 1) occupancies after the
    # first and leaves after the resource's latency; the run ends after that.
    used = flits > 0
    resource = (
        int(((flits[used] - 1) * lo.resources.occ[used] + lo.resources.lat[used]).max())
        if used.any()
        else 0
    )
    return max(critical_path_ps(lo, route), resource), window_bound_ps(lo, route, mine)


def window_bound_ps(lowered: Lowered, route: np.ndarray, mine: np.ndarray) -> int:
    """A bound of the packet core's, from its CUs' windows: a CU has at most ``window``
    requests out, and each of the collective's reads and loads holds one of them from its
    issue to its data's return, each write and store to its acknowledgement, at least
    their zero-load times (``route``) and the acknowledgement's; so no run ends before
    a CU's total of those times over ``window`` (flags hold none; a data-polled store
    whose arrival releases no step is left out, as nothing waits for it)."""
    lo = lowered
    data = mine & (lo.msg_kind != FLAG)
    target = lo.msg_target
    polled = data & (target >= 0)
    releases = np.diff(lo.release_start)
    data[polled] = releases[target[polled]] > 0
    slot = route[data] + np.where(lo.msg_kind[data] > LOAD, lo.msg_ack_ps[data], 0)
    if not len(slot):
        return 0
    held = np.zeros(int(lo.msg_cu.max()) + 1, dtype=np.int64)
    scatter_at(np.add, held, lo.msg_cu[data], slot)
    return int(held.max()) // max(lo.window, 1)

"""The working state of the packet core's event loop, allocated before the loop starts.

The loop (``nunasim.engine.packet.core``) is compiled without numba's reference counting
(``jit(nrt=False)``): it allocates nothing, and every array it works on comes in here, made
with numpy. numba otherwise counts references to arrays as they are passed around, and the
loop hands its arrays, in tuples, to dozens of inlined helpers on every event: without the
counting the loop runs faster and the results are the same to the bit
(docs/engine-measured.md, "Without reference counting").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from nunasim.engine.kernel.rows import BUF_FLITS, VCS
from nunasim.engine.packet.progress_bound import OWED_FIELDS, route_loads
from nunasim.engine.packet.runs import (
    CLOSED,
    CURSOR_FIELDS,
    EMPTY,
    RUNS_FROM_MESSAGES,
    run_classes,
)
from nunasim.jit import scatter_at

if TYPE_CHECKING:  # the core imports this module
    from nunasim.engine.packet.core import CoreInputs


class LoopState(NamedTuple):
    """Every array the loop reads and writes beside its inputs and outputs, as it starts."""

    # steps and line operations: waits left, arrivals left, sources and sinks left per line
    # operation, line operations left per step, the steps ready to start
    wait: np.ndarray
    arrival_left: np.ndarray
    lo_sources: np.ndarray
    lo_sinks: np.ndarray
    step_left: np.ndarray
    ready: np.ndarray
    # CUs: requests out, compute free from, issue queues (linked through messages), the CUs
    # whose queue grew or window opened
    inflight: np.ndarray
    compute_free: np.ndarray
    qhead: np.ndarray
    qtail: np.ndarray
    qnext: np.ndarray
    touched: np.ndarray
    is_touched: np.ndarray
    # each message's row (``runs``: POS, END, NEXT, NEXT_KEY): its next route entry, its
    # route's end, the next message of its event's run and that event's key, in one cache
    # line for the event that reads them
    cursor: np.ndarray
    # credit flow control: VC v (resource e's are vc_start[e] .. vc_start[e + 1] - 1) of the
    # buffer fed by resource vc_res[v] has credit[v] free flit slots and holds a FIFO of
    # messages; the rest as the loop's comments say. Per message arrays are empty without
    # flow-controlled resources.
    vc_start: np.ndarray
    vc_res: np.ndarray
    credit: np.ndarray
    fifo_head: np.ndarray
    fifo_tail: np.ndarray
    fifo_next: np.ndarray
    in_vc: np.ndarray
    behind: np.ndarray
    hol_ok: np.ndarray
    phase: np.ndarray
    granted_vc: np.ndarray
    vc_ok: np.ndarray
    held: np.ndarray
    vc_rr: np.ndarray
    wq_head: np.ndarray
    wq_tail: np.ndarray
    wnext: np.ndarray
    arrived: np.ndarray
    port_free: np.ndarray
    oq_head: np.ndarray
    oq_tail: np.ndarray
    onext: np.ndarray
    out_armed: np.ndarray
    # the credits' returns due, a ring per VC (``nunasim.engine.packet.credits``)
    ring_key: np.ndarray
    ring_start: np.ndarray
    ring_head: np.ndarray
    ring_count: np.ndarray
    # the event heap: keys and payloads
    hk: np.ndarray
    hp: np.ndarray
    # the runs of events beside it (``nunasim.engine.packet.runs``): each run's first and
    # last message and its last key, each run's event kind, the run a message's issue and
    # its acknowledgement join
    run_head: np.ndarray
    run_tail: np.ndarray
    run_last: np.ndarray
    run_kind: np.ndarray
    issue_run: np.ndarray
    ack_run: np.ndarray
    # per resource: the services it owes before the collective can end and the least tail
    # after one (``progress_bound.route_loads``; with a deadline only)
    owed: np.ndarray


def filled(count: int, value: int, dtype: type = np.int64) -> np.ndarray:
    """``count`` entries of ``value``. Zeros come from calloc: a page is mapped when it is
    first written, not here, and one never written costs no memory (a NoC run's 1.5 M
    packets: 716 -> 671 MB)."""
    if value == 0:
        return np.zeros(count, dtype=dtype)
    return np.full(count, value, dtype=dtype)


def unset(count: int) -> np.ndarray:
    """An array the loop writes each entry of before it reads it: the links of its linked
    FIFOs (``_append``, a VC's FIFO) and a credit's grant. Nothing is filled in, and the
    pages of messages that never wait are never touched (a test fills them with garbage
    and gets the same runs)."""
    return np.empty(count, dtype=np.int64)


def loop_state(inputs: CoreInputs) -> LoopState:
    """The loop's state for a run of ``inputs`` (``CoreInputs``), as it starts."""
    i = inputs
    res = i.res
    nres = len(res)
    nsteps = len(i.step_tb)
    nlo = len(i.lineop_compute_ps)
    nmsg = len(i.msg_kind)
    ncus = i.ncus
    flow = bool((res[:, VCS] > 0).any())
    per_msg = nmsg if flow else 0
    per_res = nres if flow else 0
    vcs = res[:, VCS].astype(np.int64)
    vc_start = np.concatenate([[0], np.cumsum(vcs)]).astype(np.int64)
    vc_res = np.repeat(np.arange(nres, dtype=np.int64), vcs)
    nvc = len(vc_res)
    slots = res[vc_res, BUF_FLITS].astype(np.int64)  # a VC's buffer: its credits, its ring
    ring_start = np.concatenate([[0], np.cumsum(slots)]).astype(np.int64)
    wait = i.step_wait.astype(np.int64)  # a copy: the loop counts it down
    scatter_at(np.add, wait, i.timed_step, 1)  # a timed step also waits for its time
    # A message's row is filled in as it is issued (``runs.start_route``).
    cursor = np.empty((nmsg, CURSOR_FIELDS), dtype=np.int64)
    runs = run_classes(nres, i.msg_pre_ps, i.msg_ack_ps)
    nruns = len(runs.run_kind)
    on = nmsg >= RUNS_FROM_MESSAGES
    owed = np.zeros((nres, OWED_FIELDS), dtype=np.int64)
    if i.stop_ps >= 0:
        owed = route_loads(i, i.route_start[i.msg_route], i.route_start[i.msg_route + 1])
    # A message has at most one event pending, a VC at most one credit event per flit slot
    # of its buffer, and a resource at most one EV_OUTPUT event.
    cap = nmsg + nlo + nsteps + 2 + per_res + int(ring_start[-1])

    return LoopState(
        wait=wait,
        arrival_left=i.arrival_lines.astype(np.int64),
        lo_sources=np.subtract(i.lineop_msgs[:, 1], i.lineop_msgs[:, 0], dtype=np.int64),
        lo_sinks=np.subtract(i.lineop_msgs[:, 2], i.lineop_msgs[:, 1], dtype=np.int64),
        step_left=np.subtract(i.lineop_start[1:], i.lineop_start[:-1], dtype=np.int64),
        ready=np.empty(nsteps, dtype=np.int64),
        inflight=filled(ncus, 0),
        compute_free=filled(ncus, 0),
        qhead=filled(ncus, -1),
        qtail=filled(ncus, -1),
        qnext=unset(nmsg),
        touched=np.empty(ncus, dtype=np.int64),
        is_touched=filled(ncus, False, np.bool_),
        cursor=cursor,
        vc_start=vc_start,
        vc_res=vc_res,
        credit=slots.copy(),
        fifo_head=filled(nvc, -1),
        fifo_tail=filled(nvc, -1),
        fifo_next=unset(per_msg),
        in_vc=filled(per_msg, -1),
        behind=filled(per_msg, False, np.bool_),
        hol_ok=filled(per_msg, 0),
        phase=filled(per_msg, 0, np.int8),
        granted_vc=unset(per_msg),
        vc_ok=filled(nvc, 0),
        held=filled(nvc, -1),
        vc_rr=filled(nres, 0),
        wq_head=filled(nres, -1),
        wq_tail=filled(nres, -1),
        wnext=unset(per_msg),
        arrived=filled(per_msg, 0),
        port_free=filled(per_res, 0),
        oq_head=filled(per_res, -1),
        oq_tail=filled(per_res, -1),
        onext=unset(per_msg),
        out_armed=filled(per_res, False, np.bool_),
        ring_key=np.empty(int(ring_start[-1]), dtype=np.int64),
        ring_start=ring_start,
        ring_head=filled(nvc, 0),
        ring_count=filled(nvc, 0),
        hk=np.empty(cap, dtype=np.int64),
        hp=np.empty(cap, dtype=np.int64),
        run_head=filled(nruns, -1),
        run_tail=filled(nruns, EMPTY if on else CLOSED),  # runs off: every push on the heap
        run_last=filled(nruns, 0),
        run_kind=runs.run_kind,
        issue_run=runs.issue_run,
        ack_run=runs.ack_run,
        owed=owed,
    )

"""Credit flow control in the packet core: the VC FIFOs of an input buffer, VC allocation,
the waits for a busy resource and the credits' return (docs/engine.md, "The packet core").

A credit's return changes nothing but its VC's count unless a message waits for that VC (it
holds the VC, or waits for any VC of the resource), and most returns find no one waiting.
Those are not events on the heap: each VC keeps its returns due, in order, in a ring of
their event keys (as many as its buffer has flit slots, the most it can have out), and
every read of a VC's credits first applies the returns whose keys come before the event
being handled. Once a message starts to wait, the VC's returns still due become heap events
with the keys they were made with, and new ones are events while it waits. The loop then
handles every event it would handle with one heap event per return, in the same order.
Measured on mesh8x8-vc, 1-flit uniform at 0.2 over 120,000 cycles (credit returns 38 % of
the events): the whole ``nunasim noc`` run went from 2.98 to 2.74 s, best of 3.

Inlined into the compiled loop (``nunasim.engine.packet.core``); after a change here clear
numba's caches (see ``nunasim.engine.packet.events``).
"""

from __future__ import annotations

from nunasim.engine.jit import jit, unchecked
from nunasim.engine.kernel.heap import event_key, push_event, push_key
from nunasim.engine.kernel.rows import (
    BUF_FLITS,
    CREDIT_PS,
    FLIT_PS,
    FREE_AT,
    HEAD_PS,
    OCC,
    TAIL_CREDIT,
)
from nunasim.engine.packet.events import EV_BITS, EV_CREDIT, EV_OUTPUT, EV_ROUTE, PH_REQUEST

# Indexing without numba's negative-index wrap-around, for positions the loop computes
# (``nunasim.jit.unchecked``; docs/engine.md, "Indices without wrap-around").
_load, _store, _load2, _store2 = unchecked()


@jit(inline=True)
def _append(head, tail, nxt, q, m):
    """Append message ``m`` to FIFO ``q`` of a set of linked FIFOs (a CU's issue queue, a
    resource's waiters)."""
    _store(nxt, m, -1)
    last = _load(tail, q)
    if last < 0:
        _store(head, q, m)
    else:
        _store(nxt, last, m)
    _store(tail, q, m)


@jit(inline=True)
def _credits_taken(res, e):
    """The credits of ``e``'s downstream buffer a message takes: one per flit it is on
    ``e`` (its occupancy over the flit time), at least one, at most the whole buffer."""
    fps = _load2(res, e, FLIT_PS)
    take = _load2(res, e, OCC) // fps if fps > 0 else 1
    return min(max(take, 1), _load2(res, e, BUF_FLITS))


@jit(inline=True)
def _due(now, returns):
    """How many returns still in the rings come before the event of key ``now`` (all of
    them if ``now < 0``): the heap events one event per return would have handled."""
    ring_key, ring_start, ring_head, ring_count = returns[:4]
    due = 0
    for v in range(ring_count.shape[0]):
        size = ring_start[v + 1] - ring_start[v]
        for k in range(ring_count[v]):
            i = ring_start[v] + (ring_head[v] + k) % size
            if now < 0 or ring_key[i] < now:
                due += 1
    return due


@jit(inline=True)
def _watch_all(e, hk, hp, n, returns):
    """A message starts to wait for any VC of ``e``: ``_watch`` each."""
    vc_start = returns[5]
    for v in range(vc_start[e], vc_start[e + 1]):
        n = _watch(v, hk, hp, n, returns)
    return n


@jit(inline=True)
def _returned(e, now, returns):
    """Apply the credit returns of ``e``'s VCs due before the event of key ``now``; how
    many (each counts as an event handled)."""
    ring_key, ring_start, ring_head, ring_count, credit, vc_start, res = returns[:7]
    applied = 0
    take = _credits_taken(res, e)
    for v in range(_load(vc_start, e), _load(vc_start, e + 1)):
        count = _load(ring_count, v)
        if count == 0:
            continue
        first = _load(ring_start, v)
        size = _load(ring_start, v + 1) - first
        head = _load(ring_head, v)
        got = 0
        while count > 0 and _load(ring_key, first + head) < now:
            head = head + 1 if head + 1 < size else 0
            count -= 1
            got += 1
        if got:
            _store(credit, v, _load(credit, v) + got * take)
            _store(ring_head, v, head)
            _store(ring_count, v, count)
            applied += got
    return applied


@jit(inline=True)
def _watch(v, hk, hp, n, returns):
    """A message starts to wait for VC ``v``: its returns due become heap events."""
    ring_key, ring_start, ring_head, ring_count = returns[:4]
    size = ring_start[v + 1] - ring_start[v]
    while ring_count[v] > 0:
        n = push_key(hk, hp, n, ring_key[ring_start[v] + ring_head[v]], (v << EV_BITS) | EV_CREDIT)
        ring_head[v] = ring_head[v] + 1 if ring_head[v] + 1 < size else 0
        ring_count[v] -= 1
    ring_head[v] = 0
    return n


@jit(inline=True)
def _return_credits(b, t, seq, hk, hp, n, returns):
    """VC ``b``'s credits for one message are due back at ``t``: a heap event if a message
    waits for the VC (or its ring is full, or out of order), else an entry of its ring."""
    ring_key, ring_start, ring_head, ring_count = returns[:4]
    vc_res, held, wq_head = returns[7:]
    key = event_key(t, seq)
    first = _load(ring_start, b)
    size = _load(ring_start, b + 1) - first
    count = _load(ring_count, b)
    head = _load(ring_head, b)
    last = first + (head + count - 1) % size if count > 0 else -1
    if (
        _load(held, b) >= 0
        or _load(wq_head, _load(vc_res, b)) >= 0
        or count == size
        or (last >= 0 and _load(ring_key, last) > key)
    ):
        return push_key(hk, hp, n, key, (b << EV_BITS) | EV_CREDIT)
    _store(ring_key, first + (head + count) % size, key)
    _store(ring_count, b, count + 1)
    return n


@jit(inline=True)
def _pick_vc(res, e, vc_start, credit, held, vc_rr):
    """The VC of ``e``'s downstream buffer a message is allocated now, -1 if none is free.
    As a VC allocator does, it sees which VCs are free, not how many credits they have: a
    VC is free unless a message holds it while it waits for credits; the first free one
    from a round-robin pointer. With TAIL_CREDIT only an empty VC is free."""
    first = _load(vc_start, e)
    count = _load(vc_start, e + 1) - first
    rr = _load(vc_rr, e)
    tail_credit = _load2(res, e, TAIL_CREDIT)
    for i in range(count):
        v = first + (rr + i) % count
        free = _load(credit, v) == _load2(res, e, BUF_FLITS) if tail_credit else _load(held, v) < 0
        if free:
            _store(vc_rr, e, (v - first + 1) % count)
            return v
    return -1


@jit(inline=True)
def _serve_output(e, t, hk, hp, n, seq, outputs_q):
    """Make sure the first buffered message waiting for resource ``e`` asks for it again as
    soon as ``e`` is free (at ``t`` at the earliest): one EV_OUTPUT event at a time."""
    oq_head, out_armed, res = outputs_q
    if _load(oq_head, e) >= 0 and not _load(out_armed, e):
        _store(out_armed, e, True)
        n = push_event(hk, hp, n, max(t, _load2(res, e, FREE_AT)), seq, (e << EV_BITS) | EV_OUTPUT)
        seq += 1
    return n, seq


@jit(inline=True)
def _leave_buffer(m, b, t, gap, next_ok, hk, hp, n, seq, buffers, returns):
    """Message ``m``, at the head of VC ``b``'s buffer, leaves it: its head at ``t``, its tail
    ``gap`` later. Its credits go back upstream, and the message behind it becomes the head,
    free to go once ``m``'s tail is out (``next_ok``) and its own head has passed the
    router's head stages (HEAD_PS); if it is already waiting there it asks for its next
    resource then. ``buffers`` holds the VC bookkeeping, ``returns`` the credits' (see
    ``_loop``)."""
    vc_res, fifo_head, fifo_tail, fifo_next, behind, hol_ok, phase, res, vc_ok = buffers
    u = _load(vc_res, b)
    n = _return_credits(b, t + gap + _load2(res, u, CREDIT_PS), seq, hk, hp, n, returns)
    seq += 1
    next_ok += _load2(res, u, HEAD_PS)  # its head's route and VC allocation, only now
    # A message that reaches the VC later arrived there (HEAD_PS before it could go) after
    # m's tail had left only if it can go at next_ok or later: the VC's next head goes then.
    _store(vc_ok, b, next_ok)
    q = _load(fifo_next, m)
    _store(fifo_head, b, q)
    if q < 0:
        _store(fifo_tail, b, -1)
        return n, seq
    _store(hol_ok, q, next_ok)
    if _load(behind, q):  # it has arrived and waits for m to go
        _store(behind, q, False)
        _store(phase, q, PH_REQUEST)
        n = push_event(hk, hp, n, max(t, next_ok), seq, (q << EV_BITS) | EV_ROUTE)
        seq += 1
    return n, seq

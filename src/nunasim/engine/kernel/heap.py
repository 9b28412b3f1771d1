"""The event heap of the packet engine and the flow engine: a 4-ary heap of packed keys."""

from __future__ import annotations

from nunasim.engine.jit import jit, unchecked

# Indexing without numba's negative-index wrap-around, for positions the loop computes
# (``nunasim.jit.unchecked``; docs/engine.md, "Indices without wrap-around").
_load, _store, _, _ = unchecked()

# An event's key packs its time and its sequence number: time << SEQ_BITS | seq mod
# 2^SEQ_BITS. Keys order events by time, then (for events scheduled fewer than 2^SEQ_BITS
# events apart, which is every tie in practice) by the order they were scheduled in; the
# order is a fixed function of the run either way, so runs repeat exactly. One integer per
# key makes the heap about 2.5 times faster than comparing (time, sequence) pairs.
SEQ_BITS = 23
SEQ_MASK = (1 << SEQ_BITS) - 1
TIME_LIMIT_PS = 1 << (63 - SEQ_BITS)  # 1.1 s of simulated time


@jit(inline="llvm")
def event_key(t, seq):
    """The key of an event at time ``t`` scheduled ``seq``-th."""
    if t >= TIME_LIMIT_PS:
        raise ValueError("the packet engine simulates at most 1.1 s of time")
    return (t << SEQ_BITS) | (seq & SEQ_MASK)


@jit(inline="llvm")
def push_event(hk, hp, n, t, seq, payload):
    """Insert into a 4-ary heap of (key, payload): the hole moves up to its place."""
    return push_key(hk, hp, n, event_key(t, seq), payload)


@jit(inline="llvm")
def push_key(hk, hp, n, key, payload):
    """Insert an event whose key is made already (``event_key``)."""
    i = n
    while i > 0:
        p = (i - 1) >> 2
        parent = _load(hk, p)
        if parent <= key:
            break
        _store(hk, i, parent)
        _store(hp, i, _load(hp, p))
        i = p
    _store(hk, i, key)
    _store(hp, i, payload)
    return n + 1


@jit(inline="llvm")
def pop_event(hk, hp, n):
    """Remove the smallest key; the last item moves down from the root's hole."""
    key, payload = hk[0], hp[0]
    n -= 1
    sift_down(hk, hp, n, hk[n], hp[n])
    return key >> SEQ_BITS, payload, n


# Inlined by numba, not left to LLVM: LLVM kept it a call per event, with the arrays'
# fields for arguments (docs/engine-measured.md, "The heap's sift-down, inlined").
@jit(inline=True)
def sift_down(hk, hp, n, last_key, last_payload):
    """Fill the root's hole of a heap of ``n`` items with (last_key, last_payload), no
    smaller a key than the hole's, moving it down to its place. A node's four children are
    compared as two pairs and their winners (the first of equal keys wins, as in order)."""
    i = 0
    while True:
        first = 4 * i + 1
        if first + 3 < n:  # four children: two pairs, then their winners
            k0 = _load(hk, first)
            k1 = _load(hk, first + 1)
            k2 = _load(hk, first + 2)
            k3 = _load(hk, first + 3)
            if k1 < k0:
                a, ka = first + 1, k1
            else:
                a, ka = first, k0
            if k3 < k2:
                b, kb = first + 3, k3
            else:
                b, kb = first + 2, k2
            if kb < ka:
                best, best_key = b, kb
            else:
                best, best_key = a, ka
        else:
            if first >= n:
                break
            best = first
            best_key = _load(hk, first)
            for c in range(first + 1, n):
                if _load(hk, c) < best_key:
                    best = c
                    best_key = _load(hk, c)
        if last_key <= best_key:
            break
        _store(hk, i, best_key)
        _store(hp, i, _load(hp, best))
        i = best
    _store(hk, i, last_key)
    _store(hp, i, last_payload)

"""Max-min fair rates by progressive filling.

Every active flow's rate (line operations per ps) rises at the same pace until a resource
is full (the busy time per ps its flows ask of it reaches 1); the flows crossing it are
frozen at that rate, and the others keep rising. Each resource's filling level is kept in
a heap, as a lower bound refreshed when it comes out, so a computation costs O(E + R log R)
for E (flow, resource) pairs and R resources rather than a pass over all pairs per level.

A computation's time is its scattered updates of the resources' state (demand, users,
load, floor) for every pair, so each resource keeps its four in one row: one cache line
per pair instead of four.
"""

from __future__ import annotations

import numpy as np

from nunasim.engine.jit import jit, prefetcher
from nunasim.engine.kernel.keyheap import heap_pop, heap_push

_prefetch = prefetcher()  # the compiled function calls it by this global name

# How many flows ahead the passes over the flows' entries ask for them (``_ask_entries``).
AHEAD = 2
LINE_ENTRIES = 8  # entries of 8 bytes in a 64-byte cache line

# the columns of a resource's row
DEMAND = 0  # of its flows not yet frozen
USERS = 1  # its flows not yet frozen
LOAD = 2  # of its frozen flows
FLOOR = 3  # the level when a flow of it last froze


@jit
def crossings(entry_start, entry_res, nres):
    """Every flow crossing each resource, in increasing order: resource ``e``'s are
    ``crossing[crossing_start[e]:crossing_start[e + 1]]``."""
    crossing = np.empty(entry_res.shape[0], dtype=np.int32)
    crossing_start = by_resource(entry_start, entry_res, nres, crossing, crossing[:0])
    return crossing_start, crossing


@jit
def by_resource(entry_start, entry_res, nres, flow, entry):
    """The CSR entries (per flow) turned over by resource: fills ``flow`` with the flows
    crossing each resource in increasing order, and ``entry`` (unless it is empty) with the
    entries they cross it by; returns where each resource's start (``nres + 1``)."""
    start = np.zeros(nres + 1, dtype=np.int64)
    for x in range(entry_res.shape[0]):
        start[entry_res[x] + 1] += 1
    for e in range(nres):
        start[e + 1] += start[e]
    at = start[:-1].copy()
    entries = entry.shape[0] > 0
    for f in range(entry_start.shape[0] - 1):
        for x in range(entry_start[f], entry_start[f + 1]):
            e = entry_res[x]
            flow[at[e]] = f
            if entries:
                entry[at[e]] = x
            at[e] += 1
    return start


@jit(inline=True)
def _ask_entries(f, entry_start, entry_res, entry_coef):
    """Ask the memory for flow ``f``'s entries (resources and shares) while the flows before
    it are handled: the passes take the flows in the order they are active or freeze, not
    the order their entries are stored in, so each flow's entries are cache misses. A hint
    only: nothing computed changes."""
    for x in range(entry_start[f], entry_start[f + 1], LINE_ENTRIES):
        _prefetch(entry_res, x)
        _prefetch(entry_coef, x)


@jit
def max_min_rates(
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
):
    """Fill ``rate`` for the flows ``active[:nactive]`` (flow ids), whose demands are the
    CSR ``entry_*`` (busy time per unit of rate on each resource, whose capacity is 1),
    and ``bound``: the resource that froze each. ``crossing_*`` are ``crossings``;
    ``position`` gets each active flow's position in ``active``.

    A resource's filling level only rises as flows freeze (they take no more than their
    share of it), so the heap holds lower bounds: a resource whose level rose since it
    was pushed is pushed again with its level when it comes out, instead of at every
    change. Each level is the one an eager update would have pushed, the same value
    with the same ties, so the rates are the same.

    Flows freeze in the order of their positions in ``active``, which decides the sums
    (and so the ties). Only a few resources ever freeze flows (about a thousand of 150 k
    in a 64-GPU run), so their active flows are picked out of ``crossings`` and sorted
    when they do, rather than listed for every resource up front."""
    nres = crossing_start.shape[0] - 1
    state = np.zeros((nres, 4), dtype=np.float64)
    # The active flows not yet frozen, by flow id: one byte a flow, so the scans of a
    # freezing resource's crossings (inactive flows included) read it from cache.
    rising = np.zeros(entry_start.shape[0] - 1, dtype=np.bool_)
    nnz = 0
    for j in range(nactive):
        if j + AHEAD < nactive:
            _ask_entries(active[j + AHEAD], entry_start, entry_res, entry_coef)
        f = active[j]
        position[f] = j
        rising[f] = True
        for x in range(entry_start[f], entry_start[f + 1]):
            e = entry_res[x]
            state[e, DEMAND] += entry_coef[x]
            state[e, USERS] += 1.0
        nnz += entry_start[f + 1] - entry_start[f]
    longest = 0
    for e in range(nres):
        longest = max(longest, crossing_start[e + 1] - crossing_start[e])
    freezing = np.empty(longest, dtype=np.int64)  # positions of a resource's active flows
    key = np.empty(nres, dtype=np.float64)
    item = np.empty(nres, dtype=np.int64)
    n = 0
    for e in range(nres):
        if state[e, USERS] > 0:
            n = heap_push(key, item, n, 1.0 / state[e, DEMAND], e)
    left = nactive
    while left > 0 and n > 0:
        level, e, n = heap_pop(key, item, n)
        if state[e, USERS] == 0:
            continue
        if state[e, FLOOR] > 0.0:  # some of its flows froze since it was pushed: its level now
            demand = state[e, DEMAND]
            fill = (1.0 - state[e, LOAD]) / demand if demand > 0 else np.inf
            fill = max(fill, state[e, FLOOR])
            if fill > level:
                n = heap_push(key, item, n, fill, e)
                continue
        m = 0
        for y in range(crossing_start[e], crossing_start[e + 1]):
            f = crossing[y]
            if rising[f]:
                freezing[m] = position[f]
                m += 1
        freezing[:m].sort()
        for k in range(m):
            if k + AHEAD < m:
                _ask_entries(active[freezing[k + AHEAD]], entry_start, entry_res, entry_coef)
            j = freezing[k]
            left -= 1
            f = active[j]
            rising[f] = False
            rate[f] = level
            bound[f] = e
            for x in range(entry_start[f], entry_start[f + 1]):
                r = entry_res[x]
                state[r, LOAD] += entry_coef[x] * level
                state[r, DEMAND] -= entry_coef[x]
                state[r, USERS] -= 1.0
                state[r, FLOOR] = level
    return nnz

"""Max-min fair rates by progressive filling.

Every active flow's rate (line operations per ps) rises at the same pace until a resource
is full (the busy time per ps its flows ask of it reaches 1); the flows crossing it are
frozen at that rate, and the others keep rising. Each resource's filling level is kept in
a heap, as a lower bound refreshed when it comes out, so a computation costs O(E + R log R)
for E (flow, resource) pairs and R resources rather than a pass over all pairs per level.
"""

from __future__ import annotations

import numpy as np

from nunasim.engine.flow.keyheap import heap_pop, heap_push
from nunasim.engine.jit import jit


@jit
def max_min_rates(active, nactive, entry_start, entry_res, entry_coef, nres, rate, bound):
    """Fill ``rate`` for the flows ``active[:nactive]`` (flow ids), whose demands are the
    CSR ``entry_*`` (busy time per unit of rate on each resource, whose capacity is 1),
    and ``bound``: the resource that froze each.

    A resource's filling level only rises as flows freeze (they take no more than their
    share of it), so the heap holds lower bounds: a resource whose level rose since it
    was pushed is pushed again with its level when it comes out, instead of at every
    change. Each level is the one an eager update would have pushed, the same value
    with the same ties, so the rates are the same."""
    demand = np.zeros(nres, dtype=np.float64)  # of the flows not yet frozen
    load = np.zeros(nres, dtype=np.float64)  # of the frozen flows
    users = np.zeros(nres, dtype=np.int64)  # flows not yet frozen
    floor = np.zeros(nres, dtype=np.float64)  # the level when a flow of it last froze
    nnz = 0
    for j in range(nactive):
        f = active[j]
        for x in range(entry_start[f], entry_start[f + 1]):
            demand[entry_res[x]] += entry_coef[x]
            users[entry_res[x]] += 1
        nnz += entry_start[f + 1] - entry_start[f]
    # resource -> active flows (positions in ``active``)
    first = np.zeros(nres + 1, dtype=np.int64)
    for e in range(nres):
        first[e + 1] = first[e] + users[e]
    at = first[:-1].copy()
    member = np.empty(nnz, dtype=np.int64)
    for j in range(nactive):
        f = active[j]
        for x in range(entry_start[f], entry_start[f + 1]):
            e = entry_res[x]
            member[at[e]] = j
            at[e] += 1
    key = np.empty(nres, dtype=np.float64)
    item = np.empty(nres, dtype=np.int64)
    n = 0
    for e in range(nres):
        if users[e] > 0:
            n = heap_push(key, item, n, 1.0 / demand[e], e)
    frozen = np.zeros(nactive, dtype=np.bool_)
    left = nactive
    while left > 0 and n > 0:
        level, e, n = heap_pop(key, item, n)
        if users[e] == 0:
            continue
        if floor[e] > 0.0:  # some of its flows froze since it was pushed: its level now
            fill = (1.0 - load[e]) / demand[e] if demand[e] > 0 else np.inf
            fill = max(fill, floor[e])
            if fill > level:
                n = heap_push(key, item, n, fill, e)
                continue
        for y in range(first[e], first[e + 1]):
            j = member[y]
            if frozen[j]:
                continue
            frozen[j] = True
            left -= 1
            f = active[j]
            rate[f] = level
            bound[f] = e
            for x in range(entry_start[f], entry_start[f + 1]):
                r = entry_res[x]
                load[r] += entry_coef[x] * level
                demand[r] -= entry_coef[x]
                users[r] -= 1
                floor[r] = level
    return nnz

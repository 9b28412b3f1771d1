"""A run's completion bounded from below by the work its resources have left, so that a
run with a deadline stops as soon as it provably cannot meet it.

Every resource serves one message at a time, each for the resource's occupancy, and a
collective completes only once every message of it that a step waits for has been
through every resource of its route: a read's data, a store's acknowledgement, a flag,
and a data-polled store whose arrival releases a step (one whose arrival releases none
is left out, as nothing waits for it). So at time ``t``, a resource ``e`` with ``r > 0``
services left, free from ``FREE_AT[e]``, holds the end back to at least ``max(t,
FREE_AT[e]) + (r - 1) * OCC[e] + LAT[e]``: its last service starts no earlier than
``(r - 1) * OCC[e]`` after the first, and that message leaves ``LAT[e]`` after it starts.
When that passes the deadline the run would be cut there anyway, later: stopping it now
changes no answer, only what the loser costs.

Inlined into the compiled loop (``nunasim.engine.packet.core``); after a change here clear
numba's caches (see ``nunasim.engine.packet.events``).
"""

from __future__ import annotations

import numpy as np

from nunasim.engine.jit import jit
from nunasim.engine.kernel.kinds import FLAG
from nunasim.engine.kernel.rows import FLITS, FREE_AT, LAT, OCC, ROUTE_RES

# Events between two checks of the bound, at least; a check reads every resource once, so
# it is also at least a few times their count.
CHECK_EVERY = 1 << 14


@jit
def route_loads(route, pos, pos_end, nres, msg_kind, msg_target, release_start):
    """How many services each resource owes before the collective can end: the route
    entries on it of every message a step waits for."""
    owed = np.zeros(nres, dtype=np.int64)
    for m in range(pos.shape[0]):
        a = msg_target[m]
        if msg_kind[m] != FLAG and a >= 0 and release_start[a + 1] == release_start[a]:
            continue  # data-polled, releasing nothing: the end does not wait for it
        for p in range(pos[m], pos_end[m]):
            owed[route[p, ROUTE_RES]] += 1
    return owed


@jit(inline=True)
def misses_deadline(res, owed, t, stop_ps):
    """Whether the work the resources have left at ``t`` ends after ``stop_ps``."""
    for e in range(res.shape[0]):
        left = owed[e] - res[e, FLITS]
        if left > 0:
            start = res[e, FREE_AT] if res[e, FREE_AT] > t else t
            if start + (left - 1) * res[e, OCC] + res[e, LAT] > stop_ps:
                return True
    return False

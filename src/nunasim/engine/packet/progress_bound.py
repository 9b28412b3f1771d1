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
It then still has the rest of its route to go, at least its zero-load time: no less than
the least such *tail* after ``e`` of any message the end waits for (the pure delays and
the later resources' latencies, none of them waiting). When that passes the deadline the
run would be cut there anyway, later: stopping it now changes no answer, only what the
loser costs.

Inlined into the compiled loop (``nunasim.engine.packet.core``); after a change here clear
numba's caches (see ``nunasim.engine.packet.events``).
"""

from __future__ import annotations

import numpy as np

from nunasim.engine.jit import jit
from nunasim.engine.kernel.kinds import FLAG
from nunasim.engine.kernel.rows import FLITS, FREE_AT, LAT, OCC, ROUTE_POST, ROUTE_RES

# Events between two checks of the bound, at least; a check reads every resource once, so
# it is also at least a few times their count.
CHECK_EVERY = 1 << 14


# The columns of ``route_loads``'s rows, one per resource
OWED = 0  # services it owes before the collective can end
TAIL = 1  # the least zero-load time from leaving it to the end of such a service's route
NO_TAIL = np.iinfo(np.int64).max // 4  # a resource that owes nothing (never read)


@jit
def route_loads(route, pos, pos_end, res, msg_kind, msg_target, release_start):
    """Each resource's row (``OWED``, ``TAIL``) over the route entries on it of every
    message a step waits for."""
    owed = np.zeros((res.shape[0], 2), dtype=np.int64)
    owed[:, TAIL] = NO_TAIL
    for m in range(pos.shape[0]):
        a = msg_target[m]
        if msg_kind[m] != FLAG and a >= 0 and release_start[a + 1] == release_start[a]:
            continue  # data-polled, releasing nothing: the end does not wait for it
        rest = 0  # zero-load time from reaching entry p to the end of the route
        for p in range(pos_end[m] - 1, pos[m] - 1, -1):
            e = route[p, ROUTE_RES]
            after = route[p, ROUTE_POST] + rest
            owed[e, OWED] += 1
            if after < owed[e, TAIL]:
                owed[e, TAIL] = after
            rest = res[e, LAT] + after
    return owed


@jit(inline=True)
def misses_deadline(res, owed, t, stop_ps):
    """Whether the work the resources have left at ``t`` ends after ``stop_ps``."""
    for e in range(res.shape[0]):
        left = owed[e, OWED] - res[e, FLITS]
        if left > 0:
            start = res[e, FREE_AT] if res[e, FREE_AT] > t else t
            end = start + (left - 1) * res[e, OCC] + res[e, LAT] + owed[e, TAIL]
            if end > stop_ps:
                return True
    return False

"""Memory prefetch hints for the packet core's event loop (``nunasim.engine.packet.core``).

Inlined into the compiled loop; after a change here clear numba's caches (see
``nunasim.engine.packet.events``).
"""

from __future__ import annotations

from nunasim.engine.jit import jit, prefetcher
from nunasim.engine.kernel.rows import ROUTE_RES
from nunasim.engine.packet.events import EV_BITS, EV_MASK, EV_ROUTE, EV_RUN
from nunasim.engine.packet.runs import END, NEXT, POS, event_message

_prefetch = prefetcher()  # the compiled loop calls it by this global name


@jit(inline=True)
def _prefetch_ahead(hp, n, route, res, runs):
    """Ask the memory for what the coming events will read while this one is handled. The
    loop is bound by memory latency: an event reads its message's cursor row, then the
    route entry it points to, then that resource's row, each a cache miss once the run
    outgrows the cache, one after the other. The next event is the heap's root and the ones
    after it are among the root's children and grandchildren, or the next of the root's run
    (``nunasim.engine.packet.runs``), so: for the root, the row of the resource it moves to
    (its cursor and route entry were asked for at the events before) and the cursor row of
    its run's next message; for the children, their route entries; for the grandchildren,
    their cursor rows. A 64-GPU All-Gather runs 1.5 to 2 times as fast. Hints only: nothing
    computed changes."""
    run_head, _, _, cursor, run_kind = runs
    head = hp[0]
    m, kind = event_message(head, run_head, run_kind)
    if m >= 0:
        if head & EV_MASK == EV_RUN:
            after = cursor[m, NEXT]
            if after >= 0:
                _prefetch(cursor, after)
        if kind == EV_ROUTE:
            p = cursor[m, POS]
            if p < cursor[m, END]:
                _prefetch(res, route[p, ROUTE_RES])
    end = min(n, 21)
    for c in range(1, end):
        ahead = hp[c]
        kind = ahead & EV_MASK
        if kind == EV_ROUTE:
            m = ahead >> EV_BITS
        elif kind == EV_RUN and run_kind[ahead >> EV_BITS] == EV_ROUTE:
            m = run_head[ahead >> EV_BITS]
        else:
            continue
        if c < 5:
            _prefetch(route, cursor[m, POS])
        else:
            _prefetch(cursor, m)

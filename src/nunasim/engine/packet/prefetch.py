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

# The loop asks for hints only with at least this many entries on the heap. With fewer, the
# coming events read rows that recent events read, still in the caches, and the hints
# (some 20 heap entries looked at per event) only cost: without them the credit-controlled
# NoC run of 8 x 8 routers at 0.2 flits per cycle (at most 317 entries) runs its loop in
# 0.97-1.05 s instead of 1.42-1.54 s and the 8-GPU 1 MB All-Gathers (at most 1,413 and
# 2,772 runs of events) 15-25 % faster, while the 32-GPU 10 MB one (some 40,000 runs)
# keeps them and runs as fast as before (docs/engine-measured.md, "Prefetching only a large heap").
PREFETCH_FROM = 4096


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

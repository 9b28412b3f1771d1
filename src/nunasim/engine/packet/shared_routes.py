"""Messages that travel the same route share one copy of it in the packet core's table.

Lowering writes every message's route entries apart (``Lowered.route_table``), but many
messages cross the same resources with the same delays: under NAP+NAR the 54,824 messages
of the 8-GPU 1 MB All-Gather travel 4,108 distinct routes, 48,634 entries instead of
728,644. The core reads a route entry per event, and a table of a few hundred kilobytes
stays in the caches where one of several megabytes does not: a profile of that run put a
quarter of the loop's time on waiting for route entries, and with shared routes the loop
runs 1.2 times as fast (docs/engine-measured.md, "Shared routes"). The core reads a
message's route through ``msg_route`` either way, so results are the same to the bit.

Sharing pays only where routes repeat: where the distinct routes hold more than
``SHARE_AT_MOST`` of the entries the run keeps its own table, so that the copy never adds
more than that share of the route table to the run's memory (and UA's routes, all but a
quarter distinct, stay as they are).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.engine.jit import jit
from nunasim.engine.kernel.rows import ROUTE_POST, ROUTE_RES

# The most the shared table may hold, as a share of the entries of the messages' own.
SHARE_AT_MOST = 0.5
# FNV-1a's 64-bit prime: a route's hash mixes its length and entries with it.
_MIX = 1099511628211


class SharedRoutes(NamedTuple):
    """``msg_route[m]`` is message m's route, entries ``start[r] .. start[r + 1] - 1`` of
    ``table`` (rows as the core reads them), in order of each route's first message."""

    msg_route: np.ndarray
    start: np.ndarray
    table: np.ndarray


def share_routes(
    route_start: np.ndarray, table: np.ndarray, at_most: float | None = None
) -> SharedRoutes | None:
    """The distinct routes of the messages whose routes are ``table``'s entries
    ``route_start[m] .. route_start[m + 1] - 1``; None when they hold more than
    ``at_most`` (by default ``SHARE_AT_MOST``) of its entries: sharing would then save
    little and add to the run's memory."""
    messages = len(route_start) - 1
    if messages == 0:
        return None
    share = SHARE_AT_MOST if at_most is None else at_most
    msg_route, first = _distinct(route_start, table, float(share))
    if first is None:
        return None
    lengths = route_start[first + 1] - route_start[first]
    start = np.zeros(len(first) + 1, dtype=np.int64)
    np.cumsum(lengths, out=start[1:])
    shared = _gather(route_start, table, first, start)
    return SharedRoutes(msg_route, start, shared)


@jit
def _distinct(route_start, table, share):
    """Each message's route number and each route's first message, or (None, None) once
    the distinct routes hold more than ``share`` of the entries: of all of them, or of the
    first sixteenth of the messages' (the share is much the same throughout a run: 0.70
    from the first sixteenth to the end of the 32-GPU UA+NAR run, 0.19 -> 0.30 and 0.35 ->
    0.27 on NAP+NAR runs), which spares most of the pass where sharing would not pay. An
    open-addressing table of route hashes, every match confirmed entry by entry, so that a
    collision of hashes never merges two routes."""
    messages = route_start.shape[0] - 1
    slots = 1
    while slots < 2 * messages:
        slots *= 2
    mask = slots - 1
    slot_route = np.full(slots, -1, dtype=np.int64)
    msg_route = np.empty(messages, dtype=np.int64)
    first = np.empty(messages, dtype=np.int64)
    route_hash = np.empty(messages, dtype=np.int64)
    routes = 0
    entries = 0
    most = share * table.shape[0]
    check = messages // 16
    for m in range(messages):
        if m == check and entries > share * route_start[m]:
            return None, None
        a = route_start[m]
        b = route_start[m + 1]
        h = np.int64(b - a)
        for p in range(a, b):
            entry = np.int64(table[p, ROUTE_RES]) | (np.int64(table[p, ROUTE_POST]) << 32)
            h = (h ^ entry) * _MIX
        i = h & mask
        while True:
            r = slot_route[i]
            if r < 0:
                entries += b - a
                if entries > most:
                    return None, None
                slot_route[i] = routes
                first[routes] = m
                route_hash[routes] = h
                msg_route[m] = routes
                routes += 1
                break
            if route_hash[r] == h and _same(route_start, table, first[r], m):
                msg_route[m] = r
                break
            i = (i + 1) & mask
    return msg_route, first[:routes].copy()


@jit(inline=True)
def _same(route_start, table, m, k):
    """Whether messages m and k have the same route entries."""
    a = route_start[m]
    c = route_start[k]
    length = route_start[m + 1] - a
    if route_start[k + 1] - c != length:
        return False
    for j in range(length):
        if table[a + j, ROUTE_RES] != table[c + j, ROUTE_RES]:
            return False
        if table[a + j, ROUTE_POST] != table[c + j, ROUTE_POST]:
            return False
    return True


def _gather(
    route_start: np.ndarray, table: np.ndarray, first: np.ndarray, start: np.ndarray
) -> np.ndarray:
    """The table of the routes whose first messages are ``first``, each at ``start[r]``."""
    lengths = np.diff(start)
    within = np.arange(int(start[-1]), dtype=np.int64) - np.repeat(start[:-1], lengths)
    return table[np.repeat(route_start[first], lengths) + within]

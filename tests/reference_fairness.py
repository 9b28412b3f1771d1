"""The flow engine's max-min rates and wave as first written, in plain Python: the rates
rebuilt from a member list of every resource at each computation, and a wave's flows taken
out by a scan of the whole active set. Kept as the references the compiled code
(``nunasim.engine.flow.fairness``, ``nunasim.engine.flow.waves``) must equal bit for bit."""

from __future__ import annotations

import heapq

import numpy as np


def reference_rates(active, entry_start, entry_res, entry_coef, nres):
    """Rates and bottlenecks of the flows ``active`` (in that order), by progressive filling
    with a heap of lazily refreshed levels (ties to the smaller resource)."""
    demand, load, floor = np.zeros(nres), np.zeros(nres), np.zeros(nres)
    users = np.zeros(nres, dtype=np.int64)
    for f in active:
        for x in range(entry_start[f], entry_start[f + 1]):
            demand[entry_res[x]] += entry_coef[x]
            users[entry_res[x]] += 1
    member: list[list[int]] = [[] for _ in range(nres)]
    for j, f in enumerate(active):
        for x in range(entry_start[f], entry_start[f + 1]):
            member[entry_res[x]].append(j)
    heap = [(1.0 / demand[e], e) for e in range(nres) if users[e] > 0]
    heapq.heapify(heap)
    frozen = [False] * len(active)
    rate, bound = {}, {}
    left = len(active)
    while left > 0 and heap:
        level, e = heapq.heappop(heap)
        if users[e] == 0:
            continue
        if floor[e] > 0.0:
            fill = (1.0 - load[e]) / demand[e] if demand[e] > 0 else np.inf
            fill = max(fill, floor[e])
            if fill > level:
                heapq.heappush(heap, (fill, e))
                continue
        for j in member[e]:
            if frozen[j]:
                continue
            frozen[j] = True
            left -= 1
            f = active[j]
            rate[f], bound[f] = level, e
            for x in range(entry_start[f], entry_start[f + 1]):
                r = entry_res[x]
                load[r] += entry_coef[x] * level
                demand[r] -= entry_coef[x]
                users[r] -= 1
                floor[r] = level
    return rate, bound


def reference_scan(active: list[int], leaving: set[int]) -> tuple[list[int], list[int]]:
    """The leaving flows in the order a scan of ``active`` takes them out (each replaced by
    the last active flow, looked at next), and what is left of ``active``."""
    active = list(active)
    order = []
    j = 0
    while j < len(active):
        if active[j] in leaving:
            order.append(active[j])
            active[j] = active[-1]
            active.pop()
        else:
            j += 1
    return order, active

"""The flow engine's max-min rates and wave as first written, in plain Python: the rates
rebuilt from a member list of every resource at each computation, and a wave's flows taken
out by a scan of the whole active set. Kept as the references the compiled code
(``nunasim.engine.flow.fairness``, ``nunasim.engine.flow.waves``) must equal bit for bit."""

from __future__ import annotations

import heapq

import numpy as np
from hypothesis import strategies as st

from nunasim.engine.flow.fairness import crossings, max_min_rates

# few distinct demands, so that sums and levels tie
COEFS = st.sampled_from([0.5, 1.0, 3.0, 71.12975098, 102.0, 307.0, 457.14])


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


def compiled_rates(active, start, res, coef, nres):
    """The compiled computation's rates and bottlenecks (``max_min_rates``), for every flow
    (those not in ``active`` keep rate 0 and bottleneck -1)."""
    crossed = crossings(start, res, nres)
    nflows = len(start) - 1
    rate, bound = np.zeros(nflows), np.full(nflows, -1, dtype=np.int64)
    position = np.zeros(nflows, dtype=np.int64)
    max_min_rates(active, len(active), start, res, coef, *crossed, position, rate, bound)
    return rate, bound


def drawn_flows(draw, rows, nres):
    """Flows whose demands are ``rows`` (each flow's (resource, share) pairs, in order) as
    CSR arrays, and an active subset in an order ``draw`` picks: ``(active, start, res,
    coef, nres)``."""
    start = np.cumsum([0] + [len(row) for row in rows]).astype(np.int64)
    res = np.array([e for row in rows for e, _ in row], dtype=np.int64)
    coef = np.array([c for row in rows for _, c in row], dtype=np.float64)
    active = draw(st.permutations(range(len(rows))))
    active = active[: draw(st.integers(1, len(rows)))]
    return np.array(active, dtype=np.int64), start, res, coef, nres


def drawn_rows(draw, nres, nflows, most):
    """Each of ``nflows`` flows' (resource, share) pairs: 1 to ``most`` distinct resources
    of ``nres``, shares from ``COEFS``."""
    rows = []
    for _ in range(nflows):
        crossed = draw(st.lists(st.integers(0, nres - 1), min_size=1, max_size=most, unique=True))
        rows.append([(e, draw(COEFS) / 1000.0) for e in crossed])
    return rows

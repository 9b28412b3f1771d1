"""Resources that every rate computation treats alike, each kept once.

Two resources crossed by the same flows with the same shares (the same column of the
flows' demand matrix: links of one path that no flow joins or leaves between them, a port
and the link behind it) have the same filling level at every step of ``fairness``'s
progressive filling: their rows (demand, users, load, floor) take the same numbers from
the same flows in the same order. Its heap breaks ties by the smaller resource id, and
each resource has one entry in it while it has flows, so the smaller of the two always
comes out first at their common level and freezes the flows; the larger then has none left
and is passed over. Dropping the larger from the flows' entries gives the same rates and
the same freezing resource for every flow, bit for bit, and saves its pairs in every
computation: 57 % of the (flow, resource) pairs of the 64-GPU 10 MB All-to-All at 1,008
threadblocks (docs/engine-measured.md, "Distinct columns").

Columns are compared exactly (flows and the bits of their shares), a hash only groups the
candidates.
"""

from __future__ import annotations

import numpy as np

from nunasim.engine.flow.fairness import by_resource
from nunasim.engine.jit import jit

_MIX_FLOW = np.uint64(0x9E3779B97F4A7C15)  # odd constants of the 64-bit golden ratio family
_MIX_SHARE = np.uint64(0xC2B2AE3D27D4EB4F)


def distinct_entries(
    entry_start: np.ndarray, entry_res: np.ndarray, entry_coef: np.ndarray, nres: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The CSR entries (per flow: resources and shares) without those on a resource whose
    column equals a smaller resource's; each flow's remaining entries keep their order."""
    pairs = len(entry_res)
    if pairs == 0:
        return entry_start, entry_res, entry_coef
    bits = np.ascontiguousarray(entry_coef).view(np.int64)  # shares compared bit for bit
    # A column lists its entries' indices and flows, 4 bytes each where they fit.
    index = np.int32 if pairs < 2**31 and len(entry_start) < 2**31 else np.int64
    col_flow, col_entry = np.empty(pairs, dtype=index), np.empty(pairs, dtype=index)
    col_start = by_resource(entry_start, entry_res, nres, col_flow, col_entry)
    count = np.diff(col_start)
    digest = _digests(col_start, col_flow, col_entry, bits)
    used = np.nonzero(count > 0)[0]
    # Equal columns have equal counts and digests: sorted so, a group is a run, by id.
    order = used[np.lexsort((used, digest[used], count[used]))]
    copy = _copies(order, count, digest, col_start, col_flow, col_entry, bits)
    del col_flow, col_entry
    if not copy.any():
        return entry_start, entry_res, entry_coef
    return _without(entry_start, entry_res, entry_coef, copy)


@jit
def _digests(col_start, col_flow, col_entry, bits):
    """A 64-bit digest of each column (order-sensitive; wraps around)."""
    nres = col_start.shape[0] - 1
    digest = np.zeros(nres, dtype=np.uint64)
    for e in range(nres):
        h = np.uint64(0)
        for y in range(col_start[e], col_start[e + 1]):
            h = (h ^ (np.uint64(col_flow[y]) * _MIX_FLOW)) * _MIX_SHARE
            h = (h ^ np.uint64(bits[col_entry[y]])) * _MIX_FLOW
        digest[e] = h
    return digest


@jit
def _same(a, b, col_start, col_flow, col_entry, bits):
    """Whether resources ``a`` and ``b`` (equal counts) have the same column."""
    offset = col_start[b] - col_start[a]
    for y in range(col_start[a], col_start[a + 1]):
        if col_flow[y] != col_flow[y + offset]:
            return False
        if bits[col_entry[y]] != bits[col_entry[y + offset]]:
            return False
    return True


@jit
def _copies(order, count, digest, col_start, col_flow, col_entry, bits):
    """Which resources repeat the column of a smaller one. ``order``: the used resources
    sorted by count, digest and id, so that each group of candidates is a run of it."""
    copy = np.zeros(count.shape[0], dtype=np.bool_)
    first = 0
    while first < order.shape[0]:
        last = first + 1
        while (
            last < order.shape[0]
            and count[order[last]] == count[order[first]]
            and digest[order[last]] == digest[order[first]]
        ):
            last += 1
        # A group is almost always one column; a digest collision only costs comparisons.
        for i in range(first + 1, last):
            e = order[i]
            for k in range(first, i):
                kept = order[k]
                if not copy[kept] and _same(kept, e, col_start, col_flow, col_entry, bits):
                    copy[e] = True
                    break
        first = last
    return copy


@jit
def _without(entry_start, entry_res, entry_coef, copy):
    """The entries on resources that are not ``copy``, in their order, as CSR."""
    nflows = entry_start.shape[0] - 1
    start = np.zeros(nflows + 1, dtype=np.int64)
    for f in range(nflows):
        kept = 0
        for x in range(entry_start[f], entry_start[f + 1]):
            if not copy[entry_res[x]]:
                kept += 1
        start[f + 1] = start[f] + kept
    res = np.empty(start[nflows], dtype=entry_res.dtype)
    coef = np.empty(start[nflows], dtype=entry_coef.dtype)
    y = 0
    for x in range(entry_res.shape[0]):
        if not copy[entry_res[x]]:
            res[y] = entry_res[x]
            coef[y] = entry_coef[x]
            y += 1
    return start, res, coef

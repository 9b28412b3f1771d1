"""Pages as placement decides them: every page of every buffer in one flat array, filled
first come first served, the rest dealt round-robin over the stacks, and each page's frame
in its region."""

from __future__ import annotations

import math

import numpy as np

from nunasim.collectives.plan import Plan
from nunasim.jit import jit
from nunasim.mapping.address import AddressMap
from nunasim.mapping.buffer_layout import BufferLayout
from nunasim.mapping.placement import BUFFERS


class Pages:
    """Every page of every buffer of every GPU, end to end (GPU by GPU, buffers in
    ``BUFFERS`` order): each one's region, -1 until decided (first come first served)."""

    def __init__(self, plan: Plan, layout: BufferLayout) -> None:
        self.layout = layout
        counts = np.array(
            [[layout.pages(p.buffer_chunks(b)) for b in BUFFERS] for p in plan.gpus],
            dtype=np.int64,
        ).reshape(plan.ngpus, len(BUFFERS))
        self.counts = counts
        self.first = (np.cumsum(counts.ravel()) - counts.ravel()).reshape(counts.shape)
        self.region = np.full(int(counts.sum()), -1, dtype=np.int64)
        self.padding = sum(layout.padding(p.buffer_chunks(b)) for p in plan.gpus for b in BUFFERS)

    def gpu_pages(self, gpu: int) -> slice:
        """The pages of one GPU, every buffer."""
        first = int(self.first[gpu, 0])
        return slice(first, first + int(self.counts[gpu].sum()))

    def chunk_pages(
        self, gpu: np.ndarray, buffer: np.ndarray, chunk: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The first and last page (flat indices) that each chunk overlaps."""
        start = self.layout.offsets(chunk)
        page = self.layout.page_bytes
        base = self.first[gpu, buffer]
        return base + start // page, base + (start + self.layout.chunk_bytes - 1) // page


def _region_table(amap: AddressMap, nar_granularity: int | None) -> np.ndarray:
    """[stack, round] the region of a round-robin page (or flag page) of each stack: with
    NAR the domain its stack backs, round-robin over the domains when it backs several."""
    stacks = len(amap.socket.stacks)
    if not nar_granularity:
        return np.array([[amap.region(0, -1, s)] for s in range(stacks)], dtype=np.int64)
    segment = amap.segment(nar_granularity)
    backs = amap.layout(nar_granularity).stack_domains
    rounds = math.lcm(*(len(b) for b in backs))
    return np.array(
        [
            [amap.region(segment, backs[s][r % len(backs[s])], s) for r in range(rounds)]
            for s in range(stacks)
        ],
        dtype=np.int64,
    )


def round_robin_regions(amap: AddressMap, nar_granularity: int | None, count: int) -> np.ndarray:
    """The regions of ``count`` pages dealt round-robin over the stacks in the socket's
    interleave order (the k-th page to ``order[k % stacks]``, in round ``k // stacks``)."""
    regions = np.full(count, -1, dtype=np.int64)
    _deal(regions, _interleave(amap), _region_table(amap, nar_granularity))
    return regions


def ua_pages(pages: Pages, amap: AddressMap, nar_granularity: int | None) -> None:
    """Fill every undecided page: round-robin over stacks in page order per GPU (the k-th
    page of a GPU, decided or not, is its round-robin's k-th)."""
    order, table = _interleave(amap), _region_table(amap, nar_granularity)
    for g in range(len(pages.counts)):
        _deal(pages.region[pages.gpu_pages(g)], order, table)


def _interleave(amap: AddressMap) -> np.ndarray:
    return np.array(amap.socket.interleave_order, dtype=np.int64)


@jit
def _deal(regions: np.ndarray, order: np.ndarray, table: np.ndarray) -> None:
    """Give each undecided (negative) entry of ``regions`` its round-robin region: the k-th
    entry ``table[order[k % stacks], (k // stacks) % rounds]``."""
    stacks, rounds = order.shape[0], table.shape[1]
    for k in range(regions.shape[0]):
        if regions[k] < 0:
            regions[k] = table[order[k % stacks], (k // stacks) % rounds]


def page_frames(
    regions: np.ndarray, taken: np.ndarray | None = None, out: np.ndarray | None = None
) -> np.ndarray:
    """Each page's frame in its region: how many earlier pages took the same region (and,
    with ``taken``, how many frames of each region earlier pages elsewhere took; ``taken``
    is then counted on, so that a next call continues the numbering). Written into
    ``out`` when given."""
    if taken is None:
        taken = np.zeros(int(regions.max()) + 1 if len(regions) else 0, dtype=np.int64)
    frames = np.empty(len(regions), dtype=np.int64) if out is None else out
    _count_frames(np.asarray(regions, dtype=np.int64), taken, frames)
    return frames


@jit
def _count_frames(regions: np.ndarray, taken: np.ndarray, frames: np.ndarray) -> None:
    for i in range(regions.shape[0]):
        frames[i] = taken[regions[i]]
        taken[regions[i]] += 1

"""Placement's page tables, built a page at a time by compiled passes, against their
definitions: a page's frame is the number of earlier pages in its region, an undecided
page takes its round-robin region, and the flat table a policy hands over is the
concatenation of the per-buffer pages it describes."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.collectives.builtins import builtin_plan
from nunasim.io.presets import load_preset
from nunasim.mapping.address import AddressMap
from nunasim.mapping.buffer_layout import LAYOUTS
from nunasim.policies.configurations import CONFIGURATIONS
from nunasim.policies.pages import _region_table, page_frames, round_robin_regions, ua_pages
from nunasim.policies.place import place

SOCKET = load_preset("nextgen-4die").socket


def _earlier_in_region(regions: list[int], taken: list[int]) -> list[int]:
    return [taken[r] + regions[:i].count(r) for i, r in enumerate(regions)]


@settings(max_examples=100, deadline=None)
@given(
    regions=st.lists(st.integers(0, 9), max_size=60),
    more=st.lists(st.integers(0, 9), max_size=20),
    taken=st.lists(st.integers(0, 5), min_size=10, max_size=10),
)
def test_a_frame_counts_the_earlier_pages_of_its_region(regions, more, taken):
    counter = np.array(taken, dtype=np.int64)
    frames = page_frames(np.array(regions, dtype=np.int64), counter)
    assert frames.tolist() == _earlier_in_region(regions, taken)
    # the counter goes on: a second call numbers on from where the first stopped, here
    # into a slice of a larger table
    table = np.full(len(more) + 2, -7, dtype=np.int64)
    after = page_frames(np.array(more, dtype=np.int64), counter, out=table[1:-1])
    assert table[1:-1].tolist() == after.tolist()
    assert after.tolist() == _earlier_in_region(regions + more, taken)[len(regions) :]
    assert table[0] == table[-1] == -7
    if regions:
        assert page_frames(np.array(regions)).tolist() == _earlier_in_region(regions, [0] * 10)


@settings(max_examples=50, deadline=None)
@given(
    decided=st.lists(st.integers(-1, 20), max_size=80),
    granularity=st.sampled_from([None, *SOCKET.valid_granularities[:6]]),
    interleave=st.sampled_from(["listed", "die-first"]),
)
def test_an_undecided_page_takes_its_round_robin_region(decided, granularity, interleave):
    socket = dataclasses.replace(SOCKET, page_interleave=interleave)
    amap = AddressMap(socket, (granularity,) if granularity else ())
    table = _region_table(amap, granularity)
    order = socket.interleave_order

    def dealt(k: int) -> int:
        stacks = len(order)
        return int(table[order[k % stacks], (k // stacks) % table.shape[1]])

    assert round_robin_regions(amap, granularity, len(decided)).tolist() == [
        dealt(k) for k in range(len(decided))
    ]

    class OneGpu:  # the page table ``ua_pages`` fills: one GPU's pages
        region = np.array(decided, dtype=np.int64)
        counts = np.array([[len(decided), 0, 0]])

        def gpu_pages(self, gpu: int) -> slice:
            return slice(0, len(decided))

    pages = OneGpu()
    ua_pages(pages, amap, granularity)  # type: ignore[arg-type]
    assert pages.region.tolist() == [r if r >= 0 else dealt(k) for k, r in enumerate(decided)]


@settings(max_examples=15, deadline=None)
@given(
    name=st.sampled_from(
        [
            "allgather:direct:gpus=4:tbs=6",
            "allreduce:ring:gpus=4:tbs=2:chunks=2",
            "alltoall:direct:gpus=3:proto=LL",
            "allgather:ring:gpus=2:tbs=1",
        ]
    ),
    size=st.integers(1, 400_000),
    config=st.sampled_from(sorted(CONFIGURATIONS)),
    layout=st.sampled_from(LAYOUTS),
)
def test_the_flat_page_table_is_the_buffers_pages_end_to_end(name, size, config, layout):
    plan = builtin_plan(name)
    pod = load_preset("nextgen-4die").fit(plan.ngpus).pod
    placement = place(plan, size, pod, config, "auto", layout=layout)
    built = placement.page_table
    assert placement.built_pages is built
    rebuilt = dataclasses.replace(placement, built_pages=None).page_table
    for got, expected in zip(built, rebuilt, strict=True):
        assert got.dtype == expected.dtype and np.array_equal(got, expected)
    # frames number each region's pages of a GPU in order, flag pages after the buffers
    for gpu in placement.gpus:
        regions = [*np.concatenate([gpu.buffers[b].region for b in gpu.buffers]), *gpu.flags.region]
        frames = [*np.concatenate([gpu.buffers[b].frame for b in gpu.buffers]), *gpu.flags.frame]
        assert frames == _earlier_in_region(regions, [0] * len(placement.address_map.regions))

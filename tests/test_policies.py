"""Placement and routing policies: one contract every configuration honours, then the
properties of NAR and NAP, and the paper's orderings of zero-load hops."""

import dataclasses
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.arrays import unique_rows
from nunasim.collectives.access import access_sets
from nunasim.collectives.builtins import builtin_plan
from nunasim.errors import ConfigError
from nunasim.io.presets import load_preset
from nunasim.mapping.address import AddressMap
from nunasim.mapping.domains import domain_layout
from nunasim.mapping.placement import BUFFERS
from nunasim.mapping.resolve import resolve
from nunasim.policies.configurations import CONFIGURATIONS
from nunasim.policies.logical import logical_allocation
from nunasim.policies.place import place
from nunasim.policies.stats import placement_stats

POD = load_preset("nextgen-4die").pod
SOCKET = POD.socket
ROTATION = dataclasses.replace(SOCKET, port_hash="rotation")

CONTRACT_PLANS = [
    ("allgather:direct:gpus=8", "1MB"),
    ("allreduce:direct:gpus=4:tbs=6", "100kB"),
    ("alltoall:direct:gpus=8:tbs=56", "1MB"),
    ("allreduce:ring:gpus=4:tbs=2:chunks=2", "1MB"),
    ("reducescatter:direct:gpus=2", "10kB"),
]


def _size(text):
    from nunasim.units import parse_size

    return parse_size(text)


@pytest.fixture(
    scope="module",
    params=[(p, s, c) for p, s in CONTRACT_PLANS for c in CONFIGURATIONS],
    ids=lambda v: f"{v[0]}@{v[1]}-{v[2]}",
)
def placed(request):
    name, size, config = request.param
    plan = builtin_plan(name)
    return plan, place(plan, _size(size), POD, config, 12)


def test_every_threadblock_on_one_existing_cu(placed):
    plan, placement = placed
    assert len(placement.gpus) == plan.ngpus
    for program, gpu in zip(plan.gpus, placement.gpus, strict=True):
        assert len(gpu.tb_cu) == len(program.threadblocks)
        assert ((gpu.tb_cu >= 0) & (gpu.tb_cu < SOCKET.cus)).all()


def test_budgets_hold_unless_a_fallback_was_counted(placed):
    _, placement = placed
    if placement.config.threadblocks != "UA" and placement.fallback_tbs == 0:
        for used in placement.cu_used:
            assert (used <= SOCKET.outstanding_requests).all()
    if placement.config.pages == "NAP" and placement.fallback_chunks == 0:
        from nunasim.policies.budget import stack_budget

        capacity = stack_budget(SOCKET).capacity
        for used in placement.stack_used:
            assert (used <= capacity).all()


def _expected_pages(chunks, placement):
    cb, page, line = placement.chunk_bytes, SOCKET.page_bytes, SOCKET.line_bytes
    if placement.layout_mode == "packed":
        return -(-chunks * cb // page)
    if cb >= page:
        return chunks * -(-cb // page)
    return -(-chunks // (page // (-(-cb // line) * line)))


def test_every_page_placed_once(placed):
    plan, placement = placed
    amap = placement.address_map
    for g, gpu in enumerate(placement.gpus):
        seen = set()
        for buffer in BUFFERS:
            pages = gpu.buffers[buffer]
            assert len(pages.region) == _expected_pages(
                plan.gpus[g].buffer_chunks(buffer), placement
            )
            assert ((pages.region >= 0) & (pages.region < len(amap.regions))).all()
            for region, frame in zip(pages.region, pages.frame, strict=True):
                assert (region, frame) not in seen
                seen.add((int(region), int(frame)))


def test_pages_of_a_domain_sit_on_stacks_backing_it(placed):
    _, placement = placed
    amap = placement.address_map
    for region in amap.regions:
        if region.domain >= 0:
            assert region.stack in amap.layout(region.granularity).stacks[region.domain]


def test_routing_uses_the_domain_ports_only(placed):
    plan, placement = placed
    amap = placement.address_map
    lines = resolve(plan, placement).remote()
    for transfer in plan.transfers:
        addresses = placement.line_addresses(
            transfer.dst_gpu, transfer.dst.buffer, transfer.dst.index, transfer.dst.count
        )
        ports = amap.ports_of(addresses)
        for address, port in zip(addresses[:8], ports[:8], strict=True):
            region = amap.region_of(int(address))
            assert region.first_port <= port < region.first_port + region.ports
            if placement.config.nar:
                assert region.granularity == placement.granularity
            else:
                assert region.ports == len(SOCKET.ports)
    assert lines.size > 0


def test_deterministic(placed):
    plan, placement = placed
    again = place(plan, placement.size, POD, placement.config, 12, placement.seed)
    for a, b in zip(placement.gpus, again.gpus, strict=True):
        assert (a.tb_cu == b.tb_cu).all()
        for buffer in BUFFERS:
            assert (a.buffers[buffer].region == b.buffers[buffer].region).all()
            assert (a.buffers[buffer].frame == b.buffers[buffer].frame).all()


# --- routing -------------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(st.sampled_from([1, 2, 4, 6, 12]), st.integers(0, 10**6), st.integers(1, 5))
def test_rotation_hash_is_even_over_aligned_runs(granularity, run, runs):
    amap = AddressMap(ROTATION, () if granularity == 1 else (granularity,))
    region = amap.regions[-1]
    ports = region.ports
    start = (len(amap.regions) - 1 << 40) + run * ports
    lines = np.arange(start, start + runs * ports)
    counts = Counter(amap.ports_of(lines).tolist())
    assert set(counts) == set(range(region.first_port, region.first_port + ports))
    assert set(counts.values()) == {runs}
    assert [amap.port_of(int(a)) for a in lines[:20]] == amap.ports_of(lines[:20]).tolist()


@settings(max_examples=50, deadline=None)
@given(st.sampled_from([1, 2, 4, 6, 12]), st.integers(0, 2**36), st.integers(0, 200))
def test_xor_fold_hash_is_static_and_stays_in_the_domain(granularity, line, region_pick):
    amap = AddressMap(SOCKET, () if granularity == 1 else (granularity,))
    region_number = region_pick % len(amap.regions)
    region = amap.regions[region_number]
    address = (region_number << 40) | line
    # The port is a function of the address bits alone: the XOR of its 2 * bitlength(P - 1)
    # bit slices, modulo the domain's port count, counted from the domain's first port.
    width = 2 * (region.ports - 1).bit_length()
    folded, rest = 0, address
    while rest:
        folded ^= rest & ((1 << width) - 1)
        rest >>= width
    assert amap.port_of(address) == region.first_port + folded % region.ports
    # The lines of one aligned run of a page's worth go to distinct ports.
    per_page = SOCKET.page_bytes // SOCKET.line_bytes
    page = (address >> 4) << 4
    ports = amap.ports_of(np.arange(page, page + per_page))
    assert len(set(ports.tolist())) == min(per_page, region.ports)


def test_baseline_spreads_a_collective_over_all_ports():
    plan = builtin_plan("allgather:direct:gpus=8:tbs=56")
    placement = place(plan, 10_000_000, POD, "UA")
    lines = resolve(plan, placement).remote()
    per_port = np.bincount(lines.port, minlength=144)
    assert per_port.min() > 0.9 * per_port.mean()
    assert per_port.max() < 1.1 * per_port.mean()


def test_stack_domain_rule():
    layout = domain_layout(SOCKET, 12)
    # Every stack backs a domain and every domain has a stack.
    assert all(layout.stack_domains[s] for s in range(16))
    assert all(layout.stacks[d] for d in range(12))
    # The corner stack at (1, 0) is nearest to the top-left port router.
    corner = next(s for s in range(16) if SOCKET.mesh.coord(SOCKET.stacks[s].router) == (1, 0))
    assert 0 in layout.stack_domains[corner]
    halves = domain_layout(SOCKET, 2)
    assert {SOCKET.mesh.coord(SOCKET.stacks[s].router)[0] < 12 for s in halves.stacks[0]} == {True}


# --- NAP -----------------------------------------------------------------------------------


def test_figure_7_two_gpu_allgather_on_two_domains():
    plan = builtin_plan("allgather:direct:gpus=2:tbs=2:chunks=2")
    placement = place(plan, 8192 * 4, POD, "NAP+NAR", 2)
    domains = [gpu.tb_domain.tolist() for gpu in placement.gpus]
    # Threadblock j of both GPUs forms one logical group, and the two groups get the two domains.
    assert domains[0] == domains[1]
    assert sorted(domains[0]) == [0, 1]
    layout = domain_layout(SOCKET, 2)
    for gpu in placement.gpus:
        for tb, cu in enumerate(gpu.tb_cu):
            x = SOCKET.mesh.coord(SOCKET.cu_router(int(cu)))[0]
            assert x == (0 if gpu.tb_domain[tb] == 0 else 23)  # right at its domain's ports
    sets = access_sets(plan)
    for (g, tb), access in sets.items():
        domain = placement.gpus[g].tb_domain[tb]
        for chunk, buffer, owner in access.chunks:
            stacks = set(placement.chunk_stacks(owner, buffer, chunk).tolist())
            assert stacks <= set(layout.stacks[domain])


@pytest.mark.parametrize(
    "name",
    [
        "allgather:direct:gpus=8:tbs=56",
        "allreduce:direct:gpus=4",
        "allreduce:onepass:gpus=4:chunks=4",
    ],
)
def test_threadblocks_sharing_chunks_share_a_domain(name):
    plan = builtin_plan(name)
    placement = place(plan, 1_000_000, POD, "NAP+NAR", 6)
    for group in logical_allocation(access_sets(plan)):
        assert len({int(placement.gpus[g].tb_domain[t]) for g, t in group.members}) == 1


def test_nap_spills_to_the_next_cu_by_distance_never_over_budget():
    # 100 MB: every threadblock's steps exceed a CU's window, so each fills a CU.
    plan = builtin_plan("allgather:direct:gpus=8:tbs=56")
    placement = place(plan, 100_000_000, POD, "NAP+NAR", 12)
    assert placement.fallback_tbs == 0
    layout = domain_layout(SOCKET, 12)
    for gpu in placement.gpus:
        hosts = gpu.tb_cu.tolist()
        assert len(set(hosts)) == len(hosts)  # each threadblock fills a CU: one per CU
        for cu, domain in zip(hosts, gpu.tb_domain.tolist(), strict=True):
            order = layout.cus_by_distance(SOCKET, domain).tolist()
            nearer = order[: order.index(cu)]
            # It spilled past a nearer CU only because that CU was already full.
            assert set(nearer) <= set(hosts)


def test_grouping_by_all_chunks_collapses_direct_allreduce():
    plan = builtin_plan("allreduce:direct:gpus=8")
    assert len(logical_allocation(access_sets(plan), "all")) == 1
    assert len(logical_allocation(access_sets(plan), "communication")) == 28


# --- the paper's orderings, zero load  -------------------------------


def test_nap_nar_has_the_shortest_paths_and_nar_shortens_the_destination_side():
    plan = builtin_plan("allgather:direct:gpus=8")
    stats = {
        c: placement_stats(plan, place(plan, 1_000_000, POD, c, "auto")) for c in CONFIGURATIONS
    }
    total = {c: s.avg_cu_port_hops + s.avg_port_stack_hops for c, s in stats.items()}
    assert min(total, key=total.get) == "NAP+NAR"
    # NAR itself (at a fixed granularity: auto may turn it off) shortens the destination side.
    for base in ("UA", "NUMA", "NAP", "NAP*"):
        with_nar = placement_stats(plan, place(plan, 1_000_000, POD, f"{base}+NAR", 12))
        assert with_nar.avg_port_stack_hops < stats[base].avg_port_stack_hops


def test_auto_granularity_is_one_of_the_valid_ones():
    plan = builtin_plan("allgather:direct:gpus=8:tbs=56")
    placement = place(plan, 100_000, POD, "NAP+NAR", "auto")
    assert placement.granularity in SOCKET.valid_granularities


def test_bad_arguments():
    plan = builtin_plan("allgather:direct:gpus=8")
    with pytest.raises(ConfigError, match="unknown configuration"):
        place(plan, 1000, POD, "NAP+X")
    with pytest.raises(ConfigError, match="not valid"):
        place(plan, 1000, POD, "NAP+NAR", 5)
    with pytest.raises(ConfigError, match="pod has 4 sockets"):
        place(plan, 1000, POD.with_sockets(4), "UA")
    with pytest.raises(ConfigError, match="unknown grouping"):
        place(plan, 1000, POD, "NAP", 2, grouping="chunks")


@pytest.mark.parametrize("interleave", ["listed", "die-first"])
def test_ua_pages_go_round_the_stacks_in_the_interleave_order(interleave):
    socket = dataclasses.replace(SOCKET, page_interleave=interleave)
    pod = dataclasses.replace(POD, socket=socket)
    placement = place(builtin_plan("allgather:direct:gpus=8"), _size("1MB"), pod, "UA", 1)
    regions = placement.address_map.regions
    order = socket.interleave_order
    counter = 0
    for buffer in BUFFERS:
        for region in placement.gpus[0].buffers[buffer].region:
            assert regions[region].stack == order[counter % len(order)]
            counter += 1


def test_the_die_even_numa_reading_spreads_each_dies_threadblocks_as_ua_does():
    """Section 3.3's other reading: a threadblock on the die holding most of its data, the
    die's threadblocks then dispatched over the die one router at a time."""
    from nunasim.policies.place import place

    pod = load_preset("nextgen-4die").fit(8).pod
    socket = pod.socket
    plan = builtin_plan("allgather", gpus=8, tbs=56)
    even = place(plan, 1_000_000, pod, "NUMA+NAR", 1, numa_reading="die-even")
    first = place(plan, 1_000_000, pod, "NUMA+NAR", 1)
    for gpu in range(8):
        cus = even.gpus[gpu].tb_cu
        routers = [socket.cu_router(int(cu)) for cu in cus]
        by_die: dict[int, list[int]] = {}
        for router in routers:
            by_die.setdefault(socket.die_of_router[router], []).append(router)
        for die_routers in by_die.values():  # no router twice before every router once
            assert len(set(die_routers)) == min(len(die_routers), 36)
    assert not (even.gpus[0].tb_cu == first.gpus[0].tb_cu).all()  # threadblocks move
    with pytest.raises(ConfigError, match="unknown NUMA reading 'mine'"):
        place(plan, 1_000_000, pod, "NUMA+NAR", 1, numa_reading="mine")


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 40).flatmap(
        lambda rows: st.integers(1, 6).flatmap(
            lambda cols: st.lists(
                st.lists(st.integers(0, 3), min_size=cols, max_size=cols),
                min_size=rows,
                max_size=rows,
            ).map(lambda xs: np.array(xs, dtype=np.int64).reshape(rows, cols))
        )
    )
)
def test_unique_rows_is_numpys_unique_over_rows(rows):
    """Distinct rows (the NUMA proxy's stack hits, lowering's line layouts): numpy's own
    answer, distinct rows in the same (lexicographic) order and the same index of each row
    among them."""
    distinct, inverse = unique_rows(rows)
    expected, expected_inverse = np.unique(rows.astype(np.float64), axis=0, return_inverse=True)
    assert np.array_equal(distinct, expected)
    assert np.array_equal(inverse, expected_inverse.reshape(-1))
    assert np.array_equal(distinct[inverse], rows)

"""Mesh geometry and the socket's derived queries, on the presets and on random floorplans."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nunasim.hardware import Direction, Mesh
from nunasim.io.presets import load_preset
from strategies import sockets


@pytest.fixture(scope="module")
def nextgen():
    return load_preset("nextgen-4die").socket


def test_router_numbering_round_trips():
    mesh = Mesh(24, 6)
    for r in range(mesh.routers):
        assert mesh.router(*mesh.coord(r)) == r
    assert mesh.router(23, 5) == 143
    with pytest.raises(ValueError):
        mesh.router(24, 0)


def test_link_ids():
    mesh = Mesh(3, 2)
    assert mesh.link(0, 1) == 4 * 0 + Direction.EAST
    assert mesh.link(1, 0) == 4 * 1 + Direction.WEST
    assert mesh.link(0, 3) == 4 * 0 + Direction.SOUTH
    assert mesh.link_ends(mesh.link(4, 1)) == (4, 1)
    # 3 x 2 mesh: 2 * (2 * 2 horizontal + 3 * 1 vertical) directed links.
    assert len(mesh.links()) == 14
    assert not mesh.has_link(4 * 0 + Direction.WEST)
    with pytest.raises(ValueError):
        mesh.link(0, 4)


def test_xy_path_goes_x_then_y():
    mesh = Mesh(24, 6)
    src, dst = mesh.router(2, 1), mesh.router(5, 4)
    path = mesh.path(src, dst, "xy")
    assert [mesh.link_ends(link)[1] for link in path] == [
        mesh.router(3, 1),
        mesh.router(4, 1),
        mesh.router(5, 1),
        mesh.router(5, 2),
        mesh.router(5, 3),
        mesh.router(5, 4),
    ]
    yx = mesh.path(src, dst, "yx")
    assert mesh.link_ends(yx[0])[1] == mesh.router(2, 2)
    assert mesh.path(src, src) == []


def test_bisection_links():
    assert Mesh(24, 6).bisection_links() == 12
    assert Mesh(6, 24).bisection_links() == 12
    assert Mesh(6, 6).bisection_links() == 12
    assert Mesh(1, 1).bisection_links() == 0


def test_nextgen_path_latency(nextgen):
    # Corner to corner: 23 + 5 hops of 10 cycles at 1.2 GHz.
    a, b = nextgen.mesh.router(0, 0), nextgen.mesh.router(23, 5)
    assert nextgen.hops(a, b) == 28
    assert nextgen.hop_ps == 8333
    assert nextgen.path_latency_ps(a, b) == 28 * 8333
    assert nextgen.link_flit_ps == 307  # 256 B at 833.3 GB/s


def test_nextgen_port_and_stack_ordering(nextgen):
    mesh = nextgen.mesh
    corner = mesh.router(0, 0)
    order = nextgen.ports_by_distance(corner)
    assert order[:12] == tuple(range(12))  # the corner's own 12 ports
    assert order[12:24] == tuple(range(12, 24))  # then the router below it
    assert set(order[-12:]) == set(range(132, 144))  # the far corner last
    stacks = nextgen.stacks_by_distance(corner)
    assert stacks[0] == 0  # stack at (1, 0)
    middle = mesh.router(11, 2)
    nearest = nextgen.stacks[nextgen.stacks_by_distance(middle)[0]]
    assert mesh.coord(nearest.router) == (10, 0)


def test_nextgen_domains(nextgen):
    assert set((1, 2, 4, 6, 12)) <= set(nextgen.valid_granularities)
    assert 3 not in nextgen.valid_granularities  # 48 ports would span both ends
    assert 5 not in nextgen.valid_granularities  # does not divide 144
    assert nextgen.domain_ports(2, 0) == range(0, 72)
    assert nextgen.domain_ports(2, 1) == range(72, 144)
    assert nextgen.domain_ports(12, 7) == range(84, 96)
    for port in nextgen.domain_ports(12, 7):
        assert nextgen.mesh.coord(nextgen.ports[port].router) == (23, 1)
    assert {nextgen.mesh.coord(nextgen.ports[p].router) for p in nextgen.domain_ports(4, 1)} == {
        (0, 3),
        (0, 4),
        (0, 5),
    }
    assert nextgen.port_domain(6, 143) == 5
    with pytest.raises(Exception, match="not valid"):
        nextgen.domain_ports(3, 0)


def test_die_crossing_penalty_applies_only_between_dies(nextgen):
    from dataclasses import replace

    slow = replace(nextgen, die_crossing_cycles=6)
    mesh = slow.mesh
    inside = mesh.link(mesh.router(4, 0), mesh.router(5, 0))
    across = mesh.link(mesh.router(5, 0), mesh.router(6, 0))
    assert slow.link_latency_ps(inside) == 8333
    assert slow.link_latency_ps(across) == 13333
    a, b = mesh.router(0, 0), mesh.router(23, 0)
    assert slow.path_latency_ps(a, b) == 20 * 8333 + 3 * 13333


@settings(max_examples=60, deadline=None)
@given(sockets(), st.data())
def test_every_path_is_minimal_connected_and_on_mesh(socket, data):
    mesh = socket.mesh
    src = data.draw(st.integers(0, mesh.routers - 1))
    dst = data.draw(st.integers(0, mesh.routers - 1))
    path = socket.path(src, dst)
    assert len(path) == socket.hops(src, dst)
    at = src
    for link in path:
        assert mesh.has_link(link)
        a, b = mesh.link_ends(link)
        assert a == at
        at = b
    assert at == dst
    assert len(set(path)) == len(path)
    assert socket.path_latency_ps(src, dst) >= socket.hops(src, dst) * socket.hop_ps
    # Dimension order: every move along the first axis comes before any along the second.
    first = "x" if socket.routing == "xy" else "y"
    axes = ["x" if link % 4 in (Direction.EAST, Direction.WEST) else "y" for link in path]
    assert axes == sorted(axes, key=lambda axis: axis != first)


@settings(max_examples=40, deadline=None)
@given(sockets())
def test_the_distance_table_sums_each_paths_links(socket):
    """Hops and zero-load latency of every pair, die crossings included, are those of the
    links of its path, taken one by one."""
    table = socket.router_paths
    for src in range(socket.mesh.routers):
        for dst in range(socket.mesh.routers):
            path = socket.path(src, dst)
            assert table.hops[src, dst] == len(path) == socket.mesh.hops(src, dst)
            assert table.latency_ps[src, dst] == sum(socket.link_latency_ps(x) for x in path)


@settings(max_examples=40, deadline=None)
@given(sockets())
def test_every_router_reaches_every_port_and_stack(socket):
    ports = list(range(len(socket.ports)))
    stacks = list(range(len(socket.stacks)))
    for router in range(socket.mesh.routers):
        by_port = socket.ports_by_distance(router)
        by_stack = socket.stacks_by_distance(router)
        assert sorted(by_port) == ports
        assert sorted(by_stack) == stacks
        latencies = [socket.path_latency_ps(router, socket.ports[p].router) for p in by_port]
        assert latencies == sorted(latencies)
        for p in ports:
            path = socket.path(router, socket.ports[p].router)
            end = socket.mesh.link_ends(path[-1])[1] if path else router
            assert end == socket.ports[p].router


@settings(max_examples=60, deadline=None)
@given(sockets())
def test_domains_partition_ports_into_contiguous_groups(socket):
    valid = socket.valid_granularities
    assert 1 in valid
    count = len(socket.ports)
    for g in valid:
        covered = []
        for d in range(g):
            ports = socket.domain_ports(g, d)
            assert len(ports) == count // g
            routers = {socket.ports[p].router for p in ports}
            assert g == 1 or socket.mesh.connected(routers)
            assert all(socket.port_domain(g, p) == d for p in ports)
            covered.extend(ports)
        assert covered == list(range(count))
    for g in range(2, count + 1):
        if g not in valid:
            assert not socket.splits_contiguously(g)

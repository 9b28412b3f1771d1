"""Table 2's I/O dies: dies of kind ``io`` with no compute units, whose links to the compute
dies have their own crossing latency and width. Exact zero-load figures by hand, the
literal presets' cache identity untouched, and the errors of a preset that misuses them."""

from importlib import resources

import numpy as np
import pytest
import yaml

from nunasim.engine.analytic.bound import store_latency_ps
from nunasim.engine.kernel.kinds import LINK
from nunasim.engine.lowering.lower import lower
from nunasim.engine.lowering.messages import STORE
from nunasim.engine.packet.engine import simulate
from nunasim.errors import ConfigError
from nunasim.io.presets import builtin_names, load_preset, parse_preset
from nunasim.policies.place import place
from nunasim.units import cycles_to_ps, transfer_ps
from small_plans import one_store_plan

IO_PRESET = "nextgen-4die-io"


def _data(name: str = IO_PRESET) -> dict:
    files = resources.files("nunasim.hardware").joinpath("presets", f"{name}.yaml")
    return yaml.safe_load(files.read_text(encoding="utf-8"))


def _parse(data: dict):
    return parse_preset(yaml.safe_dump(data), "my.yaml")


def _variant(**noc: object):
    """``nextgen-4die-io`` with ``noc`` keys set, read as a user's file would be."""
    data = _data()
    data["socket"]["noc"].update(noc)
    return _parse(data)


def test_the_io_preset_keeps_table_2s_resources():
    socket = load_preset(IO_PRESET).socket
    literal = load_preset("nextgen-4die").socket
    assert socket.cus == literal.cus == 576
    assert len(socket.ports) == len(literal.ports) == 144
    assert len(socket.stacks) == len(literal.stacks) == 16
    assert [d.kind for d in socket.dies] == ["io", "compute", "compute", "compute", "compute", "io"]
    # 72 ports on each I/O die, and no compute unit on either.
    io_routers = {
        r for r in range(socket.mesh.routers) if socket.dies[socket.die_of_router[r]].kind == "io"
    }
    assert sum(p.router in io_routers for p in socket.ports) == 144
    assert not io_routers & set(socket.cu_routers)
    assert socket.link_bandwidth == literal.link_bandwidth  # the same 10 TB/s bisection


@pytest.mark.parametrize("name", builtin_names())
def test_presets_without_io_dies_keep_their_cache_identity(name):
    """A result cache keys on the pod's repr: the I/O-die fields, at their neutral values,
    must not appear in it, so that every point computed before them is still found."""
    text = repr(load_preset(name).pod)
    if any(d.kind == "io" for d in load_preset(name).socket.dies):
        assert name in (IO_PRESET, "nextgen-4die-calibrated")
        assert "kind='io'" in text and "io_crossing_cycles=" in text
    else:
        assert "kind=" not in text and "io_crossing_cycles" not in text
        assert "io_link_bandwidth" not in text


def test_zero_load_paths_by_hand():
    """On a 1.2 GHz NoC with 10 cycles a hop: an I/O-die link costs 10 + io_crossing_cycles,
    a compute-to-compute die link 10 + die_crossing_cycles, any other link 10."""
    preset = _variant(io_crossing_cycles=30, die_crossing_cycles=5)
    socket, clock = preset.socket, 1.2e9
    r = socket.mesh.router
    hop, io_hop, die_hop = (cycles_to_ps(c, clock) for c in (10, 40, 15))
    assert socket.path_latency_ps(r(1, 2), r(0, 2)) == io_hop  # into the left I/O die
    assert socket.path_latency_ps(r(24, 3), r(25, 3)) == io_hop  # into the right one
    assert socket.path_latency_ps(r(2, 2), r(1, 2)) == hop
    assert socket.path_latency_ps(r(6, 0), r(7, 0)) == die_hop  # compute die to compute die
    # Across the socket, X then Y: 25 links, two into I/O dies, three between compute dies,
    # then 5 down the right I/O die.
    assert (
        socket.path_latency_ps(r(0, 0), r(25, 5)) == 2 * io_hop + 3 * die_hop + 20 * hop + 5 * hop
    )


def test_io_links_serialise_at_their_own_width():
    preset = _variant(io_link_bandwidth="100GB/s")
    socket = preset.socket
    r = socket.mesh.router
    io_link = [link for link in socket.path(r(1, 4), r(0, 4))]
    inner = socket.path(r(2, 4), r(1, 4))
    assert socket.link_flits_ps[io_link[0]] == transfer_ps(256, 100e9)
    assert socket.link_flits_ps[inner[0]] == socket.link_flit_ps == transfer_ps(256, 10e12 / 12)


def test_one_store_through_the_io_dies_takes_its_hand_computed_time():
    """One remote store at zero load: L1, the path to its port's router (into an I/O die),
    the port, the plane, the path from the ingress port to the stack, and the stack, each
    term by hand from the preset's numbers, and the simulated store takes exactly that."""
    preset = _variant(io_crossing_cycles=30, io_link_bandwidth="100GB/s")
    pod, socket = preset.pod, preset.socket
    for config in ("UA", "NAP+NAR"):
        placement = place(one_store_plan(), socket.line_bytes, pod, config, 12, 0)
        lowered = lower(pod, one_store_plan(), placement)
        trace = simulate(lowered)
        (m,) = np.nonzero(lowered.msg_kind == STORE)[0]
        cu_router = socket.cu_router(int(lowered.msg_cu[m]))
        port, stack = int(lowered.msg_port[m]), int(lowered.msg_stack[m])
        via, target = socket.ports[port].router, socket.stacks[stack]
        by_hand = (
            socket.path_latency_ps(cu_router, via)
            + pod.port_flit_ps
            + pod.plane_latency_ps
            + socket.path_latency_ps(via, target.router)
            + target.latency_ps
        )
        assert by_hand == store_latency_ps(pod, cu_router, port, stack)
        assert trace.msg_done[m] - trace.msg_issue[m] - socket.l1_latency_ps == by_hand
        # Every port sits on an I/O die: the store leaves its socket through one I/O-die
        # link and enters the other through another, each at the crossing's latency.
        links = lowered.route[lowered.route_start[m] : lowered.route_start[m + 1]]
        links = links[lowered.resources.kind[links] == LINK]
        crossing = [lk for lk in lowered.resources.index[links] if socket.reaches_io_die(int(lk))]
        assert len(crossing) == 2


@pytest.mark.parametrize(
    ("change", "where", "says"),
    [
        (
            lambda d: d["socket"]["dies"][0].update(kind="memory"),
            "dies[0].kind",
            "unknown die kind",
        ),
        (
            lambda d: d["socket"]["compute"].update(routers=[[0, 0], [3, 3]]),
            "compute.routers[0]",
            "is on an I/O die",
        ),
        (
            lambda d: d["socket"]["noc"].update(io_crossing_cycles=-1),
            "noc.io_crossing_cycles",
            "must not be negative",
        ),
    ],
)
def test_misused_io_dies_are_refused_with_their_key(change, where, says):
    data = _data()
    change(data)
    with pytest.raises(ConfigError) as error:
        _parse(data)
    assert where in str(error.value) and says in str(error.value)
    assert "my.yaml" in str(error.value)


def test_io_keys_without_an_io_die_are_refused():
    data = _data("nextgen-4die")
    data["socket"]["noc"]["io_crossing_cycles"] = 20
    with pytest.raises(ConfigError, match=r"noc\.io_crossing_cycles.*no I/O die"):
        _parse(data)

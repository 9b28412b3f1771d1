"""``nunasim noc``: synthetic traffic on one socket's mesh (docs/noc.md)."""

import json
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from nunasim.cli import main
from nunasim.engine.noc import (
    _run,
    channel_bound,
    link_flits_per_cycle,
    route_table,
    run_noc,
    transpose_destinations,
    uniform_bound,
)
from nunasim.errors import ConfigError
from nunasim.hardware import Mesh
from nunasim.io.presets import load_preset
from nunasim.units import ps_to_cycles
from strategies import sockets


@pytest.fixture(scope="module")
def big():
    return load_preset("nextgen-4die").socket  # 24 x 6


@pytest.fixture(scope="module")
def small():
    return load_preset("monolithic").socket  # 6 x 6


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- (1) zero load -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "traffic", "flits", "rate"),
    [
        ("monolithic", "uniform", 1, 0.002),
        ("monolithic", "uniform", 4, 0.005),
        ("monolithic", "transpose", 4, 0.005),
        ("nextgen-4die", "hotspot", 4, 0.002),
    ],
)
def test_low_load_latency_is_the_zero_load_latency(preset, traffic, flits, rate):
    socket = load_preset(preset).socket
    noc = run_noc(socket, traffic, rate, flits, cycles=5000, warmup=500, seed=3)
    result = noc.result()
    src, dst = noc.packets.src[noc.measured], noc.packets.dst[noc.measured]
    assert len(src) == result.packets > 100
    # Analytic, from the hardware alone: X-Y hops x cycles per hop, plus the injection
    # port (no latency of its own, as in the packet engine), plus the tail: (flits - 1)
    # link serialisation times.
    hops = np.mean([socket.hops(int(a), int(b)) for a, b in zip(src, dst, strict=True)])
    tail = ps_to_cycles((flits - 1) * socket.link_flit_ps, socket.noc_clock_hz)
    analytic = hops * socket.cycles_per_hop + 0 + tail
    assert result.avg_latency_cycles == pytest.approx(analytic, rel=0.01)
    assert result.zero_load_latency_cycles == pytest.approx(analytic, rel=0.001)
    # No packet beats its own zero-load latency, to the picosecond.
    assert (noc.latency_ps() >= noc.zero_load_ps()).all()
    assert not result.saturated


def test_a_lone_packet_takes_exactly_its_path_latency(small):
    noc = run_noc(small, "uniform", 0.001, 1, cycles=3000, warmup=0, seed=0)
    latency, zero_load = noc.latency_ps(), noc.zero_load_ps()
    # The first packet finds the network empty: the path's hop latencies, nothing else.
    assert (
        latency[0]
        == zero_load[0]
        == small.path_latency_ps(int(noc.packets.src[0]), int(noc.packets.dst[0]))
    )
    # At this load almost no packet meets another.
    assert (latency == zero_load).mean() > 0.98


# --- (2) accepted = offered below saturation ------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "traffic", "flits", "share"),
    [
        ("monolithic", "uniform", 1, 0.5),  # share of the channel bound, capped at rate 1
        ("monolithic", "transpose", 4, 0.7),
        ("monolithic", "hotspot", 1, 0.7),
        ("nextgen-4die", "uniform", 4, 0.75),
    ],
)
def test_accepted_equals_offered_below_saturation(preset, traffic, flits, share):
    socket = load_preset(preset).socket
    rate = min(1.0, share * channel_bound(socket, traffic))
    result = run_noc(socket, traffic, rate, flits, cycles=2000, warmup=500, seed=1).result()
    assert result.offered_flits_per_node_cycle == pytest.approx(
        rate * _sending(socket, traffic), rel=0.1
    )
    assert result.accepted_flits_per_node_cycle == pytest.approx(
        result.offered_flits_per_node_cycle, rel=0.03
    )
    assert not result.saturated


def _sending(socket, traffic):
    """Share of routers that inject at all (transpose's fixed points do not)."""
    if traffic != "transpose":
        return 1.0
    moving = transpose_destinations(socket.mesh) != np.arange(socket.mesh.routers)
    return float(moving.mean())


# --- (3) latency grows with load ------------------------------------------------------------


def test_latency_never_decreases_as_load_increases(big):
    rates = (0.02, 0.1, 0.2, 0.3, 0.4, 0.44, 0.48, 0.55)
    runs = [run_noc(big, "uniform", r, 1, cycles=2000, warmup=500, seed=2) for r in rates]
    results = [noc.result() for noc in runs]
    latency = np.array([r.avg_latency_cycles for r in results])
    queueing = latency - [r.zero_load_latency_cycles for r in results]
    # The queueing delay (latency above the same packets' zero-load latency) never falls.
    assert (np.diff(queueing) >= 0).all(), queueing
    # With one seed a higher rate injects a superset of the packets: the packets of the
    # lower rate take longer on average once the extra traffic is added.
    routers = big.mesh.routers
    for low, high in pairwise(runs):
        key_low = low.packets.cycle[low.measured] * routers + low.packets.src[low.measured]
        key_high = high.packets.cycle[high.measured] * routers + high.packets.src[high.measured]
        same = np.searchsorted(key_high, key_low)
        assert (key_high[same] == key_low).all()
        assert high.latency_ps()[same].mean() > low.latency_ps().mean()
    # The average latency of each run never falls by more than the sampling error of its
    # zero-load part: the runs' path mixes differ (a standard error of 0.2-0.8 cycles for
    # these short runs) while at low load queueing adds only ~0.1 cycle per step.
    clock = big.noc_clock_hz
    se = np.array(
        [np.std(ps_to_cycles(n.zero_load_ps(), clock)) / np.sqrt(n.stop - n.first) for n in runs]
    )
    assert (np.diff(latency) >= -3 * np.hypot(se[1:], se[:-1])).all(), latency
    # Past the bound the latency grows by far more than that.
    assert latency[-1] > 2 * latency[0]
    assert [r.saturated for r in results] == [False] * 6 + [True] * 2


# --- (4) the bisection (channel-load) bound ------------------------------------------------


def test_uniform_bound_is_the_bisection_bound(big):
    # A link carries link_flits = cycle / link_flit_ps flits per NoC cycle:
    # 833.33 ps / 307 ps = 2.714 on nextgen-4die.
    link_flits = link_flits_per_cycle(big)
    assert link_flits == pytest.approx(1e12 / 1.2e9 / 307)
    # 24 x 6, uniform, X-Y: the middle x cut carries (N/2)(N/2)/(N-1) flits per cycle of
    # the N r offered over H = 6 links each way: r <= 4 B (N - 1) / (W N) = 0.449.
    n, w = 144, 24
    assert uniform_bound(big.mesh, link_flits) == pytest.approx(4 * link_flits * (n - 1) / (w * n))
    assert uniform_bound(big.mesh, link_flits) == pytest.approx(0.4493, abs=1e-4)
    assert channel_bound(big, "uniform") == pytest.approx(uniform_bound(big.mesh, link_flits))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sockets(max_width=9, max_height=7))
def test_closed_form_matches_the_channel_loads_of_the_routes(socket):
    if socket.mesh.routers < 2:
        return
    link_flits = link_flits_per_cycle(socket)
    assert channel_bound(socket, "uniform") == pytest.approx(
        uniform_bound(socket.mesh, link_flits), rel=1e-9
    )


def test_throughput_above_the_bound_stays_below_it(big):
    bound = channel_bound(big, "uniform")
    mesh = big.mesh
    n, w = mesh.routers, mesh.width
    # Share of uniform packets that cross the middle x cut: (N/2)(N/2) / (N (N - 1)) x 2.
    crossing_share = n / (2 * (n - 1))
    for rate in (1.1 * bound, 0.7):
        noc = run_noc(big, "uniform", rate, 1, cycles=2000, warmup=500, seed=4)
        result = noc.result()
        assert result.saturated
        assert result.accepted_flits_per_node_cycle < 0.95 * result.offered_flits_per_node_cycle
        # The uniform traffic the network carries: its cut-crossing flits delivered in the
        # window, scaled back by the crossing share. That is what the bisection limits.
        cross = (noc.packets.src % w < w // 2) != (noc.packets.dst % w < w // 2)
        carried = noc.flits_arrived(*noc.window_ps, mask=cross) / (n * noc.cycles)
        assert carried / crossing_share <= 1.05 * bound
    # With infinite buffers and no back-pressure, flows that avoid the saturated links
    # keep their full rate, so the total accepted throughput can exceed the uniform bound
    # far past saturation (docs/noc.md): only the uniform-traffic share is bounded.
    below = run_noc(big, "uniform", 0.9 * bound, 1, cycles=2000, warmup=500, seed=4).result()
    assert not below.saturated


# --- (5) determinism ------------------------------------------------------------------------


def test_same_seed_same_result(small):
    one = run_noc(small, "hotspot", 0.6, 2, cycles=2000, warmup=200, seed=7)
    two = run_noc(small, "hotspot", 0.6, 2, cycles=2000, warmup=200, seed=7)
    assert one.result() == two.result()
    assert (one.head_ps == two.head_ps).all()
    other = run_noc(small, "hotspot", 0.6, 2, cycles=2000, warmup=200, seed=8)
    assert other.result() != one.result()


def test_compiled_loop_equals_python(small):
    if not hasattr(_run, "py_func"):
        pytest.skip("running uncompiled already (NUNASIM_NO_JIT=1)")
    noc = run_noc(small, "uniform", 0.8, 2, cycles=300, warmup=50, seed=1)
    table = route_table(small)
    head = np.full(len(noc.inject_ps), -1, dtype=np.int64)
    busy = np.zeros(small.mesh.link_slots, dtype=np.int64)
    events = _run.py_func(
        noc.inject_ps,
        noc.packets.src,
        noc.packets.src * small.mesh.routers + noc.packets.dst,
        table.start,
        table.link,
        table.link_latency_ps,
        small.mesh.routers,
        2 * small.link_flit_ps,
        0,
        noc.stop,
        head,
        busy,
    )
    assert events == noc.events
    assert (head == noc.head_ps).all()
    assert (busy == noc.link_busy_ps).all()


def test_higher_rate_injects_a_superset(small):
    low = run_noc(small, "uniform", 0.1, 1, cycles=1000, warmup=0, seed=5)
    high = run_noc(small, "uniform", 0.3, 1, cycles=1000, warmup=0, seed=5)

    def key(noc):
        p = noc.packets
        return set(zip(p.cycle.tolist(), p.src.tolist(), p.dst.tolist(), strict=True))

    assert key(low) < key(high)


# --- traffic patterns -----------------------------------------------------------------------


def test_transpose_rule():
    square = Mesh(6, 6)
    dst = transpose_destinations(square)
    assert all(dst[square.router(x, y)] == square.router(y, x) for x in range(6) for y in range(6))
    wide = Mesh(24, 6)
    dst = transpose_destinations(wide)
    for x in range(24):
        for y in range(6):
            assert dst[wide.router(x, y)] == wide.router(4 * y, x // 4)


def test_hotspot_share(small):
    noc = run_noc(small, "hotspot", 0.5, 1, cycles=2000, warmup=0, seed=0, hotspot_fraction=0.3)
    hot = small.mesh.router(3, 3)
    others = noc.packets.src != hot
    share = (noc.packets.dst[others] == hot).mean()
    # 0.3 directly, plus the uniform rest's 1/35.
    assert share == pytest.approx(0.3 + 0.7 / 35, abs=0.02)
    assert (noc.packets.src != noc.packets.dst).all()


# --- (6) bad input and the command ------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"traffic": "bitcomp"},
        {"rate": 0.0},
        {"rate": -0.1},
        {"rate": 1.5},
        {"packet_flits": 0},
        {"cycles": 0},
        {"warmup": -1},
        {"hotspot_fraction": 1.2},
        {"hotspot": 36},
    ],
)
def test_bad_input_is_a_config_error(small, kwargs):
    with pytest.raises(ConfigError):
        run_noc(small, **{"cycles": 100, **kwargs}).result()


@pytest.mark.parametrize(
    "argv",
    [
        ["--traffic", "bitcomp"],
        ["--rate", "0"],
        ["--rate", "1.01"],
        ["--packet-flits", "0"],
        ["--preset", "no-such-preset"],
        ["--traffic", "hotspot", "--hotspot", "6,0"],
        ["--traffic", "hotspot", "--hotspot", "middle"],
    ],
)
def test_bad_input_exits_2(capsys, argv):
    code, _, err = run(capsys, "noc", "--preset", "monolithic", "--cycles", "100", *argv)
    assert code == 2
    assert err.startswith("nunasim: error:")


def test_noc_command_json(capsys):
    code, out, _ = run(
        capsys,
        "noc",
        "--preset",
        "monolithic",
        "--traffic",
        "uniform",
        "--rate",
        "0.1",
        "--packet-flits",
        "1",
        "--cycles",
        "2000",
        "--warmup",
        "200",
        "--json",
    )
    assert code == 0
    data = json.loads(out)
    for key in (
        "avg_latency_cycles",
        "max_latency_cycles",
        "accepted_flits_per_node_cycle",
        "offered_flits_per_node_cycle",
        "packets",
        "saturated",
        "zero_load_latency_cycles",
    ):
        assert key in data
    assert data["max_latency_cycles"] >= data["avg_latency_cycles"] > 0
    assert data["accepted_flits_per_node_cycle"] == pytest.approx(0.1, rel=0.1)
    assert data["preset"] == "monolithic"


def test_noc_command_text(capsys):
    code, out, _ = run(
        capsys,
        "noc",
        "--preset",
        "monolithic",
        "--traffic",
        "hotspot",
        "--hotspot",
        "0,0",
        "--rate",
        "0.2",
        "--cycles",
        "1000",
    )
    assert code == 0
    assert "hotspot (0.2 to (0, 0))" in out
    assert "accepted" in out and "latency" in out and "saturated      no" in out

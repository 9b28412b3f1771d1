"""``nunasim noc``: synthetic traffic on one socket's mesh (docs/noc.md)."""

import dataclasses
import inspect
import json
import re
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_run import run
from nunasim.cli.noc import parse_rates
from nunasim.collectives.builtins import builtin_plan
from nunasim.engine.kernel.rows import FLITS, OCC
from nunasim.engine.lowering.lower import lower
from nunasim.engine.lowering.messages import STORE
from nunasim.engine.noc.run import (
    NocAccountingError,
    Pattern,
    Traffic,
    channel_bound,
    check_accounting,
    destination_matrix,
    link_flits_per_cycle,
    noc_inputs,
    permutation_destinations,
    resource_loads,
    run_noc,
    transpose_destinations,
    uniform_bound,
)
from nunasim.engine.noc.saturation import saturation
from nunasim.engine.packet import core, state
from nunasim.engine.packet.core import CoreInputs, CoreOutputs
from nunasim.engine.packet.engine import core_inputs, run_core, simulate
from nunasim.engine.packet.state import LoopState, loop_state
from nunasim.errors import ConfigError
from nunasim.experiments.noc_curve import CurveSpec, sweep
from nunasim.hardware import Die, Mesh, Pod, Port, Socket, Stack
from nunasim.hardware.socket import Router
from nunasim.io.presets import load_preset
from nunasim.io.results import read_table
from nunasim.policies.place import place
from nunasim.scenario import Scenario
from nunasim.units import cycles_to_ps, ps_to_cycles
from small_plans import one_store_plan
from strategies import sockets


@pytest.fixture(scope="module")
def big():
    return load_preset("nextgen-4die").socket  # 24 x 6


@pytest.fixture(scope="module")
def small():
    return load_preset("monolithic").socket  # 6 x 6


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
    # and ejection ports (no latency of their own, as in the packet engine), plus the tail:
    # (flits - 1) link serialisation times.
    hops = np.mean([socket.hops(int(a), int(b)) for a, b in zip(src, dst, strict=True)])
    tail = ps_to_cycles((flits - 1) * socket.link_flit_ps, socket.noc_clock_hz)
    analytic = hops * socket.cycles_per_hop + 0 + 0 + tail
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


@pytest.fixture(scope="module")
def reference():
    return load_preset("mesh8x8-vc").socket  # the reference virtual-channel router, 8 x 8


@pytest.mark.parametrize("flits", [1, 2, 4])
def test_reference_router_zero_load_is_7_plus_5_per_hop(reference, flits):
    """Every ordered pair of the 8 x 8 mesh, each packet alone: injection channel (1),
    h hops of pipeline and link (4 + 1), the last router's pipeline (4), the ejection
    channel (1) and the flit received in full (1): 7 + 5h cycles, and P - 1 more for the
    other flits of a P-flit packet."""
    n = reference.mesh.routers
    src, dst = np.divmod(np.arange(n * n, dtype=np.int64), n)
    apart = src != dst
    src, dst = src[apart], dst[apart]
    gap_ps = 1_000_000  # far longer than any packet takes: every packet finds the mesh empty
    inject = np.arange(len(src), dtype=np.int64) * gap_ps
    packets = Traffic(np.zeros(len(src), dtype=np.int64), src, dst)
    done = run_core(noc_inputs(reference, packets, inject, flits, len(src)))
    tail = (flits - 1) * reference.flit_spacing_ps
    cycles = ps_to_cycles(done.outputs.msg_done + tail - inject, reference.noc_clock_hz)
    hops = reference.router_paths.hops[src, dst]
    assert set(hops) == set(range(1, 15))
    assert (cycles == 7 + 5 * hops + flits - 1).all()


def test_reference_router_low_load_latency_is_its_zero_load(reference):
    noc = run_noc(reference, "uniform", 0.002, 4, cycles=3000, warmup=0, seed=0)
    latency, zero_load = noc.latency_ps(), noc.zero_load_ps()
    hops = reference.router_paths.hops[noc.packets.src[noc.measured], noc.packets.dst[noc.measured]]
    assert (zero_load == 1000 * (7 + 5 * hops + 3)).all()
    assert (latency >= zero_load).all() and (latency == zero_load).mean() > 0.98


# --- credit flow control (the reference router) --------------------------------------------


def _without_credits(socket):
    return _router(socket, flow_control="none")


def test_a_full_buffer_stops_its_upstream_link(reference):
    """Router b's own packets and a's packets compete for the link b -> c; a's 20 packets
    wait for it in b's input buffer, whose 16 flit slots (2 VCs x 8) they fill, and a's
    last packet, bound for b itself, cannot enter the link a -> b until slots have come
    free at b: head-of-line blocking of a flow that never uses the congested link. Without
    credits it only queues behind a's 20 packets on a -> b and arrives at 7 + 5 + 20
    cycles; with them it waits for a third of a's packets to leave b over a link they
    share with b's own, which takes at least 10 cycles more."""
    a, b, c = 0, 1, 2
    src = [b] * 20 + [a] * 20 + [a]
    dst = [c] * 20 + [c] * 20 + [b]
    count = len(src)
    packets = Traffic(np.zeros(count, dtype=np.int64), np.array(src), np.array(dst))
    inject = np.zeros(count, dtype=np.int64)

    def heads(socket):
        return run_core(noc_inputs(socket, packets, inject, 1, count)).outputs.msg_done

    free = heads(_without_credits(reference))
    assert free[-1] == 1000 * (7 + 5 * 1 + 20)  # zero load plus 20 flits ahead on a -> b
    blocked = heads(reference)
    assert blocked[-1] >= free[-1] + 10_000
    # The packets to c share b -> c whatever the buffers: it delivers all 40, one a cycle at most.
    to_c = np.sort(blocked[:-1])
    assert (np.diff(to_c) >= 1000).all()


def _stream(socket, count):
    """Arrivals of ``count`` 1-flit packets injected at once from router 0 to router 1."""
    zeros = np.zeros(count, dtype=np.int64)
    packets = Traffic(zeros, zeros, np.ones(count, dtype=np.int64))
    return run_core(noc_inputs(socket, packets, zeros, 1, count)).outputs.msg_done


@pytest.mark.parametrize("head_stages", [2, 3, 4])
def test_a_vc_passes_one_packet_per_head_stages_and_flit(reference, head_stages):
    """One router streams 1-flit packets to its neighbour. The packet behind another in a
    VC passes the route and VC-allocation stages only once the one ahead has left, so each
    VC passes one packet per 1 + head_stages cycles; the two VCs take packets in turn, and
    packet k arrives at 12 + (k // 2)(1 + head_stages) + k % 2 cycles (zero load: 7 + 5)."""
    socket = _router(reference, head_stages=head_stages)
    k = np.arange(9)
    assert (_stream(socket, 9) == 1000 * (12 + (k // 2) * (1 + head_stages) + k % 2)).all()
    free = _stream(_without_credits(socket), 9)
    assert (free == 1000 * (12 + k)).all()  # the link's one flit per cycle


def test_the_reference_router_spends_route_and_vc_allocation_on_heads_alone(reference):
    assert reference.router.head_stage_count == 2 and reference.head_ps == 2000
    assert not reference.tail_credit
    assert _without_credits(reference).head_ps == 0


def test_waiting_for_the_tail_credit_passes_one_packet_per_vc_per_round_trip(reference):
    """With wait_for_tail_credit a VC takes a packet only once it is empty again, every
    credit back: a stream of 1-flit packets then passes a pair per credit round trip (6
    cycles here) instead of a pair per 3 cycles, and uniform traffic that the default
    router carries at 0.2 saturates it."""
    tail = _router(reference, wait_for_tail_credit=True)
    done, k = _stream(tail, 8), np.arange(8)
    assert (done == 1000 * (12 + (k // 2) * 6 + k % 2)).all()
    assert (done >= _stream(reference, 8)).all()
    default = run_noc(reference, "uniform", 0.2, 1, cycles=2000, warmup=500, seed=3).result()
    waiting = run_noc(tail, "uniform", 0.2, 1, cycles=2000, warmup=500, seed=3).result()
    assert not default.saturated and waiting.saturated


@pytest.mark.parametrize("flits", [1, 4])
def test_credits_bound_accepted_throughput(reference, flits):
    """Accepted throughput never exceeds the offered load (to the sampling noise of a finite
    window) or the channel-load bound, and latency rises with load."""
    bound = channel_bound(reference, "uniform")
    latency = []
    for rate in (0.02, 0.08, 0.2, 0.45):
        r = run_noc(reference, "uniform", rate, flits, cycles=2000, warmup=500, seed=2).result()
        assert r.accepted_flits_per_node_cycle <= 1.02 * r.offered_flits_per_node_cycle
        assert r.accepted_flits_per_node_cycle <= bound
        latency.append(r.avg_latency_cycles)
    assert latency == sorted(latency)
    assert latency[-1] > 3 * latency[0]


def test_one_flit_packets_saturate_before_four_flit_packets(reference):
    """A VC passes a packet's head through the route and VC-allocation stages once per
    packet, whatever its length: short packets use a VC's time worst (as in BookSim2, where
    1-flit packets saturate this router near 0.28 and 4-flit ones near 0.35)."""
    bound = channel_bound(reference, "uniform")
    rate = 0.31  # below 0.7 of the channel-load bound
    assert rate < 0.7 * bound
    short = run_noc(reference, "uniform", rate, 1, cycles=2000, warmup=500, seed=3).result()
    long = run_noc(reference, "uniform", rate, 4, cycles=2000, warmup=500, seed=3).result()
    assert short.saturated and not long.saturated
    # Without credits both carry the load: the buffers, not the links, saturate.
    free = run_noc(_without_credits(reference), "uniform", rate, 1, cycles=2000, warmup=500, seed=3)
    assert not free.result().saturated


def test_credit_runs_are_deterministic_and_compiled_equals_python(reference):
    one = run_noc(reference, "uniform", 0.3, 2, cycles=300, warmup=50, seed=1)
    two = run_noc(reference, "uniform", 0.3, 2, cycles=300, warmup=50, seed=1)
    assert (one.head_ps == two.head_ps).all() and one.events == two.events
    if not hasattr(core._loop, "py_func"):
        return  # running uncompiled already (NUNASIM_NO_JIT=1)
    inputs = noc_inputs(reference, one.packets, one.inject_ps, 2, one.stop)
    outputs = CoreOutputs.unfilled(len(inputs.step_tb), len(inputs.msg_kind))
    assert core._loop.py_func(inputs, outputs, loop_state(inputs)) == (one.events, False)
    assert (outputs.msg_done == one.head_ps).all()


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
    if not hasattr(core._loop, "py_func"):
        pytest.skip("running uncompiled already (NUNASIM_NO_JIT=1)")
    noc = run_noc(small, "uniform", 0.8, 2, cycles=300, warmup=50, seed=1)
    inputs = noc_inputs(small, noc.packets, noc.inject_ps, 2, noc.stop)
    outputs = CoreOutputs.unfilled(len(inputs.step_tb), len(inputs.msg_kind))
    events, _ = core._loop.py_func(inputs, outputs, loop_state(inputs))
    assert events == noc.events
    assert (outputs.msg_done == noc.head_ps).all()
    links = inputs.res[: small.mesh.link_slots]
    assert (links[:, FLITS] * links[:, OCC] == noc.link_busy_ps).all()


def test_higher_rate_injects_a_superset(small):
    low = run_noc(small, "uniform", 0.1, 1, cycles=1000, warmup=0, seed=5)
    high = run_noc(small, "uniform", 0.3, 1, cycles=1000, warmup=0, seed=5)

    def key(noc):
        p = noc.packets
        return set(zip(p.cycle.tolist(), p.src.tolist(), p.dst.tolist(), strict=True))

    assert key(low) < key(high)


# --- the packet core: one engine for the collective and the NoC mode ------------------------


def test_the_loop_takes_the_fields_of_the_core_tuples():
    loop = getattr(core._loop, "py_func", core._loop)
    assert tuple(inspect.signature(loop).parameters) == ("inputs", "outputs", "state")
    source = inspect.getsource(loop)
    setup = inspect.getsource(loop_state)
    for name in CoreInputs._fields:  # every input, read by the loop or by its state's setup
        assert f"    {name} = inputs.{name}\n" in source or f"i.{name}" in setup
    for bundle, fields in (("outputs", CoreOutputs._fields), ("state", LoopState._fields)):
        for name in fields:  # every field, under its own name
            assert re.search(rf"\b{bundle}\.{name}\b", source), name


def _lone_packet_ps(socket, src, dst):
    """Head latency of one packet alone in the NoC mode."""
    packet = Traffic(*(np.array([v], dtype=np.int64) for v in (0, src, dst)))
    done = run_core(noc_inputs(socket, packet, np.zeros(1, dtype=np.int64), 1, 1))
    return int(done.outputs.msg_done[0])


@settings(max_examples=25, deadline=None)
@given(
    sockets(max_width=10, max_height=6), st.integers(0, 1000), st.sampled_from(["UA", "NAP+NAR"])
)
def test_a_lone_packet_takes_the_collective_engines_time_over_the_same_hops(socket, seed, config):
    """A remote store crosses its source NoC (injection port, links to the egress port's
    router) and its destination NoC (links from the ingress port's router to the stack's);
    a lone NoC-mode packet over each of those router pairs (injection port, the same links,
    ejection port) takes exactly as long: same resources, same link model, ports with no
    latency of their own, and the same event loop."""
    pod = Pod(socket, 2, 500_000, 50e9)
    plan = one_store_plan()
    granularity = max(socket.valid_granularities)
    placement = place(plan, socket.line_bytes, pod, config, granularity, seed)
    lowered = lower(pod, plan, placement)
    trace = simulate(lowered)
    (m,) = np.nonzero(lowered.msg_kind == STORE)[0]
    cu_router = socket.cu_router(int(placement.gpus[0].tb_cu[0]))
    port_router = socket.ports[int(lowered.msg_port[m])].router
    stack_router = socket.stacks[int(lowered.msg_stack[m])].router
    entered = trace.msg_issue[m] + lowered.msg_pre_ps[m]  # reaches the injection port
    assert trace.msg_port_in[m] - entered == _lone_packet_ps(socket, cu_router, port_router)
    assert trace.msg_stack_in[m] - trace.msg_dst_in[m] == _lone_packet_ps(
        socket, port_router, stack_router
    )


def test_packets_of_one_router_queue_at_its_injection_port(small):
    a, b, c = small.mesh.router(0, 0), small.mesh.router(3, 0), small.mesh.router(0, 3)
    packets = Traffic(*(np.array(v, dtype=np.int64) for v in ([0, 0, 0], [a, a, b], [b, c, a])))
    inject = np.array([0, 0, 1_000_000], dtype=np.int64)  # the last long after the others
    flits = 3
    done = run_core(noc_inputs(small, packets, inject, flits, 2))
    head = done.outputs.msg_done
    # Both leave a at once; the second waits for the first's flits to clear a's port.
    assert head[0] == small.path_latency_ps(a, b)
    assert head[1] == flits * small.link_flit_ps + small.path_latency_ps(a, c)
    # The run stops once the first two have arrived: the third is never injected.
    assert head[2] == -1 and done.outputs.step_begin[2] == -1


def test_timed_releases_must_be_in_order(small):
    packets = Traffic(*(np.array(v, dtype=np.int64) for v in ([0, 0], [0, 1], [1, 0])))
    inputs = noc_inputs(small, packets, np.array([5, 4], dtype=np.int64), 1, 2)
    with pytest.raises(ValueError, match="in order of time"):
        run_core(inputs)


def test_hotspot_traffic_saturates_at_the_hotspot_ejection_port(small):
    # 6 x 6, 20 % to the centre: per unit of rate the centre's ejection port is offered
    # 35 x 0.2 + 0.8 = 7.8 flits per cycle (every other router's hotspot share plus the
    # uniform rest, 0.8 / 35 each), more than any link into it carries.
    hot = small.mesh.router(3, 3)
    capacity = link_flits_per_cycle(small)
    loads = resource_loads(small, "hotspot")
    eject = small.mesh.link_slots + small.mesh.routers + hot
    assert loads.argmax() == eject
    assert loads[eject] == pytest.approx(35 * 0.2 + 0.8)
    bound = channel_bound(small, "hotspot")
    assert bound == pytest.approx(capacity / 7.8)
    below = run_noc(small, "hotspot", 0.9 * bound, 1, cycles=2000, warmup=500, seed=4)
    assert not below.result().saturated
    above = run_noc(small, "hotspot", 1.2 * bound, 1, cycles=2000, warmup=500, seed=4)
    assert above.result().saturated
    # Saturated, the port is never idle and never carries more than a link: the flits
    # reaching the hotspot in the window are B per cycle, to within one packet.
    to_hot = above.packets.dst == hot
    begin, end = above.window_ps
    carried = above.flits_arrived(begin, end, mask=to_hot)
    assert abs(carried - (end - begin) / small.link_flit_ps) <= 1


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
        {"traffic": "tornado"},
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
        ["--traffic", "tornado"],
        ["--rate", "0"],
        ["--rate", "1.01"],
        ["--packet-flits", "0"],
        ["--preset", "no-such-preset"],
        ["--traffic", "hotspot", "--hotspot", "6,0"],
        ["--traffic", "hotspot", "--hotspot", "middle"],
        ["--rates", "0.1,high"],
        ["--rates", "0.1,1.5"],
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


def test_noc_command_sweeps_rates(capsys):
    argv = ["noc", "--preset", "mesh8x8-vc", "--cycles", "500", "--warmup", "100"]
    code, out, err = run(capsys, *argv, "--rates", "0.02,0.3", "--packet-flits", "4", "--json")
    assert code == 0
    assert err == ""  # --json to a pipe: the caller reads the output, not the progress
    rows = json.loads(out)
    assert [row["rate"] for row in rows] == [0.02, 0.3]
    assert all(row["preset"] == "mesh8x8-vc" and row["packet_flits"] == 4 for row in rows)
    # The same seed: each row is the run of that rate alone.
    alone = run_noc(load_preset("mesh8x8-vc").socket, "uniform", 0.3, 4, 500, 100, seed=0)
    assert rows[1]["avg_latency_cycles"] == alone.result().avg_latency_cycles
    code, out, _ = run(capsys, *argv, "--rates", "0.02,0.3")
    assert code == 0
    lines = out.splitlines()
    assert "rate" in lines[1] and len(lines) == 4


# --- buffer depth ----------------------------------------------------------------------


def _router(socket, **changes):
    return dataclasses.replace(socket, router=dataclasses.replace(socket.router, **changes))


def test_shallow_buffers_saturate_earlier(reference):
    """4-flit packets in 4-flit buffers: a VC holds one packet at a time, and the mesh
    carries less than with 8-flit buffers."""
    deep = run_noc(reference, "uniform", 0.25, 4, cycles=1000, warmup=300, seed=2).result()
    shallow_socket = _router(reference, buffer_flits=4)
    shallow = run_noc(shallow_socket, "uniform", 0.25, 4, cycles=1000, warmup=300, seed=2).result()
    assert not deep.saturated and shallow.saturated
    assert shallow.avg_latency_cycles > deep.avg_latency_cycles


def test_packets_longer_than_a_buffer_are_refused(reference):
    with pytest.raises(ConfigError, match="longer than"):
        run_noc(_router(reference, buffer_flits=2), "uniform", 0.1, 3, cycles=100)


# --- accounting: accepted <= offered and <= the bounds, on every run ------------------------


@pytest.mark.parametrize(
    ("preset", "traffic", "flits", "share"),
    [
        ("nextgen-4die", "uniform", 1, 1.4),
        ("monolithic", "hotspot", 2, 1.5),
        ("mesh8x8-vc", "uniform", 1, 0.8),
        ("mesh8x8-vc", "transpose", 4, 1.2),
        ("mesh8x8-vc", "hotspot", 4, 1.3),
    ],
)
def test_throughput_never_exceeds_the_channel_and_ejection_bounds(preset, traffic, flits, share):
    """Past saturation accepted throughput stays at or below the offered load and the
    pattern's channel-load bound (the bisection bound for uniform traffic, the hotspot's
    ejection channel for hotspot traffic), up to the (longest zero-load latency + one flit)
    / delivery time that the measurement allows and the sampling noise of the mix; the flits
    ejected in the window stay below what the ejection channels carry."""
    socket = load_preset(preset).socket
    bound = channel_bound(socket, traffic)
    noc = run_noc(socket, traffic, min(1.0, share * bound), flits, cycles=1500, warmup=300, seed=5)
    result = noc.result()
    assert result.saturated
    assert result.accepted_flits_per_node_cycle <= result.offered_flits_per_node_cycle
    slack = (noc.slack_ps() + socket.flit_spacing_ps) / noc.delivery_ps()
    assert result.accepted_flits_per_node_cycle <= bound * (1 + slack) * 1.03
    eject_width = 1 / ps_to_cycles(socket.ejection_flit_ps, socket.noc_clock_hz)
    assert result.ejected_flits_per_node_cycle <= eject_width * (1 + 1 / noc.cycles)


def test_the_accounting_check_refuses_impossible_figures(small):
    """The check every result passes: accepted throughput above the offered load, or a
    resource that would have served the window's flits faster than it can, is a bug."""
    noc = run_noc(small, "uniform", 0.9, 2, cycles=500, warmup=100, seed=1)
    result = noc.result()
    check_accounting(noc, result)  # a real run passes
    with pytest.raises(NocAccountingError, match="above the offered"):
        check_accounting(noc, dataclasses.replace(result, accepted_flits_per_node_cycle=1.0))
    # The same packets, all delivered at the window's start and counted over a window a
    # tenth as long: the busiest link would have carried 500 cycles' flits in 50.
    crowded = np.where(noc.head_ps >= 0, noc.window_ps[0], -1)
    with pytest.raises(NocAccountingError, match="served"):
        dataclasses.replace(noc, head_ps=crowded, cycles=50).result()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sockets(max_width=6, max_height=4),
    st.sampled_from(["uniform", "transpose", "bitcomp", "neighbor", "hotspot"]),
    st.floats(0.05, 1.0),
    st.integers(1, 4),
    st.booleans(),
)
def test_accepted_never_beats_offered_or_the_bound(socket, traffic, rate, flits, credits):
    check_accepted_never_beats_offered(socket, traffic, rate, flits, credits)


def test_accepted_equal_to_offered_does_not_round_above_it():
    """Found by the property above: a 2x2 mesh delivering every packet of the window
    within it once gave accepted 0.9283333333333335 against offered 0.9283333333333333,
    from a chain of float products. Both are now one correctly rounded quotient."""
    socket = Socket(
        mesh=Mesh(2, 2),
        dies=(Die(0, 0, 1, 1),),
        cu_routers=(0,),
        cus_per_router=1,
        l1_latency_ps=0,
        outstanding_requests=1,
        flops=(("bf16", 1e15),),
        noc_clock_hz=1e9,
        cycles_per_hop=1,
        die_crossing_cycles=0,
        link_bandwidth=307138572286.0,
        routing="xy",
        line_bytes=256,
        page_bytes=4096,
        stacks=(Stack(router=0, bandwidth=1e11, latency_ps=0),),
        ports=(Port(router=0),),
    )
    noc = run_noc(socket, "uniform", 0.935546875, 1, cycles=300, warmup=50, seed=3)
    result = noc.result()
    assert result.accepted_flits_per_node_cycle == result.offered_flits_per_node_cycle


def check_accepted_never_beats_offered(socket, traffic, rate, flits, credits):
    """Random meshes, patterns, loads, packet sizes, with and without credit flow control:
    every result passes the accounting check (``result`` runs it) and its accepted
    throughput is at most the offered load."""
    if socket.mesh.routers < 2:
        return
    if credits:
        router = Router(socket.cycles_per_hop, 0, 2, 2, 1, 1, flow_control="credit")
        socket = dataclasses.replace(socket, router=router)
    try:
        noc = run_noc(socket, traffic, rate, flits, cycles=300, warmup=50, seed=3)
    except ConfigError:  # a permutation that sends nothing, or a packet too long
        return
    result = noc.result()
    assert 0 < result.accepted_flits_per_node_cycle <= result.offered_flits_per_node_cycle


# --- patterns, rate units, windows ----------------------------------------------------------


def test_bitcomp_and_neighbor_rules():
    mesh = Mesh(8, 8)
    bitcomp = permutation_destinations(mesh, "bitcomp")
    neighbor = permutation_destinations(mesh, "neighbor")
    for router in range(mesh.routers):
        assert bitcomp[router] == (~router) & 63  # every address bit complemented
        x, y = mesh.coord(router)
        assert neighbor[router] == mesh.router((x + 1) % 8, (y + 1) % 8)


def test_weighted_hotspots_and_self_traffic(small):
    a, b = small.mesh.router(0, 0), small.mesh.router(5, 5)
    pattern = Pattern("hotspot", 0.4, ((a, 3.0), (b, 1.0)), self_traffic=True)
    noc = run_noc(small, pattern, 0.5, 1, cycles=4000, warmup=0, seed=0)
    src, dst = noc.packets.src, noc.packets.dst
    others = (src != a) & (src != b)
    # 0.4 split 3 : 1, plus the uniform rest's 0.6 / 36 (self-traffic included).
    assert (dst[others] == a).mean() == pytest.approx(0.3 + 0.6 / 36, abs=0.01)
    assert (dst[others] == b).mean() == pytest.approx(0.1 + 0.6 / 36, abs=0.01)
    assert (src == dst).mean() == pytest.approx(0.6 / 36, abs=0.005)
    # A hotspot sends its hotspot share to the other one.
    assert (dst[src == a] == b).mean() == pytest.approx(0.4 + 0.6 / 36, abs=0.03)
    result = noc.result()
    assert result.pattern.startswith("hotspot (0.4 to (0, 0) x 0.75, (5, 5) x 0.25")
    assert "self-traffic" in result.pattern
    matrix = destination_matrix(small.mesh, pattern)
    assert matrix.sum(axis=1) == pytest.approx(np.ones(36))


def test_rate_in_packets_or_flits(small):
    flits = run_noc(small, "uniform", 0.2, 2, cycles=3000, warmup=0, seed=4).result()
    packets = run_noc(small, "uniform", 0.2, 2, 3000, 0, 4, rate_unit="packets").result()
    assert packets.rate_unit == "packets"
    assert flits.offered_flits_per_node_cycle == pytest.approx(0.2, rel=0.05)
    assert packets.offered_flits_per_node_cycle == pytest.approx(0.4, rel=0.05)


def test_a_drain_limit_cuts_an_unstable_run(reference):
    cut = run_noc(reference, "uniform", 0.45, 1, cycles=1000, warmup=200, seed=1, drain=50)
    result = cut.result()
    assert not result.drained and result.saturated and result.drain_cycles == 50
    assert result.accepted_flits_per_node_cycle < result.offered_flits_per_node_cycle
    free = run_noc(reference, "uniform", 0.02, 1, cycles=1000, warmup=200, seed=1, drain=500)
    assert free.result().drained and not free.result().saturated


def test_absurd_runs_are_refused_with_the_estimate(capsys):
    """Refused from the counts alone, before any traffic is drawn (the CLI answers at once)."""
    code, _, err = run(
        capsys, "noc", "--preset", "mesh8x8-vc", "--cycles", "100000000", "--rate", "1"
    )
    assert code == 2 and "200,001,000 cycles" in err
    code, _, err = run(
        capsys, "noc", "--preset", "nextgen-4die", "--cycles", "4000000", "--rate", "1"
    )
    assert code == 2 and "1,152,144,000 packets" in err and "GB of arrays" in err


# --- saturation marks and sweeps ------------------------------------------------------------


def test_saturation_marks():
    offered = np.array([0.1, 0.2, 0.3, 0.4])
    accepted = np.array([0.1, 0.2, 0.28, 0.27])
    # 2 x zero-load (20) crossed between 0.2 (15) and 0.3 (25): halfway.
    marks = saturation(offered, accepted, np.array([10, 15, 25, 90.0]), 10.0, np.zeros(4, bool))
    assert marks.load == pytest.approx(0.25)
    assert (marks.overload_accepted, marks.overload_offered) == (0.27, 0.4)
    assert marks.load_high is None
    # An unstable point counts as over the threshold whatever its average, which has not
    # settled: the saturation load is bracketed, not interpolated.
    unstable = np.array([False, False, True, True])
    for latency in ([10, 15, 18, 19.0], [10, 15, 35, 90.0]):
        marks = saturation(offered, accepted, np.array(latency), 10.0, unstable)
        assert (marks.load, marks.load_high) == (0.2, 0.3)
    low = saturation(offered, accepted, np.array([10, 11, 12, 13.0]), 10.0, np.zeros(4, bool))
    assert low.load is None and low.overload_accepted is None


def test_parallel_sweep_equals_serial(reference):
    spec = CurveSpec(reference, Pattern("uniform"), 2, cycles=300, warmup=50, seed=6)
    rates = [0.05, 0.3, 0.15]
    finished = []
    serial = sweep(spec, rates, workers=1)
    parallel = sweep(spec, rates, workers=2, done=lambda k, n, r: finished.append((k, n, r.rate)))
    assert parallel == serial
    assert [r.rate for r in serial] == rates
    assert [k for k, _, _ in finished] == [1, 2, 3] and {r for _, _, r in finished} == set(rates)


def test_rates_range_syntax():
    assert parse_rates("0.02:0.1:0.02") == [0.02, 0.04, 0.06, 0.08, 0.1]
    assert parse_rates("0.1,0.05") == [0.1, 0.05]
    for bad in ("0.1:0.05:0.01", "0.1:0.2:0", "0.1:0.2", "a:b:c", "0:1:0.0001"):
        with pytest.raises(ConfigError):
            parse_rates(bad)


def test_noc_sweep_writes_table_and_plot(capsys, tmp_path):
    table, plot = tmp_path / "curve.csv", tmp_path / "curve.png"
    argv = ["noc", "--preset", "mesh8x8-vc", "--cycles", "300", "--warmup", "50", "--workers", "1"]
    code, out, err = run(
        capsys, *argv, "--rates", "0.05:0.65:0.3", "--table", table, "--plot", plot
    )
    assert code == 0
    # in a log: a line as the sweep starts, one as it ends, and one every ten seconds
    lines = err.splitlines()
    assert lines[0] == "noc: 0/3 points (0 cached, 0 run)"
    assert lines[-1] == "noc: 3/3 points (0 cached, 3 run)"
    middle = r"noc: \d/3 points \(0 cached, \d run\), (about \d+ s left|\d+ s so far)"
    assert all(re.fullmatch(middle, line) for line in lines[1:-1]), lines
    rows = read_table(table)
    assert list(rows["rate"]) == [0.05, 0.35, 0.65]
    assert (rows["accepted_flits_per_node_cycle"] <= rows["offered_flits_per_node_cycle"]).all()
    assert rows["saturated"].tolist() == [False, True, True]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "saturation: between offered 0.0487 (stable) and 0.3410 (unstable)" in out
    parquet = tmp_path / "curve.parquet"
    code, _, _ = run(capsys, *argv, "--rates", "0.05:0.65:0.3", "--table", parquet)
    assert code == 0 and read_table(parquet).equals(rows)


def test_noc_sweep_refuses_bad_outputs_before_running(capsys, tmp_path):
    argv = ["noc", "--preset", "mesh8x8-vc", "--cycles", "300", "--rates", "0.1,0.2"]
    code, _, err = run(capsys, *argv, "--table", tmp_path / "no" / "curve.csv")
    assert code == 2 and "does not exist" in err and "noc: " not in err
    code, _, err = run(capsys, *argv, "--plot", tmp_path / "curve.txt")
    assert code == 2 and "noc: " not in err
    code, _, err = run(capsys, "noc", "--preset", "mesh8x8-vc", "--table", tmp_path / "c.csv")
    assert code == 2 and "--rates" in err
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sockets(max_width=7, max_height=5),
    st.integers(1, 4),  # pipeline stages
    st.integers(0, 3),  # injection latency
    st.integers(0, 3),  # ejection latency
    st.integers(1, 4),  # flits
    st.booleans(),
)
def test_zero_load_latency_is_the_closed_form_on_random_meshes(
    socket, stages, inject, eject, flits, credits
):
    """Every ordered pair of routers, each packet alone, with or without credits: injection
    channel + the path's hops + the last router's pipeline + ejection channel + one flit
    received in full + the other flits, to the picosecond."""
    n = socket.mesh.routers
    if n < 2 or socket.cycles_per_hop < stages:
        return
    flow = "credit" if credits else "none"
    router = Router(stages, socket.cycles_per_hop - stages, 4, 2, inject, eject, flow_control=flow)
    socket = dataclasses.replace(socket, router=router)
    src, dst = np.divmod(np.arange(n * n, dtype=np.int64), n)
    src, dst = src[src != dst], dst[src != dst]
    inject_ps = np.arange(len(src), dtype=np.int64) * 10_000_000  # each alone
    packets = Traffic(np.zeros(len(src), dtype=np.int64), src, dst)
    done = run_core(noc_inputs(socket, packets, inject_ps, flits, len(src)))
    clock = socket.noc_clock_hz
    closed = (
        cycles_to_ps(inject, clock)
        + socket.router_paths.latency_ps[src, dst]
        + cycles_to_ps(stages + eject, clock)
        + socket.ejection_flit_ps
        + (flits - 1) * socket.flit_spacing_ps
    )
    latency = done.outputs.msg_done + (flits - 1) * socket.flit_spacing_ps - inject_ps
    assert (latency == closed).all()


def test_the_credit_variant_is_nextgen_4die_with_routers():
    """nextgen-4die-vc changes nothing but the routers: its hops take nextgen-4die's 10
    cycles, split 4 + 6, its bounds are nextgen-4die's, and it adds the endpoints."""
    base, variant = load_preset("nextgen-4die").socket, load_preset("nextgen-4die-vc").socket
    assert dataclasses.replace(variant, router=None) == base
    r = variant.router
    assert (r.pipeline_stages, r.link_latency_cycles, r.flow_control) == (4, 6, "credit")
    assert (variant.router_paths.latency_ps == base.router_paths.latency_ps).all()
    assert channel_bound(variant, "uniform") == channel_bound(base, "uniform")
    endpoints = ps_to_cycles(variant.endpoint_latency_ps, variant.noc_clock_hz)
    assert endpoints == pytest.approx(1 + 4 + 1 + 0.3684, abs=1e-3)


@pytest.mark.parametrize("changes", [{"buffer_flits": 4}, {"wait_for_tail_credit": True}])
def test_saturated_credit_runs_compiled_equal_python(reference, changes):
    """Past saturation, where VCs are held waiting for credits and input ports defer their
    VCs, the compiled loop and the Python it is compiled from agree event for event."""
    shallow = _router(reference, **changes)
    noc = run_noc(shallow, "transpose", 0.4, 4, cycles=200, warmup=50, seed=4)
    if not hasattr(core._loop, "py_func"):
        return  # running uncompiled already (NUNASIM_NO_JIT=1)
    inputs = noc_inputs(shallow, noc.packets, noc.inject_ps, 4, noc.stop)
    outputs = CoreOutputs.unfilled(len(inputs.step_tb), len(inputs.msg_kind))
    assert core._loop.py_func(inputs, outputs, loop_state(inputs)) == (noc.events, False)
    assert (outputs.msg_done == noc.head_ps).all()


def test_with_self_traffic_a_permutations_fixed_points_send_to_themselves(reference):
    """BookSim's permutations: the 8 routers transpose maps to themselves inject too, and
    their packets cross the injection and ejection channels alone (7 cycles at zero load)."""
    mesh = reference.mesh
    diagonal = np.array([mesh.router(i, i) for i in range(8)])
    alone = destination_matrix(mesh, Pattern("transpose"))
    both = destination_matrix(mesh, Pattern("transpose", self_traffic=True))
    assert alone[diagonal, diagonal].sum() == 0 and (both[diagonal, diagonal] == 1).all()
    noc = run_noc(reference, Pattern("transpose", self_traffic=True), 0.01, 1, 2000, 0)
    src, dst = noc.packets.src[noc.measured], noc.packets.dst[noc.measured]
    assert set(src[src == dst]) == set(diagonal)
    latency = noc.latency_ps()[src == dst]
    assert latency.min() == 7000
    assert "fixed points send to themselves" in noc.result().pattern


def test_a_run_that_keeps_only_arrivals_is_the_run_that_keeps_every_stamp(reference):
    """A NoC run keeps only a step's end and a packet's arrival: those, the events and the
    resources' counts are the same as with every stamp, and the rest are left empty."""
    noc = run_noc(reference, "uniform", 0.45, 2, cycles=300, warmup=50, seed=5)
    runs = [
        run_core(noc_inputs(reference, noc.packets, noc.inject_ps, 2, noc.stop), kept)
        for kept in (None, frozenset())
    ]
    every, lean = runs
    assert every.events == lean.events and (every.inputs.res == lean.inputs.res).all()
    for name in ("step_end", "msg_done"):
        assert (getattr(every.outputs, name) == getattr(lean.outputs, name)).all(), name
    assert (every.outputs.step_begin >= 0).all() and (every.outputs.msg_issue >= 0).all()
    for name in ("step_begin", "msg_issue", "msg_port_in", "msg_dst_in", "msg_stack_in"):
        assert len(getattr(lean.outputs, name)) == 0, name
    for name in ("msg_port_in", "msg_port_out", "msg_dst_in", "msg_stack_in"):
        assert (getattr(every.outputs, name) == -1).all(), name


def test_stage_stamps_are_left_out_only_where_nothing_stamps_them():
    """A collective's run crosses ports and stacks: without their stamps it is refused
    before the loop could write past an empty array, as are outputs of a wrong size."""
    pod = load_preset("nextgen-4die").fit(2).pod
    scenario = Scenario(pod, builtin_plan("allgather", gpus=2), "64kB", "UA", "auto")
    lowered = lower(pod, scenario.plan, scenario.placement())
    with pytest.raises(ValueError, match="msg_port_in has no entry per message"):
        run_core(core_inputs(lowered), kept=frozenset({"step_begin", "msg_issue"}))
    inputs = core_inputs(lowered)
    steps, messages = len(inputs.step_tb), len(inputs.msg_kind)
    short = CoreOutputs.unfilled(steps, messages)._replace(msg_done=np.full(1, -1))
    with pytest.raises(ValueError, match="msg_done has 1 entries"):
        core.run(inputs, short)
    with pytest.raises(ValueError, match="no such output: msg_sent"):
        CoreOutputs.unfilled(steps, messages, frozenset({"msg_sent"}))


def test_unset_arrays_are_written_before_they_are_read(reference, monkeypatch):
    """The arrays ``loop_state`` leaves unfilled (linked FIFOs' links, credits' grants) can
    hold anything: filled with garbage, a credit run past saturation and a collective on
    the credit preset give the same events and times."""

    def garbage(count):
        return np.full(count, 987_654_321, dtype=np.int64)

    pod = load_preset("nextgen-4die-vc").fit(4).pod
    scenario = Scenario(pod, builtin_plan("alltoall", gpus=4), "100kB", "UA+NAR", "auto")
    lowered = lower(pod, scenario.plan, scenario.placement())
    shallow = _router(reference, buffer_flits=4)
    outcomes = []
    for fill in (state.unset, garbage):
        monkeypatch.setattr(state, "unset", fill)
        noc = run_noc(shallow, "transpose", 0.4, 4, cycles=300, warmup=50, seed=4)
        trace = simulate(lowered)
        outcomes.append((noc.events, noc.head_ps.tolist(), trace.events, trace.msg_done.tolist()))
    assert outcomes[0] == outcomes[1]

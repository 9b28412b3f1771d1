"""Lowering a synthetic-traffic run onto the packet core (``nunasim.engine.packet.core``).

The resources are the mesh's link slots, then every router's injection port, then its
ejection port, built with the collective engine's link model (``nunasim.engine.noc.run``
lists it). In the core each packet is a step of its source router's threadblock, released at
the packet's injection time, with one message over injection port, links and ejection port
that is done when it arrives (no acknowledgement); the routers have no outstanding-request
window (the injection is open-loop), and a last step waiting for every packet injected
before the end of the measurement window (or the drain limit) ends the run.
"""

from __future__ import annotations

import numpy as np

from nunasim.engine.kernel.kinds import EJECT, INJECT, LINK, READ
from nunasim.engine.noc.bounds import core_routes, resource_flit_ps
from nunasim.engine.noc.traffic import Traffic
from nunasim.engine.packet.core import CoreInputs
from nunasim.engine.packet.engine import resource_rows
from nunasim.engine.packet.state import filled
from nunasim.hardware import Socket


def noc_resources(socket: Socket, packet_flits: int) -> np.ndarray:
    """The core's resource table: the mesh's link slots, then every router's injection port,
    then its ejection port. A packet holds each for all its flits, back to back. Under credit
    flow control the links and injection channels feed input buffers of ``virtual_channels``
    VCs of ``buffer_flits`` each."""
    mesh = socket.mesh
    ports = mesh.routers
    occ = packet_flits * resource_flit_ps(socket)
    lat = np.concatenate(
        [
            socket.link_latencies_ps,
            np.full(ports, socket.injection_latency_ps, dtype=np.int64),
            np.full(ports, socket.ejection_latency_ps, dtype=np.int64),
        ]
    )
    kind = np.repeat([LINK, INJECT, EJECT], [mesh.link_slots, ports, ports])
    # The links and the injection channels feed the routers' input buffers.
    vcs = np.where(kind == EJECT, 0, socket.credit_vcs)
    credit_ps = np.repeat(
        [socket.link_credit_ps, socket.injection_latency_ps, 0], [mesh.link_slots, ports, ports]
    )
    # Each of those buffers holds ``buffer_flits`` per VC.
    depth = socket.router.buffer_flits if socket.router is not None else 0
    buf_flits = np.where(vcs > 0, depth, 0)
    return resource_rows(
        occ,
        lat,
        kind,
        vcs,
        np.where(vcs > 0, credit_ps, 0),
        buf_flits,
        resource_flit_ps(socket),
        tail_credit=socket.tail_credit,
        head_ps=socket.head_ps,
    )


def noc_inputs(
    socket: Socket,
    packets: Traffic,
    inject_ps: np.ndarray,
    packet_flits: int,
    stop: int,
    deadline_ps: int = -1,
) -> CoreInputs:
    """The core's inputs for ``packets`` injected at ``inject_ps``; the run ends once packets
    ``0 .. stop - 1`` have arrived, or at ``deadline_ps`` if that is not negative.

    Packet p is step p (of its source router's threadblock), released at ``inject_ps[p]``,
    line operation p and message p: a read-kind message, done when it arrives, whose line
    operation delivers nothing. Step ``len(packets)`` waits for the first ``stop``; with a
    deadline, an empty step released at the deadline and it both release the last step,
    which waits for either.
    """
    mesh = socket.mesh
    count = len(inject_ps)
    every = np.arange(count, dtype=np.int64)
    route_start, route = core_routes(socket)
    none = np.zeros(0, dtype=np.int64)

    # Every per-packet array is written once, in place: with 1.5 M packets each copy is
    # 12 MB that the kernel must zero before numpy writes it.
    if deadline_ps < 0:
        waits, extra_succ, extra_succs = [stop], [0], none
        timed_step, timed_at = every, inject_ps
    else:  # all measured packets done, the deadline, and the end waiting for one of them
        waits, extra_succ, extra_succs = [stop, 0, 1], [1, 1, 0], np.array([count + 2] * 2)
        at = int(np.searchsorted(inject_ps, deadline_ps, side="right"))
        timed_step = np.insert(every, at, count + 1)
        timed_at = np.insert(inject_ps, at, deadline_ps)
    extra = len(waits)
    steps = count + extra
    step_tb = np.zeros(steps, dtype=np.int64)  # the extra steps: threadblock 0
    step_tb[:count] = packets.src
    step_wait = np.zeros(steps, dtype=np.int64)
    step_wait[count:] = waits
    # Packet p (< stop) has one successor, the step waiting for the measured packets.
    succ_start = np.empty(steps + 1, dtype=np.int64)
    np.minimum(np.arange(count + 1, dtype=np.int64), stop, out=succ_start[: count + 1])
    succ_start[count + 1 :] = stop + np.cumsum(extra_succ)
    succ = np.empty(stop + len(extra_succs), dtype=np.int64)
    succ[:stop] = count
    succ[stop:] = extra_succs
    lineop_start = np.arange(steps + 1, dtype=np.int64)
    lineop_start[count + 1 :] = count  # the extra steps have none
    lineop_msgs = np.empty((count, 3), dtype=np.int64)
    lineop_msgs[:, 0] = every
    np.add(every, 1, out=lineop_msgs[:, 1])
    lineop_msgs[:, 2] = lineop_msgs[:, 1]
    msg_route = np.multiply(packets.src, mesh.routers, dtype=np.int64)
    msg_route += packets.dst
    return CoreInputs(
        res=noc_resources(socket, packet_flits),
        tb_cu=np.arange(mesh.routers, dtype=np.int64),
        step_tb=step_tb,
        step_wait=step_wait,
        step_compute_ps=np.zeros(steps, dtype=np.int64),
        timed_step=timed_step,
        timed_at=timed_at,
        succ_start=succ_start,
        succ=succ,
        lineop_start=lineop_start,
        lineop_step=every,
        lineop_compute_ps=filled(count, 0),
        lineop_msgs=lineop_msgs,
        flag_start=np.zeros(steps + 1, dtype=np.int64),
        flag_msg=none,
        msg_kind=filled(count, READ),
        msg_lineop=every,
        msg_cu=packets.src,
        msg_target=filled(count, -1),
        arrival_lines=none,
        release_start=np.zeros(1, dtype=np.int64),
        release=none,
        msg_ack_ps=filled(count, 0),
        msg_pre_ps=filled(count, 0),
        msg_route=msg_route,
        route_start=route_start,
        route=route,
        ncus=mesh.routers,
        window=count + 1,  # open-loop injection: no request window
        stop_step=steps - 1,
        stop_ps=-1,
    )

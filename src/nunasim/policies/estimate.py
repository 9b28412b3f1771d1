"""A cheap analytic estimate of a placed collective's time, for choosing NAR granularity.

The estimate adds the mean zero-load latency of a remote store (L1, source NoC, one flit on
the port, the plane, destination NoC, the stack's access) to the time the busiest port
direction and the busiest stack of any GPU need to serialise their lines. Fine
granularities shorten the first term; too few threadblocks for too many domains load some
ports unevenly and lengthen the second: the trade-off of the paper's section 6.5. It ranks
placements; the packet engine gives the time.
"""

from __future__ import annotations

import numpy as np

from nunasim.collectives.plan import Plan
from nunasim.hardware import Pod
from nunasim.mapping.placement import Placement
from nunasim.policies.paths import hops_between, remote_lines
from nunasim.units import transfer_ps


def estimate_ps(plan: Plan, placement: Placement, pod: Pod) -> float:
    socket = placement.socket
    lines = remote_lines(plan, placement)
    if not len(lines):
        return 0.0
    port_router = np.array([p.router for p in socket.ports], dtype=np.int64)
    stack_router = np.array([s.router for s in socket.stacks], dtype=np.int64)
    hops = hops_between(socket, lines.src_router, port_router[lines.port]) + hops_between(
        socket, port_router[lines.port], stack_router[lines.stack]
    )
    stack_latency = np.array([s.latency_ps for s in socket.stacks], dtype=np.int64)
    latency = (
        socket.l1_latency_ps
        + hops.mean() * socket.hop_ps
        + pod.port_flit_ps
        + pod.plane_latency_ps
        + stack_latency[lines.stack].mean()
    )
    ports, stacks = len(socket.ports), len(socket.stacks)
    egress = np.bincount(lines.src_gpu * ports + lines.port).max()
    ingress = np.bincount(lines.dst_gpu * ports + lines.port).max()
    stack_flit = np.array([transfer_ps(socket.line_bytes, s.bandwidth) for s in socket.stacks])
    per_stack = np.bincount(
        lines.dst_gpu * stacks + lines.stack, minlength=plan.ngpus * stacks
    ).reshape(plan.ngpus, stacks)
    stack_time = (per_stack * stack_flit[None, :]).max()
    return float(latency + max(egress, ingress) * pod.port_flit_ps + stack_time)

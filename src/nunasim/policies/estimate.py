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
from nunasim.mapping.resolve import remote_chunks, remote_lines
from nunasim.units import transfer_ps

# Lines resolved at most for one estimate (about 100 B each while it runs): beyond it each
# chunk is represented by its first lines and the counts scaled up, so that a 1 GB
# collective's estimate costs what a few-MB one does. Smaller runs resolve every line.
MAX_ESTIMATE_LINES = 4_000_000


def estimate_ps(plan: Plan, placement: Placement, pod: Pod) -> float:
    """The estimated time of ``plan`` placed by ``placement`` on ``pod``, in ps."""
    socket = placement.socket
    chunks, per_chunk = remote_chunks(plan), placement.lines_per_chunk
    sampled = min(per_chunk, max(1, MAX_ESTIMATE_LINES // max(chunks, 1)))
    lines = remote_lines(plan, placement, None if sampled == per_chunk else sampled)
    scale = 1 if sampled == per_chunk else per_chunk / sampled
    if not lines.size:
        return 0.0
    port = socket.port_routers[lines.port]
    table = socket.router_paths.latency_ps
    stack_latency = np.array([s.latency_ps for s in socket.stacks], dtype=np.int64)
    latency = (
        socket.l1_latency_ps
        + (table[lines.router, port] + table[port, socket.stack_routers[lines.stack]]).mean()
        + pod.port_flit_ps
        + pod.plane_latency_ps
        + stack_latency[lines.stack].mean()
    )
    ports, stacks = len(socket.ports), len(socket.stacks)
    egress = np.bincount(lines.gpu * ports + lines.port).max() * scale
    ingress = np.bincount(lines.memory_gpu * ports + lines.port).max() * scale
    stack_flit = np.array([transfer_ps(socket.line_bytes, s.bandwidth) for s in socket.stacks])
    per_stack = np.bincount(
        lines.memory_gpu * stacks + lines.stack, minlength=plan.ngpus * stacks
    ).reshape(plan.ngpus, stacks)
    stack_time = (per_stack * stack_flit[None, :]).max() * scale
    return float(latency + max(egress, ingress) * pod.port_flit_ps + stack_time)

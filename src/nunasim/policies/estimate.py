"""A cheap analytic estimate of a placed collective's time, for choosing NAR granularity.

The estimate adds the mean zero-load latency of a remote store (L1, source NoC, one flit on
the port, the plane, destination NoC, the stack's access) to the time the busiest port
direction and the busiest stack of any GPU need to serialise their lines. Fine
granularities shorten the first term; too few threadblocks for too many domains load some
ports unevenly and lengthen the second: the trade-off of the paper's section 6.5. It ranks
placements; the packet engine gives the time.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.collectives.plan import Plan
from nunasim.hardware import Pod
from nunasim.mapping.accesses import plan_accesses
from nunasim.mapping.placement import Placement
from nunasim.mapping.resolve import crossing, ragged_arange, remote_chunks
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
    counts = _remote_line_counts(plan, placement, None if sampled == per_chunk else sampled)
    scale = 1 if sampled == per_chunk else per_chunk / sampled
    if counts.lines == 0:
        return 0.0
    table = socket.router_paths.latency_ps
    port_router = np.asarray(socket.port_routers, dtype=np.int64)
    stack_router = np.asarray(socket.stack_routers, dtype=np.int64)
    stack_latency = np.array([s.latency_ps for s in socket.stacks], dtype=np.int64)
    # Sums of integer latencies over the lines, exact, then divided once: what the mean of
    # the per-line latencies is in floating point (every partial sum is an exact integer).
    to_port = int((counts.router_port * table[:, port_router]).sum())
    to_stack = int((counts.port_stack * table[port_router][:, stack_router]).sum())
    at_stack = int((counts.port_stack.sum(axis=0) * stack_latency).sum())
    latency = (
        socket.l1_latency_ps
        + (to_port + to_stack) / counts.lines
        + pod.port_flit_ps
        + pod.plane_latency_ps
        + at_stack / counts.lines
    )
    egress = counts.gpu_port.max() * scale
    ingress = counts.memory_port.max() * scale
    stack_flit = np.array([transfer_ps(socket.line_bytes, s.bandwidth) for s in socket.stacks])
    stack_time = (counts.memory_stack * stack_flit[None, :]).max() * scale
    return float(latency + max(egress, ingress) * pod.port_flit_ps + stack_time)


class _LineCounts(NamedTuple):
    """How many remote lines share each pair of what the estimate sums over."""

    lines: int
    router_port: np.ndarray  # [router of the CU, port]
    port_stack: np.ndarray  # [port, stack]
    gpu_port: np.ndarray  # [GPU of the CU, port]
    memory_port: np.ndarray  # [GPU of the memory, port]
    memory_stack: np.ndarray  # [GPU of the memory, stack]


def _remote_line_counts(
    plan: Plan, placement: Placement, lines_per_chunk: int | None
) -> _LineCounts:
    """The lines ``remote_lines`` resolves, counted by pairs rather than listed: the CU, its
    GPU and the memory's GPU are the same for every line of a chunk, so only the address
    (and with it the stack and the port) is worked out line by line."""
    accesses = plan_accesses(plan)
    rows = np.nonzero(crossing(accesses.kind, accesses.gpu, accesses.memory_gpu))[0]
    of_chunk = np.repeat(rows, accesses.count[rows])
    chunk = accesses.chunk[of_chunk] + ragged_arange(accesses.count[rows])
    memory_gpu = accesses.memory_gpu[of_chunk]
    address = placement.chunk_lines(memory_gpu, accesses.buffer[of_chunk], chunk, lines_per_chunk)
    amap, socket = placement.address_map, placement.socket
    port = amap.ports_of(address.ravel()).reshape(address.shape)
    stack = amap.stacks_of(address)
    router = socket.router_of_cu[placement.cus_of(accesses.gpu, accesses.tb)[of_chunk]]
    gpu = accesses.gpu[of_chunk]
    routers = len(socket.router_paths.latency_ps)
    ports, stacks = len(socket.ports), len(socket.stacks)

    def pairs(first: np.ndarray, width: int, second: np.ndarray, rows: int) -> np.ndarray:
        key = (first[:, None] if first.ndim == 1 else first) * width + second
        return np.bincount(key.ravel(), minlength=rows * width).reshape(rows, width)

    return _LineCounts(
        lines=int(address.size),
        router_port=pairs(router, ports, port, routers),
        port_stack=pairs(port, stacks, stack, ports),
        gpu_port=pairs(gpu, ports, port, plan.ngpus),
        memory_port=pairs(memory_gpu, ports, port, plan.ngpus),
        memory_stack=pairs(memory_gpu, stacks, stack, plan.ngpus),
    )

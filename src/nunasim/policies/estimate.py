"""A cheap analytic estimate of a placed collective's time, for choosing NAR granularity.

The estimate adds the mean zero-load latency of a remote store (``Pod.store_trip``: L1,
source NoC, one flit on the port, the plane, destination NoC, the stack's access) to the
time the busiest port direction and the busiest stack of any GPU need to serialise their
lines. Fine granularities shorten the first term; too few threadblocks for too many
domains load some ports unevenly and lengthen the second: the trade-off of the paper's
section 6.5. It ranks placements; the packet engine gives the time.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.collectives.plan import Plan
from nunasim.hardware import Pod
from nunasim.jit import jit
from nunasim.mapping.accesses import plan_accesses
from nunasim.mapping.line_counts import (
    PageTables,
    PortMap,
    RangeCounts,
    count_range,
    plain_wire,
    region_columns,
    scratch,
)
from nunasim.mapping.placement import Placement
from nunasim.mapping.resolve import crossing, remote_chunks
from nunasim.units import transfer_ps

# Lines counted at most for one estimate: beyond it each chunk is represented by its first
# lines and the counts scaled up. (The estimate once resolved every line it counted, which
# this bounded; counting a run of pages at a time costs far less, but the sample stays,
# since it decides which granularity a placement takes.) Smaller runs count every line.
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
    to_stack = int((counts.router_stack * table[counts.routers][:, stack_router]).sum())
    at_stack = int((counts.router_stack.sum(axis=0) * stack_latency).sum())
    latency = pod.store_trip((to_port + to_stack) / counts.lines, at_stack / counts.lines).total_ps
    egress = counts.gpu_port.max() * scale
    ingress = counts.memory_port.max() * scale
    stack_flit = np.array([transfer_ps(socket.line_bytes, s.bandwidth) for s in socket.stacks])
    stack_time = (counts.memory_stack * stack_flit[None, :]).max() * scale
    return float(latency + max(egress, ingress) * pod.port_flit_ps + stack_time)


class _LineCounts(NamedTuple):
    """How many remote lines share each pair of what the estimate sums over."""

    lines: int
    router_port: np.ndarray  # [router of the CU, port]
    routers: np.ndarray  # the routers of the ports, in the order of ``router_stack``
    router_stack: np.ndarray  # [router of the port (one of ``routers``), stack]
    gpu_port: np.ndarray  # [GPU of the CU, port]
    memory_port: np.ndarray  # [GPU of the memory, port]
    memory_stack: np.ndarray  # [GPU of the memory, stack]


def _remote_line_counts(
    plan: Plan, placement: Placement, lines_per_chunk: int | None
) -> _LineCounts:
    """The lines ``remote_lines`` resolves (of each chunk its first ``lines_per_chunk``,
    when given), counted by pairs rather than listed: the CU, its GPU and the memory's GPU
    are the same for every line of a range, and the stack and port of its lines are counted
    a run of pages at a time (``mapping.line_counts``), as the flow engine counts them."""
    accesses = plan_accesses(plan)
    rows = np.nonzero(crossing(accesses.kind, accesses.gpu, accesses.memory_gpu))[0]
    amap, socket = placement.address_map, placement.socket
    routers, port_pr = np.unique(np.asarray(socket.port_routers), return_inverse=True)
    ports, stacks = len(socket.ports), len(socket.stacks)
    lines = min(lines_per_chunk or placement.lines_per_chunk, placement.lines_per_chunk)
    top_chunk = int((accesses.chunk + accesses.count).max()) if len(rows) else 0
    router_port = np.zeros((len(socket.router_paths.latency_ps), ports), dtype=np.int64)
    gpu_port = np.zeros((plan.ngpus, ports), dtype=np.int64)
    memory_port = np.zeros((plan.ngpus, ports), dtype=np.int64)
    memory_stack = np.zeros((plan.ngpus, stacks), dtype=np.int64)
    router_stack = np.zeros((len(routers), stacks), dtype=np.int64)
    _count_remote(
        _RemoteRanges(
            accesses.gpu[rows],
            socket.router_of_cu[placement.cus_of(accesses.gpu[rows], accesses.tb[rows])],
            accesses.memory_gpu[rows],
            accesses.buffer[rows],
            accesses.chunk[rows],
            accesses.count[rows],
        ),
        lines,  # of each chunk its first ``lines``, each one line on the wire (plain)
        PageTables.of(placement, top_chunk),
        region_columns(amap),
        PortMap.of(socket.port_hash, port_pr),
        _RemoteTables(router_port, gpu_port, memory_port, memory_stack, router_stack.reshape(-1)),
    )
    return _LineCounts(
        lines=int(memory_stack.sum()),
        router_port=router_port,
        routers=routers.astype(np.int64),
        router_stack=router_stack,
        gpu_port=gpu_port,
        memory_port=memory_port,
        memory_stack=memory_stack,
    )


class _RemoteRanges(NamedTuple):
    """The remote ranges to count: who moves each (GPU, and the router of its CU) and
    which chunks of which memory it moves."""

    gpu: np.ndarray
    router: np.ndarray
    memory_gpu: np.ndarray
    buffer: np.ndarray
    chunk: np.ndarray
    count: np.ndarray


class _RemoteTables(NamedTuple):
    """Where ``_count_remote`` adds the counts (``_LineCounts``'s tables)."""

    router_port: np.ndarray
    gpu_port: np.ndarray
    memory_port: np.ndarray
    memory_stack: np.ndarray
    router_stack: np.ndarray  # flat: [router of the port * stacks + stack]


@jit
def _count_remote(ranges, lines, pages, regions, ports, out):
    """Count the first ``lines`` lines of each chunk of every remote range (a
    ``_RemoteRanges``) into the estimate's tables (a ``_RemoteTables``), range by range;
    ``pages``, ``regions`` and ``ports`` as ``count_range`` reads them."""
    nports = out.router_port.shape[1]
    stacks = out.memory_stack.shape[1]
    n_port = np.zeros(nports, dtype=np.int64)
    n_stack = np.zeros(stacks, dtype=np.int64)
    data = np.zeros(stacks, dtype=np.int64)
    counts = RangeCounts(n_port, out.router_stack, n_stack, data)
    work = scratch(nports)
    wire = plain_wire(lines)
    for a in range(ranges.gpu.shape[0]):
        g, h = ranges.gpu[a], ranges.memory_gpu[a]
        count_range(h, ranges.buffer[a], ranges.chunk[a], ranges.count[a], 0, True, pages,
                    regions, ports, wire, work, counts)  # fmt: skip
        for p in range(nports):
            n = n_port[p]
            if n:
                out.router_port[ranges.router[a], p] += n
                out.gpu_port[g, p] += n
                out.memory_port[h, p] += n
                n_port[p] = 0
        for s in range(stacks):
            out.memory_stack[h, s] += n_stack[s]
            n_stack[s] = 0

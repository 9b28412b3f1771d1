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
from nunasim.jit import jit
from nunasim.mapping.accesses import plan_accesses
from nunasim.mapping.line_counts import count_lines, region_columns
from nunasim.mapping.placement import Placement
from nunasim.mapping.port_runs import HASHES, MAX_SPANS
from nunasim.mapping.port_tally import router_runs
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
    table = placement.page_table
    top_chunk = int((accesses.chunk + accesses.count).max()) if len(rows) else 0
    router_port = np.zeros((len(socket.router_paths.latency_ps), ports), dtype=np.int64)
    gpu_port = np.zeros((plan.ngpus, ports), dtype=np.int64)
    memory_port = np.zeros((plan.ngpus, ports), dtype=np.int64)
    memory_stack = np.zeros((plan.ngpus, stacks), dtype=np.int64)
    router_stack = np.zeros((len(routers), stacks), dtype=np.int64)
    _count_remote(
        accesses.gpu[rows],
        socket.router_of_cu[placement.cus_of(accesses.gpu[rows], accesses.tb[rows])],
        accesses.memory_gpu[rows],
        accesses.buffer[rows],
        accesses.chunk[rows],
        accesses.count[rows],
        placement.layout.offsets(np.arange(top_chunk)),
        table.first,
        table.region,
        table.frame,
        *region_columns(amap),
        HASHES[socket.port_hash],
        socket.line_bytes,
        socket.page_bytes,
        # every line of a chunk one line on the wire (the plain format), its first ``lines``
        np.arange(lines + 1, dtype=np.int64)[None, :],
        port_pr.astype(np.int64),
        *router_runs(port_pr.astype(np.int64)),
        router_port,
        gpu_port,
        memory_port,
        memory_stack,
        router_stack.reshape(-1),
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


@jit
def _count_remote(
    gpu,
    router,
    mgpu,
    buffer,
    chunk,
    count,
    offsets,
    page_first,
    region,
    frame,
    region_stack,
    region_first,
    region_ports,
    region_width,
    mode,
    line_bytes,
    page_bytes,
    wire_cum,
    port_pr,
    run_start,
    run_router,
    run_of_port,
    router_port,
    gpu_port,
    memory_port,
    memory_stack,
    router_stack,
):
    """Count every remote range's lines into the estimate's tables, range by range."""
    ports = router_port.shape[1]
    stacks = memory_stack.shape[1]
    n_port = np.zeros(ports, dtype=np.int64)
    n_stack = np.zeros(stacks, dtype=np.int64)
    data = np.zeros(stacks, dtype=np.int64)
    diff = np.zeros(ports + 1, dtype=np.int64)
    spans = np.empty((MAX_SPANS, 3), dtype=np.int64)
    plain = np.ones(1, dtype=np.int64)
    no_extras = np.zeros(2, dtype=np.int64)
    none = np.zeros(0, dtype=np.int64)
    for a in range(gpu.shape[0]):
        count_lines(mgpu[a], buffer[a], chunk[a], count[a], 0, True, offsets, page_first,
                    region, frame, region_stack, region_first, region_ports, region_width,
                    mode, line_bytes, page_bytes, wire_cum, wire_cum, plain, no_extras, none,
                    none, port_pr, spans, diff, run_start, run_router, run_of_port, n_port,
                    router_stack, n_stack, data)  # fmt: skip
        for p in range(ports):
            n = n_port[p]
            if n:
                router_port[router[a], p] += n
                gpu_port[gpu[a], p] += n
                memory_port[mgpu[a], p] += n
                n_port[p] = 0
        for s in range(stacks):
            memory_stack[mgpu[a], s] += n_stack[s]
            n_stack[s] = 0

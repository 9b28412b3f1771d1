"""What every transfer asks of the resources, counted without enumerating lines.

A group of a step (``nunasim.mapping.accesses``) fetches one line of each source, combines
them and delivers the result to each sink, line operation by line operation. A CU issues
in FIFO order and a step enqueues every source line at its start, its sink lines only as
their sources return, so a step's fetches are issued before its deliveries: a group
moves as two *flows* one after the other, its fetches (flow ``2 g``) and its deliveries
(flow ``2 g + 1``), each advancing its ranges together. For each flow this module counts,
exactly, the wire lines each of its ranges moves over every resource (mesh link, injection
and ejection port, egress port, plane output, stack) and turns them into *demands*: the
busy time per line operation on each resource. The CU's outstanding-request window is a
resource too (by Little's law a request holds a slot for its zero-load round trip, and the
CU has ``window`` slots), and so is the CU's compute unit (a reduction's time per line).

Lines are counted by a compiled loop over each range's pages, nothing stored: a stack is a
property of a page, and pages of one region with consecutive frames make one run of
consecutive line addresses, whose ports (a hash of the line address) come as a few spans
of consecutive ports (``mapping.port_runs``) added a span at a time (``mapping.port_tally``;
the loop over pages is ``mapping.line_counts``, which the granularity estimate shares).
A wire format whose lines do not all carry the same number of wire lines (LL's last line,
one LL128 line in fifteen) counts the usual number per line that way and the difference
line by line (``wire_extras``). The counts land in small per-range tables (per port, per
port router and stack, per stack) before they are spread over the routes. A range read by
several steps (the same chunks of the same memory) is counted once.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.collectives.plan import Plan
from nunasim.engine.flow.demand_kernel import (
    DemandAccesses,
    DemandGroups,
    MeshPaths,
    ResourceLayout,
    RouteLatencies,
    group_demands,
)
from nunasim.engine.flow.tables import RouteTables
from nunasim.engine.lowering.lineops import reduce_ps
from nunasim.engine.lowering.resources import ResourceNumbering, build_resources
from nunasim.hardware import Pod
from nunasim.jit import scatter_at
from nunasim.mapping.accesses import PROTOCOLS, READ, WRITE, AccessTable
from nunasim.mapping.line_counts import (
    PageTables,
    PortMap,
    WireFormat,
    region_columns,
)
from nunasim.mapping.placement import Placement


class Demands(NamedTuple):
    """Per flow (a group of a step), per access and per resource."""

    flow_step: np.ndarray
    flow_ops: np.ndarray  # line operations (0: a phase with nothing to move)
    # a fetch flow: zero-load time to fetch and combine one line operation; a delivery
    # flow: its slowest fenced delivery and acknowledgement
    flow_tail_ps: np.ndarray
    entry_start: np.ndarray  # CSR over flows
    entry_res: np.ndarray  # resources (then CU windows, then CU compute units)
    entry_coef: np.ndarray  # busy ps per line operation (for a window: slot-ps / window)
    res_flits: np.ndarray  # per resource of the numbering: wire lines over the run
    access_lines: np.ndarray  # per access: wire lines
    access_data: np.ndarray  # per access: data bytes
    access_route_ps: np.ndarray  # per access: sum over its lines of their zero-load route
    access_route_max_ps: np.ndarray  # per access: its slowest line's route
    landed: np.ndarray  # [GPU, stack]: data bytes written or stored there


def wire_tables(line_bytes: int, chunk_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """Per protocol and line of a chunk: the wire lines that land on it (a wire line lands
    on the line holding its first data byte) and the data bytes they carry."""
    lines = -(-chunk_bytes // line_bytes)
    count = np.zeros((len(PROTOCOLS), lines), dtype=np.int64)
    data = np.zeros((len(PROTOCOLS), lines), dtype=np.int64)
    for q, protocol in enumerate(PROTOCOLS):
        per_line = protocol.data_bytes_per_line(line_bytes)
        first = np.arange(protocol.lines(chunk_bytes, line_bytes), dtype=np.int64) * per_line
        scatter_at(np.add, count[q], first // line_bytes, 1)
        scatter_at(
            np.add, data[q], first // line_bytes, np.minimum(first + per_line, chunk_bytes) - first
        )
    return count, data


def _cumulative(table: np.ndarray) -> np.ndarray:
    """Per protocol: the sums of ``table`` over each prefix of a chunk's lines."""
    cumulative = np.zeros((table.shape[0], table.shape[1] + 1), dtype=np.int64)
    np.cumsum(table, axis=1, out=cumulative[:, 1:])
    return cumulative


def wire_extras(wire: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per protocol, the wire lines most lines of a chunk carry (1 for Simple, 2 for LL),
    and the lines that carry another number: CSR over protocols, each line and its
    difference from the usual number."""
    base = np.array([np.bincount(row).argmax() if len(row) else 0 for row in wire], dtype=np.int64)
    other = wire != base[:, None]
    proto, line = np.nonzero(other)
    start = np.searchsorted(proto, np.arange(len(wire) + 1)).astype(np.int64)
    return base, start, line.astype(np.int64), (wire - base[:, None])[other].astype(np.int64)


def flow_demands(
    pod: Pod,
    plan: Plan,
    placement: Placement,
    accesses: AccessTable,
    numbering: ResourceNumbering,
    tables: RouteTables,
    dtype: str,
) -> Demands:
    """The demands of every group of ``accesses`` (a placed ``plan``)."""
    socket, amap = pod.socket, placement.address_map
    line_bytes, chunk_bytes = socket.line_bytes, placement.chunk_bytes
    groups = int(accesses.group[-1]) + 1 if len(accesses.group) else 0
    per_line = np.array([p.data_bytes_per_line(line_bytes) for p in PROTOCOLS])[accesses.protocol]
    op_bytes = np.zeros(groups, dtype=np.int64)
    scatter_at(np.maximum, op_bytes, accesses.group, per_line)
    chunks = np.zeros(groups, dtype=np.int64)
    scatter_at(np.maximum, chunks, accesses.group, accesses.count)
    step = np.zeros(groups, dtype=np.int64)
    step[accesses.group] = accesses.step
    sources = np.bincount(accesses.group[accesses.fetches], minlength=groups)
    cost = {
        pair: reduce_ps(pod, pair[0], dtype, pair[1])
        for pair in set(zip(sources.tolist(), op_bytes.tolist(), strict=True))
    }
    compute = np.array(
        [cost[pair] for pair in zip(sources.tolist(), op_bytes.tolist(), strict=True)],
        dtype=np.int64,
    )
    cu_on_gpu = placement.cus_of(accesses.gpu, accesses.tb)
    access_cu = accesses.gpu * socket.cus + cu_on_gpu
    flow_cu = np.zeros(groups, dtype=np.int64)
    flow_cu[accesses.group] = access_cu
    polled = ~accesses.fetches & np.array([p.data_polled for p in PROTOCOLS])[accesses.protocol]
    # ranges that stay on their socket, counted once per distinct range
    local = (accesses.kind == READ) | (accesses.kind == WRITE)
    key = np.stack(
        [accesses.memory_gpu, accesses.buffer, accesses.chunk, accesses.count, accesses.protocol],
        axis=1,
    )
    unique, cached = np.unique(np.where(local[:, None], key, -1), axis=0, return_inverse=True)
    cached = cached.ravel()
    wire, wire_data = wire_tables(line_bytes, chunk_bytes)
    counting = WireFormat(_cumulative(wire), _cumulative(wire_data), *wire_extras(wire))
    del wire, wire_data  # only their sums and the lines out of the usual are counted with
    top_chunk = int((accesses.chunk + accesses.count).max()) if len(accesses.chunk) else 0
    resources = build_resources(pod, numbering)
    path = socket.router_paths
    group_start = np.searchsorted(accesses.group, np.arange(groups + 1))
    ops = chunks * -(-chunk_bytes // op_bytes)
    out = group_demands(
        DemandAccesses(
            accesses.kind,
            accesses.gpu,
            socket.router_of_cu[cu_on_gpu],
            accesses.memory_gpu,
            accesses.buffer,
            accesses.chunk,
            accesses.count,
            accesses.protocol,
            polled,
            np.where(local, cached, -1),
            unique,
        ),
        DemandGroups(group_start, ops, compute, flow_cu),
        PageTables.of(placement, top_chunk),
        region_columns(amap),
        PortMap.of(socket.port_hash, tables.port_router_of_port),
        counting,
        MeshPaths(
            tables.port_routers,
            socket.stack_routers,
            path.start,
            path.links,
            socket.mesh.routers,
        ),
        ResourceLayout(
            len(socket.ports),
            len(socket.stacks),
            np.array(numbering.first[:-1], dtype=np.int64),
            np.array(numbering.per_gpu, dtype=np.int64),
            resources.occ,
            socket.outstanding_requests,
            plan.ngpus * socket.cus,
        ),
        RouteLatencies(
            tables.store,
            tables.store_ack,
            tables.load,
            tables.read,
            tables.write,
            tables.write_ack,
        ),
    )
    moves = np.diff(out[1]) > 0  # a phase with no range has no entries
    return Demands(np.repeat(step, 2), np.where(moves, np.repeat(ops, 2), 0), *out)

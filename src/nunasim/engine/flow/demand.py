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
from nunasim.engine.flow.tables import RouteTables
from nunasim.engine.jit import jit
from nunasim.engine.lineops import reduce_ps
from nunasim.engine.resources import (
    EGRESS,
    EJECT,
    INJECT,
    LINK,
    PLANE_OUT,
    STACK,
    ResourceNumbering,
    build_resources,
)
from nunasim.hardware import Pod
from nunasim.mapping.accesses import LOAD, PROTOCOLS, READ, STORE, WRITE, AccessTable
from nunasim.mapping.line_counts import count_lines, region_columns
from nunasim.mapping.placement import Placement
from nunasim.mapping.port_runs import HASHES, MAX_SPANS
from nunasim.mapping.port_tally import router_runs


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
        first = np.arange(-(-chunk_bytes // per_line), dtype=np.int64) * per_line
        np.add.at(count[q], first // line_bytes, 1)
        np.add.at(data[q], first // line_bytes, np.minimum(first + per_line, chunk_bytes) - first)
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
    np.maximum.at(op_bytes, accesses.group, per_line)
    chunks = np.zeros(groups, dtype=np.int64)
    np.maximum.at(chunks, accesses.group, accesses.count)
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
    region, frame, page_first = placement.page_table
    wire, wire_data = wire_tables(line_bytes, chunk_bytes)
    counting = (_cumulative(wire), _cumulative(wire_data), *wire_extras(wire))
    del wire, wire_data  # only their sums and the lines out of the usual are counted with
    top_chunk = int((accesses.chunk + accesses.count).max()) if len(accesses.chunk) else 0
    resources = build_resources(pod, numbering)
    path = socket.router_paths
    group_start = np.searchsorted(accesses.group, np.arange(groups + 1))
    out = _demands(
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
        group_start,
        chunks * -(-chunk_bytes // op_bytes),
        compute,
        flow_cu,
        placement.layout.offsets(np.arange(top_chunk)),
        page_first,
        region,
        frame,
        *region_columns(amap),
        HASHES[socket.port_hash],
        line_bytes,
        socket.page_bytes,
        *counting,
        tables.port_router_of_port,
        *router_runs(tables.port_router_of_port),
        tables.port_routers,
        socket.stack_routers,
        path.start,
        path.links,
        socket.mesh.routers,
        len(socket.ports),
        len(socket.stacks),
        np.array(numbering.first[:-1], dtype=np.int64),
        np.array(numbering.per_gpu, dtype=np.int64),
        resources.occ,
        tables.store,
        tables.store_ack,
        tables.load,
        tables.read,
        tables.write,
        tables.write_ack,
        socket.outstanding_requests,
        plan.ngpus * socket.cus,
    )
    ops = chunks * -(-chunk_bytes // op_bytes)
    moves = np.diff(out[1]) > 0  # a phase with no range has no entries
    return Demands(np.repeat(step, 2), np.where(moves, np.repeat(ops, 2), 0), *out)


@jit(inline=True)
def _add(res, flits, acc, touched, ntouched):
    if flits == 0:
        return ntouched
    if acc[res] == 0:
        touched[ntouched] = res
        ntouched += 1
    acc[res] += flits
    return ntouched


@jit(inline=True)
def _add_path(src, dst, gpu, flits, path_start, path_links, routers, link0, acc, touched, nt):
    if flits == 0:
        return nt
    pair = src * routers + dst
    # ``_add`` spelled out: a call with arrays inside this loop costs more than the add
    for k in range(path_start[pair], path_start[pair + 1]):
        res = link0 + gpu + path_links[k]
        if acc[res] == 0:
            touched[nt] = res
            nt += 1
        acc[res] += flits
    return nt


@jit(inline=True)
def _grow(array, needed):
    if needed <= array.shape[0]:
        return array
    bigger = np.empty(max(needed, 2 * array.shape[0]), dtype=array.dtype)
    bigger[: array.shape[0]] = array
    return bigger


@jit
def _demands(
    kind,
    gpu,
    router,
    mgpu,
    buffer,
    chunk,
    count,
    proto,
    polled,
    cached,
    unique,
    group_start,
    group_ops,
    group_compute,
    group_cu,
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
    data_cum,
    wire_base,
    extra_start,
    extra_line,
    extra_wire,
    port_pr,
    run_start,
    run_router,
    run_of_port,
    pr_router,
    stack_router,
    path_start,
    path_links,
    routers,
    ports,
    stacks,
    kind_first,
    kind_per_gpu,
    occ,
    lat_store,
    ack_store,
    lat_load,
    lat_read,
    lat_write,
    ack_write,
    window,
    ncus,
):
    naccess = kind.shape[0]
    ngroups = group_start.shape[0] - 1
    nres = occ.shape[0]
    nprs = pr_router.shape[0]
    # distinct local ranges: wire lines and data per stack, counted once each
    cache_lines = np.zeros((unique.shape[0], stacks), dtype=np.int64)
    cache_data = np.zeros((unique.shape[0], stacks), dtype=np.int64)
    n_port = np.zeros(ports, dtype=np.int64)
    n_prs = np.zeros(nprs * stacks, dtype=np.int64)
    diff = np.zeros(ports + 1, dtype=np.int64)
    spans = np.empty((MAX_SPANS, 3), dtype=np.int64)
    for u in range(unique.shape[0]):
        if unique[u, 0] >= 0:
            count_lines(
                unique[u, 0],
                unique[u, 1],
                unique[u, 2],
                unique[u, 3],
                unique[u, 4],
                False,
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
                data_cum,
                wire_base,
                extra_start,
                extra_line,
                extra_wire,
                port_pr,
                spans,
                diff,
                run_start,
                run_router,
                run_of_port,
                n_port,
                n_prs,
                cache_lines[u],
                cache_data[u],
            )
    acc = np.zeros(nres, dtype=np.int64)
    touched = np.empty(nres, dtype=np.int64)
    n_stack = np.zeros(stacks, dtype=np.int64)
    d_stack = np.zeros(stacks, dtype=np.int64)
    n_pr = np.zeros(nprs, dtype=np.int64)
    res_flits = np.zeros(nres, dtype=np.int64)
    landed = np.zeros((page_first.shape[0], stacks), dtype=np.int64)
    access_lines = np.zeros(naccess, dtype=np.int64)
    access_data = np.zeros(naccess, dtype=np.int64)
    access_route = np.zeros(naccess, dtype=np.int64)
    access_route_max = np.zeros(naccess, dtype=np.int64)
    tail = np.zeros(2 * ngroups, dtype=np.int64)
    entry_start = np.zeros(2 * ngroups + 1, dtype=np.int64)
    entry_res = np.empty(1024, dtype=np.int64)
    entry_coef = np.empty(1024, dtype=np.float64)
    nentries = 0
    link0, egress0, plane0 = kind_first[LINK], kind_first[EGRESS], kind_first[PLANE_OUT]
    stack0, inject0, eject0 = kind_first[STACK], kind_first[INJECT], kind_first[EJECT]
    nlink, nport, nstk, nrout = (
        kind_per_gpu[LINK],
        kind_per_gpu[EGRESS],
        kind_per_gpu[STACK],
        kind_per_gpu[INJECT],
    )
    for f in range(ngroups):
        fetch = 0
        for phase in range(2):  # the group's fetches, then its deliveries
            flow = 2 * f + phase
            nt = 0
            deliver = 0
            slots = 0  # request slot-ps of one pass over the phase's lines
            for a in range(group_start[f], group_start[f + 1]):
                k = kind[a]
                if (k <= LOAD) != (phase == 0):
                    continue
                g, h, r = gpu[a], mgpu[a], router[a]
                crossing = (k == LOAD) | (k == STORE)
                if crossing:
                    count_lines(
                        h,
                        buffer[a],
                        chunk[a],
                        count[a],
                        proto[a],
                        True,
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
                        data_cum,
                        wire_base,
                        extra_start,
                        extra_line,
                        extra_wire,
                        port_pr,
                        spans,
                        diff,
                        run_start,
                        run_router,
                        run_of_port,
                        n_port,
                        n_prs,
                        n_stack,
                        d_stack,
                    )
                else:
                    u = cached[a]
                    for s in range(stacks):
                        n_stack[s] = cache_lines[u, s]
                        d_stack[s] = cache_data[u, s]
                total = 0
                data = 0
                for s in range(stacks):
                    total += n_stack[s]
                    data += d_stack[s]
                access_lines[a] = total
                access_data[a] = data
                route_sum = 0
                route_max = 0
                if crossing:
                    for p in range(ports):
                        n = n_port[p]
                        if n:
                            n_pr[port_pr[p]] += n
                            if k == STORE:
                                nt = _add(egress0 + g * nport + p, n, acc, touched, nt)
                                nt = _add(plane0 + h * nport + p, n, acc, touched, nt)
                            else:
                                nt = _add(egress0 + h * nport + p, n, acc, touched, nt)
                                nt = _add(plane0 + g * nport + p, n, acc, touched, nt)
                            n_port[p] = 0
                    for i in range(nprs):
                        n = n_pr[i]
                        if n:
                            if k == STORE:  # the CU's router to the port's
                                nt = _add_path(
                                    r,
                                    pr_router[i],
                                    g * nlink,
                                    n,
                                    path_start,
                                    path_links,
                                    routers,
                                    link0,
                                    acc,
                                    touched,
                                    nt,
                                )
                            else:  # the port's router to the CU's
                                nt = _add_path(
                                    pr_router[i],
                                    r,
                                    g * nlink,
                                    n,
                                    path_start,
                                    path_links,
                                    routers,
                                    link0,
                                    acc,
                                    touched,
                                    nt,
                                )
                            n_pr[i] = 0
                        for s in range(stacks):
                            n = n_prs[i * stacks + s]
                            if n == 0:
                                continue
                            n_prs[i * stacks + s] = 0
                            if k == STORE:
                                nt = _add_path(
                                    pr_router[i],
                                    stack_router[s],
                                    h * nlink,
                                    n,
                                    path_start,
                                    path_links,
                                    routers,
                                    link0,
                                    acc,
                                    touched,
                                    nt,
                                )
                                latency = lat_store[r, i, s]
                                slots += n * (latency + ack_store[r, i, s])
                                if not polled[a]:
                                    deliver = max(deliver, latency + ack_store[r, i, s])
                            else:
                                nt = _add_path(
                                    stack_router[s],
                                    pr_router[i],
                                    h * nlink,
                                    n,
                                    path_start,
                                    path_links,
                                    routers,
                                    link0,
                                    acc,
                                    touched,
                                    nt,
                                )
                                latency = lat_load[r, i, s]
                                slots += n * latency
                                fetch = max(fetch, latency)
                            route_sum += n * latency
                            route_max = max(route_max, latency)
                else:
                    for s in range(stacks):
                        n = n_stack[s]
                        if n == 0:
                            continue
                        if k == READ:
                            nt = _add_path(
                                stack_router[s],
                                r,
                                g * nlink,
                                n,
                                path_start,
                                path_links,
                                routers,
                                link0,
                                acc,
                                touched,
                                nt,
                            )
                            latency = lat_read[r, s]
                            slots += n * latency
                            fetch = max(fetch, latency)
                        else:
                            nt = _add_path(
                                r,
                                stack_router[s],
                                g * nlink,
                                n,
                                path_start,
                                path_links,
                                routers,
                                link0,
                                acc,
                                touched,
                                nt,
                            )
                            latency = lat_write[r, s]
                            slots += n * (latency + ack_write[r, s])
                            if not polled[a]:
                                deliver = max(deliver, latency + ack_write[r, s])
                        route_sum += n * latency
                        route_max = max(route_max, latency)
                for s in range(stacks):
                    n = n_stack[s]
                    if n:
                        nt = _add(stack0 + h * nstk + s, n, acc, touched, nt)
                        if k >= WRITE:
                            landed[h, s] += d_stack[s]
                    n_stack[s] = 0
                    d_stack[s] = 0
                if k <= LOAD:
                    nt = _add(eject0 + g * nrout + r, total, acc, touched, nt)
                else:
                    nt = _add(inject0 + g * nrout + r, total, acc, touched, nt)
                access_route[a] = route_sum
                access_route_max[a] = route_max
            # the phase's latency after its last line operation is issued
            tail[flow] = fetch + group_compute[f] if phase == 0 else deliver
            ops = group_ops[f]
            entry_res = _grow(entry_res, nentries + nt + 2)
            entry_coef = _grow(entry_coef, nentries + nt + 2)
            for j in range(nt):
                e = touched[j]
                entry_res[nentries] = e
                entry_coef[nentries] = acc[e] * occ[e] / ops
                res_flits[e] += acc[e]
                acc[e] = 0
                nentries += 1
            if slots > 0:
                entry_res[nentries] = nres + group_cu[f]
                entry_coef[nentries] = slots / ops / window
                nentries += 1
            if phase == 0 and group_compute[f] > 0:
                entry_res[nentries] = nres + ncus + group_cu[f]
                entry_coef[nentries] = group_compute[f]
                nentries += 1
            entry_start[flow + 1] = nentries
    return (
        tail,
        entry_start,
        entry_res[:nentries].copy(),
        entry_coef[:nentries].copy(),
        res_flits,
        access_lines,
        access_data,
        access_route,
        access_route_max,
        landed,
    )

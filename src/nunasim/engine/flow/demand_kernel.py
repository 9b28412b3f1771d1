"""The flow engine's compiled demand count: every group's lines, counted a run of pages at a
time (``nunasim.mapping.line_counts``), on the resources they cross, as flow entries.

``demand.flow_demands`` builds the bundles below once in Python and calls
``group_demands``; this module is the compiled part alone.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.engine.jit import jit
from nunasim.engine.kernel.kinds import (
    EGRESS,
    EJECT,
    INJECT,
    LINK,
    LOAD,
    PLANE_OUT,
    READ,
    STACK,
    STORE,
    WRITE,
)
from nunasim.mapping.line_counts import RangeCounts, count_range, scratch


class DemandAccesses(NamedTuple):
    """One row per access of the access table (``nunasim.mapping.accesses``)."""

    kind: np.ndarray  # READ, LOAD, WRITE or STORE
    gpu: np.ndarray  # the GPU of its CU
    router: np.ndarray  # its CU's router
    mgpu: np.ndarray  # the GPU of the memory it reads or writes
    buffer: np.ndarray
    chunk: np.ndarray  # its first chunk
    count: np.ndarray  # its chunks
    proto: np.ndarray  # its protocol's index
    polled: np.ndarray  # a data-polled delivery (no fence waits for it)
    cached: np.ndarray  # a local range: its row of ``unique``; else -1
    unique: np.ndarray  # [distinct local range, 5]: (GPU, buffer, chunk, count, protocol)


class DemandGroups(NamedTuple):
    """One row per group (a step's ranges that move together)."""

    group_start: np.ndarray  # CSR over groups into the accesses
    group_ops: np.ndarray  # its line operations
    group_compute: np.ndarray  # ps of compute per line operation (a reduction)
    group_cu: np.ndarray  # its CU, numbered over the pod


class MeshPaths(NamedTuple):
    """Routers and the mesh paths between them."""

    pr_router: np.ndarray  # per port-router index: the router
    stack_router: np.ndarray  # per stack: its router
    path_start: np.ndarray  # CSR over (source, destination) router pairs
    path_links: np.ndarray  # the link ids of each path
    routers: int  # routers of a socket


class ResourceLayout(NamedTuple):
    """How the resources are numbered and what a flit costs on each."""

    ports: int  # per socket
    stacks: int  # per socket
    kind_first: np.ndarray  # per resource kind: its first resource id
    kind_per_gpu: np.ndarray  # per resource kind: its resources on one GPU
    occ: np.ndarray  # per resource: ps a flit holds it
    window: int  # a CU's outstanding requests
    ncus: int  # CUs over the pod


class RouteLatencies(NamedTuple):
    """Zero-load route latencies and acknowledgements (``flow.tables.RouteTables``)."""

    lat_store: np.ndarray  # [CU router, port router, stack]
    ack_store: np.ndarray
    lat_load: np.ndarray
    lat_read: np.ndarray  # [CU router, stack]
    lat_write: np.ndarray
    ack_write: np.ndarray


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
def group_demands(accesses, groups, pages, regions, port_map, wire, paths, layout, latencies):
    """Every group's demands (see ``Demands``): its flows' tails and resource entries, the
    resources' flits, every access's lines, data and route latencies, and the data landed
    at each (GPU, stack). The bundles are ``DemandAccesses``, ``DemandGroups``, the line
    counter's (``nunasim.mapping.line_counts``), ``MeshPaths``, ``ResourceLayout`` and
    ``RouteLatencies``."""
    kind, gpu, router, mgpu, buffer, chunk, count, proto, polled, cached, unique = accesses
    group_start, group_ops, group_compute, group_cu = groups
    pr_router, stack_router, path_start, path_links, routers = paths
    ports, stacks, kind_first, kind_per_gpu, occ, window, ncus = layout
    lat_store, ack_store, lat_load, lat_read, lat_write, ack_write = latencies
    naccess = kind.shape[0]
    ngroups = group_start.shape[0] - 1
    nres = occ.shape[0]
    nprs = pr_router.shape[0]
    # distinct local ranges: wire lines and data per stack, counted once each
    cache_lines = np.zeros((unique.shape[0], stacks), dtype=np.int64)
    cache_data = np.zeros((unique.shape[0], stacks), dtype=np.int64)
    n_port = np.zeros(ports, dtype=np.int64)
    n_prs = np.zeros(nprs * stacks, dtype=np.int64)
    work = scratch(ports)
    for u in range(unique.shape[0]):
        if unique[u, 0] >= 0:
            count_range(
                unique[u, 0],
                unique[u, 1],
                unique[u, 2],
                unique[u, 3],
                unique[u, 4],
                False,
                pages,
                regions,
                port_map,
                wire,
                work,
                RangeCounts(n_port, n_prs, cache_lines[u], cache_data[u]),
            )
    acc = np.zeros(nres, dtype=np.int64)
    touched = np.empty(nres, dtype=np.int64)
    n_stack = np.zeros(stacks, dtype=np.int64)
    d_stack = np.zeros(stacks, dtype=np.int64)
    n_pr = np.zeros(nprs, dtype=np.int64)
    res_flits = np.zeros(nres, dtype=np.int64)
    landed = np.zeros((pages.first.shape[0], stacks), dtype=np.int64)
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
                    count_range(
                        h,
                        buffer[a],
                        chunk[a],
                        count[a],
                        proto[a],
                        True,
                        pages,
                        regions,
                        port_map,
                        wire,
                        work,
                        RangeCounts(n_port, n_prs, n_stack, d_stack),
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
                            n_pr[port_map.router[p]] += n
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

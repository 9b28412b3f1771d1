"""Routes: the resources every message crosses, in order, built for all messages at once.

Data flows from where it starts to where it ends: from the CU to the memory for a write,
a store or a flag (a *delivery*), from the memory to the CU for a read or a load (a
*fetch*). At the CU's end it passes the router's injection port (leaving) or ejection port
(arriving); at the memory's end the stack. In between, on one socket, the mesh path from
the start's router to the end's; across sockets, the mesh path to the port's router, the
egress port, the plane's output towards the other socket's port of the same ordinal, and
the mesh path from that port's router to the end.

Around the resources a route has pure delays: before the first, the CU's L1 latency (a
fetch adds its request's zero-load trip to the memory; requests carry no data and do not
contend); after the egress port, the plane's latency; and for a write or store the
acknowledgement's zero-load trip back to the CU.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.engine.jit import jit
from nunasim.engine.kernel.kinds import EGRESS, EJECT, INJECT, LINK, PLANE_OUT, STACK
from nunasim.engine.kernel.rows import (
    ROUTE_DTYPE,
    ROUTE_FIELDS,
    ROUTE_POST,
    ROUTE_RES,
    check_route_values,
)
from nunasim.engine.lowering.messages import LOAD, READ, STORE, WRITE, Messages
from nunasim.engine.lowering.resources import ResourceNumbering as Numbering
from nunasim.hardware import Pod


class Routes(NamedTuple):
    """Per message its delays and, flattened, the resources it crosses."""

    pre_ps: np.ndarray  # pure delay before the first resource
    ack_ps: np.ndarray  # acknowledgement delay back to the CU (writes and stores), else 0
    start: np.ndarray  # CSR over messages into ``resource``
    resource: np.ndarray  # resource ids
    post_ps: np.ndarray  # pure delay after each resource
    table: np.ndarray  # [entry, ROUTE_FIELDS] of ROUTE_DTYPE: the two above are its columns


class _Way(NamedTuple):
    """Per message: which way its data flows and by which routers."""

    fetch: np.ndarray  # True for reads and loads: from the memory to the CU
    crossing: np.ndarray  # True for messages between two sockets
    port: np.ndarray  # the port they cross by (0 for the others)
    stack_router: np.ndarray
    via: np.ndarray  # router of that port; the stack's router on one socket


class _RouteEnds(NamedTuple):
    """Per message, what its route runs between: where its entries start in the table, its
    first and last resources, the GPUs and routers it starts and ends at, the middle router
    between its two mesh paths, and the port it crosses sockets by."""

    start: np.ndarray  # CSR over messages into the route table
    first: np.ndarray
    last: np.ndarray
    start_gpu: np.ndarray
    end_gpu: np.ndarray
    start_router: np.ndarray
    middle: np.ndarray
    end_router: np.ndarray
    crossing: np.ndarray  # bool
    port: np.ndarray


class _Network(NamedTuple):
    """What every route reads the same: the mesh's paths between router pairs (CSR over
    pairs ``a * routers + b`` into link slots), the resource numbering (first id of each
    kind and ids per GPU, by kind), and the plane's latency."""

    path_start: np.ndarray
    path_links: np.ndarray
    routers: int
    kind_first: np.ndarray
    per_gpu: np.ndarray
    plane_ps: int


def build_routes(pod: Pod, numbering: Numbering, messages: Messages) -> Routes:
    """The route of every message."""
    socket, m = pod.socket, messages
    crossing = m.port >= 0
    port = np.where(crossing, m.port, 0)
    stack_router = socket.stack_routers[m.stack]
    way = _Way(
        fetch=(m.kind == READ) | (m.kind == LOAD),
        crossing=crossing,
        port=port,
        stack_router=stack_router,
        via=np.where(crossing, socket.port_routers[port], stack_router),
    )
    start, table = _resources(pod, numbering, m, way)
    # zero-load trips between the CU's router and the stack's
    latency = socket.router_paths.latency_ps
    plane = np.where(crossing, pod.plane_latency_ps, 0)
    to_memory = latency[m.router, way.via] + plane + latency[way.via, stack_router]
    to_cu = latency[stack_router, way.via] + plane + latency[way.via, m.router]
    pre = socket.l1_latency_ps + np.where(way.fetch, to_memory, 0)
    acknowledged = (m.kind == WRITE) | (m.kind == STORE)
    ack = np.where(acknowledged, to_cu, 0)
    return Routes(pre, ack, start, table[:, ROUTE_RES], table[:, ROUTE_POST], table)


def _resources(
    pod: Pod, numbering: Numbering, m: Messages, way: _Way
) -> tuple[np.ndarray, np.ndarray]:
    """Every route's resources and the pure delay after each: the CSR starts, and one
    table of both in the layout the packet core reads, so that it needs no copy."""
    fetch, crossing, port = way.fetch, way.crossing, way.port
    # the data's start and end: (GPU, router) each, and the resource at either end
    start_gpu = np.where(fetch, m.memory_gpu, m.gpu)
    end_gpu = np.where(fetch, m.gpu, m.memory_gpu)
    start_router = np.where(fetch, way.stack_router, m.router)
    end_router = np.where(fetch, m.router, way.stack_router)
    memory = numbering.id(STACK, m.memory_gpu, m.stack)
    first = np.where(fetch, memory, numbering.id(INJECT, m.gpu, m.router))
    last = np.where(fetch, numbering.id(EJECT, m.gpu, m.router), memory)
    # On one socket the second mesh path is empty: it starts and ends at the end's router.
    middle = np.where(crossing, way.via, end_router)
    paths = pod.socket.router_paths
    length = 2 + paths.hops[start_router, middle] + 2 * crossing + paths.hops[middle, end_router]
    start = np.concatenate([[0], np.cumsum(length)])
    check_route_values(numbering.total - 1, pod.plane_latency_ps)
    table = np.empty((start[-1], ROUTE_FIELDS), dtype=ROUTE_DTYPE)  # every entry written below
    ends = _RouteEnds(
        start=start,
        first=first,
        last=last,
        start_gpu=start_gpu,
        end_gpu=end_gpu,
        start_router=start_router,
        middle=middle,
        end_router=end_router,
        crossing=crossing,
        port=port,
    )
    network = _Network(
        path_start=paths.start,
        path_links=paths.links,
        routers=len(paths.hops),
        kind_first=np.array(numbering.first[: len(numbering.per_gpu)], dtype=np.int64),
        per_gpu=np.array(numbering.per_gpu, dtype=np.int64),
        plane_ps=pod.plane_latency_ps,
    )
    _write_routes(ends, network, table)
    return start, table


@jit(inline=True)
def _write_path(
    table: np.ndarray,
    at: int,
    links: int,
    path_start: np.ndarray,
    path_links: np.ndarray,
    pair: int,
) -> int:
    """Write the mesh links of router pair ``pair`` (ids from ``links`` on) from ``at``
    on; return where the route continues."""
    for k in range(path_start[pair], path_start[pair + 1]):
        table[at, ROUTE_RES] = links + path_links[k]
        table[at, ROUTE_POST] = 0
        at += 1
    return at


@jit
def _write_routes(ends: _RouteEnds, network: _Network, table: np.ndarray) -> None:
    """Write every route from ``ends.start[i]`` on, message by message: its first resource,
    the mesh links from its start to the middle router, the egress port and plane output
    when it crosses sockets (the plane's latency after the port), the mesh links from the
    middle router to its end, its last resource. Compiled, it needs no temporary per
    route entry (the routes are most of a lowered scenario's memory)."""
    start, first, last = ends.start, ends.first, ends.last
    start_gpu, end_gpu = ends.start_gpu, ends.end_gpu
    start_router, middle, end_router = ends.start_router, ends.middle, ends.end_router
    crossing, port = ends.crossing, ends.port
    path_start, path_links, routers = network.path_start, network.path_links, network.routers
    kind_first, per_gpu, plane_ps = network.kind_first, network.per_gpu, network.plane_ps
    for i in range(len(first)):
        at = start[i]
        table[at, ROUTE_RES] = first[i]
        table[at, ROUTE_POST] = 0
        at += 1
        links = kind_first[LINK] + start_gpu[i] * per_gpu[LINK]
        pair = start_router[i] * routers + middle[i]
        at = _write_path(table, at, links, path_start, path_links, pair)
        if crossing[i]:
            table[at, ROUTE_RES] = kind_first[EGRESS] + start_gpu[i] * per_gpu[EGRESS] + port[i]
            table[at, ROUTE_POST] = plane_ps
            table[at + 1, ROUTE_RES] = (
                kind_first[PLANE_OUT] + end_gpu[i] * per_gpu[PLANE_OUT] + port[i]
            )
            table[at + 1, ROUTE_POST] = 0
            at += 2
        links = kind_first[LINK] + end_gpu[i] * per_gpu[LINK]
        pair = middle[i] * routers + end_router[i]
        at = _write_path(table, at, links, path_start, path_links, pair)
        table[at, ROUTE_RES] = last[i]
        table[at, ROUTE_POST] = 0

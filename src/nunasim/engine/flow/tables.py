"""Per-socket tables the flow engine reads instead of per-message routes.

A line's route depends only on its kind, the router of its CU, the router of the port it
crosses by (not which of that router's ports: every port of a router adds the same
latency) and its stack. The zero-load latencies of every such route are taken from the
packet engine's own route builder (``nunasim.engine.lowering.routes``) on one message per
combination, so both engines agree on them by construction.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.engine.lowering.messages import LOAD, READ, STORE, WRITE, Messages
from nunasim.engine.lowering.resources import build_resources, resource_numbering
from nunasim.engine.lowering.routes import build_routes
from nunasim.hardware import Pod


class RouteTables(NamedTuple):
    """Zero-load route latencies (issue to end of route, the CU's L1 latency included) and
    acknowledgement delays, by (CU router, port router, stack) or (CU router, stack)."""

    port_router_of_port: np.ndarray  # per port: its index among the port routers
    port_routers: np.ndarray  # per port-router index: the router
    store: np.ndarray  # [router, port router, stack]
    store_ack: np.ndarray
    load: np.ndarray
    read: np.ndarray  # [router, stack]
    write: np.ndarray
    write_ack: np.ndarray


def route_tables(pod: Pod) -> RouteTables:
    """The latency tables of ``pod``'s socket (GPU 0 storing to and loading from GPU 1)."""
    socket = pod.socket
    routers, stacks = socket.mesh.routers, len(socket.stacks)
    port_routers, port_index = np.unique(socket.port_routers, return_inverse=True)
    first_port = np.array([int(np.argmax(port_index == i)) for i in range(len(port_routers))])
    r, pr, s = (
        a.ravel()
        for a in np.meshgrid(
            np.arange(routers), np.arange(len(port_routers)), np.arange(stacks), indexing="ij"
        )
    )
    rl, sl = (a.ravel() for a in np.meshgrid(np.arange(routers), np.arange(stacks), indexing="ij"))
    crossing, local = len(r), len(rl)
    kind = np.concatenate(
        [
            np.full(crossing, STORE),
            np.full(crossing, LOAD),
            np.full(local, READ),
            np.full(local, WRITE),
        ]
    )
    router = np.concatenate([r, r, rl, rl])
    stack = np.concatenate([s, s, sl, sl])
    port = np.concatenate([first_port[pr], first_port[pr], np.full(2 * local, -1)])
    memory_gpu = np.concatenate(
        [np.ones(2 * crossing, dtype=np.int64), np.zeros(2 * local, dtype=np.int64)]
    )
    zeros = np.zeros(len(kind), dtype=np.int64)
    messages = Messages(
        kind=kind,
        lineop=zeros,
        gpu=zeros,
        cu=zeros,
        router=router,
        target=zeros - 1,
        data_bytes=zeros,
        memory_gpu=memory_gpu,
        address=zeros,
        port=port,
        stack=stack,
    )
    numbering = resource_numbering(pod, 2)
    latency, ack = route_latencies(pod, numbering, messages)
    crossing_shape = (routers, len(port_routers), stacks)
    parts = np.split(np.arange(len(kind)), np.cumsum([crossing, crossing, local]))
    return RouteTables(
        port_router_of_port=port_index.astype(np.int64),
        port_routers=port_routers.astype(np.int64),
        store=latency[parts[0]].reshape(crossing_shape),
        store_ack=ack[parts[0]].reshape(crossing_shape),
        load=latency[parts[1]].reshape(crossing_shape),
        read=latency[parts[2]].reshape(routers, stacks),
        write=latency[parts[3]].reshape(routers, stacks),
        write_ack=ack[parts[3]].reshape(routers, stacks),
    )


def route_latencies(pod: Pod, numbering, messages: Messages) -> tuple[np.ndarray, np.ndarray]:
    """Zero-load time of every message's route from issue to its end, and its
    acknowledgement's delay back to the CU (0 for reads, loads and flags)."""
    routes = build_routes(pod, numbering, messages)
    lat = build_resources(pod, numbering).lat
    per_entry = lat[routes.resource] + routes.post_ps
    owner = np.repeat(np.arange(messages.size), np.diff(routes.start))
    totals = np.bincount(owner, weights=per_entry, minlength=messages.size).astype(np.int64)
    return totals + routes.pre_ps, routes.ack_ps

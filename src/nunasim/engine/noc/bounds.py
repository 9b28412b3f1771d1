"""Where a synthetic-traffic run's packets go and what the mesh can carry of them: the core's
routes between every two routers, each resource's flit rate, the expected load of a pattern
on every resource, its channel-load bound and its zero-load latency.

Resource numbering of a run: the mesh's link slots, then every router's injection port,
then every router's ejection port.
"""

from __future__ import annotations

import numpy as np

from nunasim.engine.noc.traffic import Pattern, as_pattern, destination_matrix
from nunasim.engine.packet.engine import route_rows
from nunasim.hardware import Mesh, Socket
from nunasim.units import ps_to_cycles


def _inject(mesh: Mesh, router: np.ndarray | int) -> np.ndarray | int:
    return mesh.link_slots + router


def _eject(mesh: Mesh, router: np.ndarray | int) -> np.ndarray | int:
    return mesh.link_slots + mesh.routers + router


def core_routes(socket: Socket) -> tuple[np.ndarray, np.ndarray]:
    """The core's routes (CSR start, route rows) of every ordered pair of routers, pair
    ``src * routers + dst``: the source's injection port, the links of ``socket.path``, the
    destination's ejection port."""
    mesh = socket.mesh
    n = mesh.routers
    paths = socket.router_paths
    pairs = np.arange(n * n)
    start = paths.start + 2 * np.arange(n * n + 1)
    resource = np.empty(int(start[-1]), dtype=np.int64)
    sources, destinations = np.divmod(pairs, n)
    resource[start[:-1]] = _inject(mesh, sources)
    resource[start[1:] - 1] = _eject(mesh, destinations)
    # A pair's links sit between its two ports: two entries further per earlier pair.
    owner = np.repeat(pairs, np.diff(paths.start))
    resource[np.arange(len(paths.links)) + 2 * owner + 1] = paths.links
    return start, route_rows(resource, np.zeros(len(resource), dtype=np.int64))


def link_flits_per_cycle(socket: Socket) -> float:
    """Flits one link carries per NoC cycle."""
    return 1.0 / ps_to_cycles(socket.link_flit_ps, socket.noc_clock_hz)


def resource_flit_ps(socket: Socket) -> np.ndarray:
    """One flit's time on every resource of the run (numbered as by ``noc_resources``): the
    links, then the injection and the ejection channels at their widths."""
    n = socket.mesh.routers
    endpoints = np.array([socket.injection_flit_ps, socket.ejection_flit_ps], dtype=np.int64)
    return np.concatenate([socket.link_flits_ps, np.repeat(endpoints, [n, n])])


def resource_flits_per_cycle(socket: Socket) -> np.ndarray:
    """Flits every resource of the run (numbered as by ``noc_resources``) carries per NoC
    cycle."""
    return 1.0 / ps_to_cycles(resource_flit_ps(socket), socket.noc_clock_hz)


def resource_loads(
    socket: Socket,
    traffic: str | Pattern,
    hotspot_fraction: float = 0.2,
    hotspot: int | None = None,
) -> np.ndarray:
    """Expected flits per NoC cycle on every resource of the run (link slots, then injection
    ports, then ejection ports, as numbered by ``noc_resources``) when every router offers
    one flit per cycle of the pattern (multiply by the rate for the load at that rate)."""
    mesh = socket.mesh
    paths = socket.router_paths
    matrix = destination_matrix(mesh, as_pattern(traffic, hotspot_fraction, hotspot))
    per_entry = np.repeat(matrix.ravel(), np.diff(paths.start))
    links = np.bincount(paths.links, weights=per_entry, minlength=mesh.link_slots)
    return np.concatenate([links, matrix.sum(axis=1), matrix.sum(axis=0)])


def channel_bound(
    socket: Socket,
    traffic: str | Pattern,
    hotspot_fraction: float = 0.2,
    hotspot: int | None = None,
) -> float:
    """The highest rate (flits/node/cycle) at which no link, injection port or ejection port
    is offered more than it carries (B = link flits per cycle, unless a preset gives the
    channels other widths): the smallest capacity / load over the loaded resources. An
    injection port's load is 1 (its router's own rate), so the bound is at most its width."""
    loads = resource_loads(socket, traffic, hotspot_fraction, hotspot)
    loaded = loads > 0
    return float((resource_flits_per_cycle(socket)[loaded] / loads[loaded]).min())


def pattern_zero_load_cycles(socket: Socket, pattern: Pattern, packet_flits: int) -> float:
    """The mean zero-load latency (cycles) of the pattern's packets, every injecting router
    sending at the same rate: endpoints, path and tail."""
    matrix = destination_matrix(socket.mesh, pattern)
    path = float((matrix * socket.router_paths.latency_ps).sum() / matrix.sum())
    tail = (packet_flits - 1) * socket.flit_spacing_ps
    return ps_to_cycles(socket.endpoint_latency_ps + path + tail, socket.noc_clock_hz)


def uniform_bound(mesh: Mesh, link_flits: float) -> float:
    """Closed form of ``channel_bound`` for uniform traffic and dimension-order routing.

    Of the N = W * H routers, the x-link from column c to c + 1 in one row carries the
    packets of the c + 1 routers of that row left of the cut to the (W - 1 - c) * H routers
    right of it: (c + 1) (W - 1 - c) H r / (N - 1) flits per cycle at rate r. The middle
    cut is the worst, floor(W/2) ceil(W/2) H r / (N - 1), so r <= B (N - 1) /
    (H floor(W/2) ceil(W/2)); for even W that is 4 B (N - 1) / (W N), about 4 B / W: the
    bisection bound (H links each way, half the traffic crossing). Likewise for y-links with
    W and H swapped; the smaller of the two binds (the x one when W >= H).
    """
    n = mesh.routers
    w, h = mesh.width, mesh.height
    bounds = [link_flits]
    if w > 1:
        bounds.append(link_flits * (n - 1) / (h * (w // 2) * ((w + 1) // 2)))
    if h > 1:
        bounds.append(link_flits * (n - 1) / (w * (h // 2) * ((h + 1) // 2)))
    return min(bounds)

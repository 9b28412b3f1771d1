"""Derived figures of a preset: totals, bisection, and zero-load hop statistics.

Hop statistics are over every pairing a baseline (locality-unaware) system makes equally
often: every CU with every port (the baseline hash spreads a CU's stores over all ports),
every port with every stack (and every stack with every CU), each CU weighted once.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from nunasim.hardware.preset import Preset
from nunasim.hardware.socket import Socket


@dataclass(frozen=True)
class HopStats:
    average: float
    worst: int
    best: int


@dataclass(frozen=True)
class PresetSummary:
    name: str
    source: str
    mesh_width: int
    mesh_height: int
    dies: int
    routers: int
    cus: int
    stacks: int
    ports: int
    sockets: int
    planes: int
    hbm_bandwidth: float  # bytes/s, all stacks
    port_bandwidth_total: float  # bytes/s per direction, all ports
    bisection_bandwidth: float  # bytes/s, both directions across the middle cut
    bisection_links: int  # directed links across the cut
    hop_ps: int
    nar_granularities: tuple[int, ...]
    cu_to_port: HopStats
    port_to_stack: HopStats
    cu_to_stack: HopStats

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _hop_stats(socket: Socket, a: np.ndarray, b: np.ndarray) -> HopStats:
    """Hops between every router of ``a`` and every router of ``b``."""
    distance = socket.router_paths.hops[np.ix_(a, b)]
    return HopStats(float(distance.mean()), int(distance.max()), int(distance.min()))


def summarise(preset: Preset) -> PresetSummary:
    socket, pod = preset.socket, preset.pod
    cus, ports, stacks = socket.router_of_cu, socket.port_routers, socket.stack_routers
    links = socket.mesh.bisection_links()
    return PresetSummary(
        name=preset.name,
        source=preset.source,
        mesh_width=socket.mesh.width,
        mesh_height=socket.mesh.height,
        dies=len(socket.dies),
        routers=socket.mesh.routers,
        cus=socket.cus,
        stacks=len(socket.stacks),
        ports=len(socket.ports),
        sockets=pod.sockets,
        planes=pod.planes,
        hbm_bandwidth=sum(s.bandwidth for s in socket.stacks),
        port_bandwidth_total=len(socket.ports) * pod.port_bandwidth,
        bisection_bandwidth=links * socket.link_bandwidth,
        bisection_links=links,
        hop_ps=socket.hop_ps,
        nar_granularities=socket.valid_granularities,
        cu_to_port=_hop_stats(socket, cus, ports),
        port_to_stack=_hop_stats(socket, ports, stacks),
        cu_to_stack=_hop_stats(socket, cus, stacks),
    )

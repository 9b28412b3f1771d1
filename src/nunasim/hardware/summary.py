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


@dataclass(frozen=True)
class TransferSpread:
    """Zero-load times (ps) of the paper's Fig. 1 transfer over every place it can run: a CU
    reads a line from a stack of its own GPU (there and back), then stores it through an
    egress port to a stack of another GPU (at the ingress port of the same router); over
    every CU router, local stack, port router and remote stack. ``noc_*`` is the transfer's
    mesh part, ``total_*`` the whole transfer (the CU's L1 latency, both stack accesses, the
    port and the switch plane added)."""

    noc_best_ps: float
    noc_mean_ps: float
    noc_worst_ps: float
    total_best_ps: float
    total_mean_ps: float
    total_worst_ps: float
    # The remote store's own mesh paths (CU to port, port to remote stack) at their worst.
    store_noc_worst_ps: float

    def ratios(self) -> dict[str, float]:
        """Section 1's ratios: the worst and the mean over the best, whole and NoC part."""
        return {
            "transfer worst/best": self.total_worst_ps / self.total_best_ps,
            "transfer mean/best": self.total_mean_ps / self.total_best_ps,
            "NoC worst/best": self.noc_worst_ps / self.noc_best_ps,
            "NoC mean/best": self.noc_mean_ps / self.noc_best_ps,
        }


def transfer_spread(preset: Preset) -> TransferSpread:
    """The zero-load spread of Fig. 1's transfer on ``preset`` (``TransferSpread``). Every
    combination is weighted once, as a baseline system makes them equally often; the stack
    latency is the first stack's (a preset's stacks share one)."""
    pod, socket = preset.pod, preset.socket
    latency = socket.router_paths.latency_ps.astype(float)
    cus = np.unique(socket.router_of_cu)
    stacks, ports = socket.stack_routers, np.unique(socket.port_routers)
    read = 2 * latency[np.ix_(cus, stacks)]  # [CU router, local stack]
    out = latency[np.ix_(cus, ports)]  # [CU router, port router]
    land = latency[np.ix_(ports, stacks)]  # [port router, remote stack]
    noc = read[:, :, None, None] + out[:, None, :, None] + land[None, None, :, :]
    memory = socket.stacks[0].latency_ps
    # The read's own stack access and L1 crossing, then the store's fixed terms (no NoC).
    fixed = socket.l1_latency_ps + memory + pod.store_trip(0, memory).total_ps
    return TransferSpread(
        noc_best_ps=float(noc.min()),
        noc_mean_ps=float(noc.mean()),
        noc_worst_ps=float(noc.max()),
        total_best_ps=float(noc.min() + fixed),
        total_mean_ps=float(noc.mean() + fixed),
        total_worst_ps=float(noc.max() + fixed),
        store_noc_worst_ps=float((out[:, :, None] + land[None, :, :]).max()),
    )

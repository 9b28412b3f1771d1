"""The packet engine's resources: every FIFO server a flit can cross, numbered in one flat
range, with its occupancy (how long a flit holds it) and latency.

The numbering runs kind by kind in ``KINDS`` order and, within a kind, GPU by GPU: every
mesh link slot of each GPU (a link's id on its socket is its index), each GPU's egress
ports, its plane outputs (the output of the plane of each port ordinal towards this GPU's
port), its HBM stacks, its routers' injection ports and its routers' ejection ports.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nunasim.engine.kernel.kinds import (
    EGRESS,
    EJECT,
    INJECT,
    KINDS,
    LINK,
    PLANE_OUT,
    STACK,
)
from nunasim.hardware import Pod
from nunasim.units import transfer_ps


@dataclass(frozen=True, eq=False)
class Resources:
    """Every resource's parameters, indexed by resource id."""

    occ: np.ndarray  # ps a flit holds the resource
    lat: np.ndarray  # ps from the start of service to the next route entry
    kind: np.ndarray  # one of KINDS
    gpu: np.ndarray
    index: np.ndarray  # link id, port number, stack number or router on that GPU
    vcs: np.ndarray  # virtual channels downstream under credit flow control, 0: none
    credit_ps: np.ndarray  # a credit's way back
    buf_flits: np.ndarray  # flits per VC of the buffer downstream, 0 where no flow control
    tail_credit: bool  # a VC takes its next packet only once the last one's tail credit is back
    head_ps: int  # a packet's head's stages in a router that its other flits skip


@dataclass(frozen=True)
class ResourceNumbering:
    """Where each kind's resources start in the flat numbering, and how many each GPU has."""

    ngpus: int
    per_gpu: tuple[int, ...]  # by kind

    @property
    def first(self) -> tuple[int, ...]:
        """Per kind, the id of its first resource; then the total."""
        starts = np.cumsum([0, *(self.ngpus * n for n in self.per_gpu)])
        return tuple(int(s) for s in starts)

    @property
    def total(self) -> int:
        """How many resources."""
        return self.first[-1]

    def id(self, kind: int, gpu: np.ndarray, index: np.ndarray) -> np.ndarray:
        """The resource ids of resources ``index`` of ``kind`` on GPUs ``gpu``."""
        return self.first[kind] + gpu * self.per_gpu[kind] + index


def resource_numbering(pod: Pod, ngpus: int) -> ResourceNumbering:
    """The numbering of the resources of ``ngpus`` sockets of ``pod``."""
    socket = pod.socket
    ports, routers = len(socket.ports), socket.mesh.routers
    return ResourceNumbering(
        ngpus, (socket.mesh.link_slots, ports, ports, len(socket.stacks), routers, routers)
    )


def build_resources(pod: Pod, numbering: ResourceNumbering) -> Resources:
    """Occupancy and latency of every resource of ``numbering`` on ``pod``."""
    socket = pod.socket
    stack_flit = [transfer_ps(socket.line_bytes, s.bandwidth) for s in socket.stacks]
    # (occupancy, latency) of each resource of one GPU, by kind
    one_gpu = {
        LINK: (socket.link_flits_ps, socket.link_latencies_ps),
        EGRESS: (pod.port_flit_ps, pod.port_flit_ps),
        PLANE_OUT: (pod.port_flit_ps, 0),
        STACK: (stack_flit, [s.latency_ps for s in socket.stacks]),
        INJECT: (socket.injection_flit_ps, socket.injection_latency_ps),
        EJECT: (socket.ejection_flit_ps, socket.ejection_latency_ps),
    }
    occ, lat, kind, gpu, index = [], [], [], [], []
    for k in KINDS:
        n = numbering.per_gpu[k]
        per_occ, per_lat = (np.broadcast_to(np.asarray(x, dtype=np.int64), n) for x in one_gpu[k])
        occ.append(np.tile(per_occ, numbering.ngpus))
        lat.append(np.tile(per_lat, numbering.ngpus))
        kind.append(np.full(n * numbering.ngpus, k, dtype=np.int8))
        gpu.append(np.repeat(np.arange(numbering.ngpus, dtype=np.int64), n))
        index.append(np.tile(np.arange(n, dtype=np.int64), numbering.ngpus))
    columns = [np.concatenate(column) for column in (occ, lat, kind, gpu, index)]
    # The links and the injection channels feed the routers' input buffers.
    buffered = np.isin(columns[2], (LINK, INJECT))
    vcs = np.where(buffered, socket.credit_vcs, 0)
    credit = np.where(columns[2] == LINK, socket.link_credit_ps, socket.injection_latency_ps)
    depth = socket.router.buffer_flits if socket.credit_vcs else 0
    return Resources(
        *columns,
        vcs,
        np.where(buffered, credit, 0),
        np.where(vcs > 0, depth, 0),
        socket.tail_credit,
        socket.head_ps,
    )

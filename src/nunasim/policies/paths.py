"""The on-chip paths of a placed plan's remote traffic, line by line, at zero load.

Every line a transfer stores (or a step loads from another GPU) leaves its source CU's
router for the egress port the line's destination address selects, crosses the plane of
that port's ordinal, enters the destination socket at the same port and travels to the
stack that holds the address.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nunasim.collectives.plan import Plan
from nunasim.mapping.placement import Placement


@dataclass(frozen=True, eq=False)
class RemoteLines:
    src_gpu: np.ndarray
    dst_gpu: np.ndarray
    src_router: np.ndarray  # router of the issuing CU
    port: np.ndarray  # egress port on the source = ingress port on the destination
    stack: np.ndarray  # destination stack

    def __len__(self) -> int:
        return len(self.port)


def remote_lines(plan: Plan, placement: Placement) -> RemoteLines:
    socket = placement.socket
    amap = placement.address_map
    src_gpu, dst_gpu, src_cu, addresses = [], [], [], []
    for transfer in plan.transfers:
        if transfer.dst is None or transfer.dst_gpu == transfer.src.gpu:
            continue
        lines = placement.line_addresses(
            transfer.dst_gpu, transfer.dst.buffer, transfer.dst.index, transfer.dst.count
        )
        cu = placement.gpus[transfer.src.gpu].tb_cu[transfer.src.tb]
        addresses.append(lines)
        src_gpu.append(np.full(len(lines), transfer.src.gpu))
        dst_gpu.append(np.full(len(lines), transfer.dst_gpu))
        src_cu.append(np.full(len(lines), cu))
    for sid, step in plan.steps():
        for remote in step.loads:
            if remote.gpu == sid.gpu:
                continue
            lines = placement.line_addresses(
                remote.gpu, remote.chunks.buffer, remote.chunks.index, remote.chunks.count
            )
            addresses.append(lines)
            src_gpu.append(np.full(len(lines), sid.gpu))
            dst_gpu.append(np.full(len(lines), remote.gpu))
            src_cu.append(np.full(len(lines), placement.gpus[sid.gpu].tb_cu[sid.tb]))
    if not addresses:
        empty = np.zeros(0, dtype=np.int64)
        return RemoteLines(empty, empty, empty, empty, empty)
    address = np.concatenate(addresses)
    cu_routers = np.array(socket.cu_routers, dtype=np.int64).repeat(socket.cus_per_router)
    return RemoteLines(
        src_gpu=np.concatenate(src_gpu),
        dst_gpu=np.concatenate(dst_gpu),
        src_router=cu_routers[np.concatenate(src_cu)],
        port=amap.ports_of(address),
        stack=amap.stacks_of(address),
    )


def hops_between(socket, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    width = socket.mesh.width
    return np.abs(a % width - b % width) + np.abs(a // width - b // width)

"""The on-chip legs of a placed plan's remote traffic, line by line, at zero load.

Every line a transfer stores (or a step loads from another GPU) leaves its CU's router for
the port its address hashes to, crosses the plane of that port's ordinal, enters the other
socket at the same port and travels to the stack that holds the address: two legs on the
meshes, CU to port and port to stack.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.collectives.plan import Plan
from nunasim.mapping.placement import Placement
from nunasim.mapping.resolve import ResolvedLines, remote_lines


class RemoteLegs(NamedTuple):
    """The remote loads and stores of a placed plan, and the length of their two legs."""

    lines: ResolvedLines
    cu_port_hops: np.ndarray
    port_stack_hops: np.ndarray
    cu_port_ps: np.ndarray  # zero-load latency of the first leg
    port_stack_ps: np.ndarray


def remote_legs(plan: Plan, placement: Placement) -> RemoteLegs:
    """The remote lines of ``plan`` under ``placement`` and the legs they travel."""
    socket = placement.socket
    lines = remote_lines(plan, placement)
    port = socket.port_routers[lines.port]
    stack = socket.stack_routers[lines.stack]
    table = socket.router_paths
    return RemoteLegs(
        lines,
        cu_port_hops=table.hops[lines.router, port],
        port_stack_hops=table.hops[port, stack],
        cu_port_ps=table.latency_ps[lines.router, port],
        port_stack_ps=table.latency_ps[port, stack],
    )

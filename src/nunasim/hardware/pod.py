"""A scale-up pod: identical sockets joined by a rail-optimised single-level Clos.

Plane ``p`` joins port ``p`` of every socket. A plane is non-blocking inside; traffic
contends at the sending port and at the plane's output towards the receiving port.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from nunasim.errors import ConfigError
from nunasim.hardware.socket import Socket
from nunasim.units import transfer_ps


class StoreTrip(NamedTuple):
    """A remote store's zero-load trip, term by term (ps), in the order it takes them
    (``Pod.store_trip``). The NoC and stack terms depend on where the store goes (and may
    be means over many stores, as in the granularity estimate); the others do not. Every
    use of the trip sums these fields, so a term added here reaches all of them."""

    l1_ps: int  # from the CU to its NoC
    noc_ps: int | float  # both mesh paths: CU's router to the port's, port's router to the stack's
    port_flit_ps: int  # one flit on the egress port
    plane_ps: int  # port to port through the switch plane
    stack_ps: int | float  # the stack's access

    @property
    def total_ps(self) -> int | float:
        """The whole trip, summed in the order taken (which fixes a float sum's rounding)."""
        return self.l1_ps + self.noc_ps + self.port_flit_ps + self.plane_ps + self.stack_ps

    @property
    def after_l1_ps(self) -> int | float:
        """The trip from its injection into the source NoC on (exact for integer terms)."""
        return self.total_ps - self.l1_ps


@dataclass(frozen=True)
class Pod:
    """``sockets`` identical sockets (GPUs) and the switch planes that join their ports."""

    socket: Socket
    sockets: int
    plane_latency_ps: int  # port to port through one switch plane
    port_bandwidth: float  # bytes/s per port per direction

    def __post_init__(self) -> None:
        if self.sockets < 1:
            raise ConfigError(f"must be at least 1; got {self.sockets}", where="pod.sockets")
        if self.plane_latency_ps < 0:
            raise ConfigError(
                f"must not be negative; got {self.plane_latency_ps} ps", where="pod.plane_latency"
            )
        if not self.port_bandwidth > 0:
            raise ConfigError(
                f"must be positive; got {self.port_bandwidth}", where="pod.port_bandwidth"
            )

    @property
    def planes(self) -> int:
        """Switch planes: one per port of a socket."""
        return len(self.socket.ports)

    @property
    def port_flit_ps(self) -> int:
        """Serialisation of one line (flit) on a port or a plane output."""
        return transfer_ps(self.socket.line_bytes, self.port_bandwidth)

    def store_trip(self, noc_ps: int | float, stack_ps: int | float) -> StoreTrip:
        """The terms of a remote store's zero-load trip whose two mesh paths take ``noc_ps``
        together and whose stack's access takes ``stack_ps``."""
        return StoreTrip(
            self.socket.l1_latency_ps, noc_ps, self.port_flit_ps, self.plane_latency_ps, stack_ps
        )

    def store_trip_at(self, cu_router: int, port: int, stack: int) -> StoreTrip:
        """The terms of the zero-load trip of a store from a CU at ``cu_router`` through
        egress port ``port`` to ``stack`` of another socket (the ingress port of the same
        ordinal)."""
        socket = self.socket
        via = socket.ports[port].router
        memory = socket.stacks[stack]
        noc = socket.path_latency_ps(cu_router, via) + socket.path_latency_ps(via, memory.router)
        return self.store_trip(noc, memory.latency_ps)

    def with_sockets(self, sockets: int) -> Pod:
        """This pod with ``sockets`` sockets."""
        return replace(self, sockets=sockets)

    def fit(self, gpus: int) -> Pod:
        """This pod, grown to ``gpus`` sockets if it has fewer: a pod's size is a default,
        and a plan on more GPUs runs on a larger pod of the same sockets and planes."""
        return self if self.sockets >= gpus else self.with_sockets(gpus)

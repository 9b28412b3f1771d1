"""A scale-up pod: identical sockets joined by a rail-optimised single-level Clos.

Plane ``p`` joins port ``p`` of every socket. A plane is non-blocking inside; traffic
contends at the sending port and at the plane's output towards the receiving port.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from nunasim.errors import ConfigError
from nunasim.hardware.socket import Socket
from nunasim.units import transfer_ps


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

    def with_sockets(self, sockets: int) -> Pod:
        """This pod with ``sockets`` sockets."""
        return replace(self, sockets=sockets)

    def fit(self, gpus: int) -> Pod:
        """This pod, grown to ``gpus`` sockets if it has fewer: a pod's size is a default,
        and a plan on more GPUs runs on a larger pod of the same sockets and planes."""
        return self if self.sockets >= gpus else self.with_sockets(gpus)

"""Layer 1: frozen descriptions of sockets and pods, and the queries derived from them."""

from nunasim.hardware.mesh import Direction, Mesh
from nunasim.hardware.pod import Pod, StoreTrip
from nunasim.hardware.preset import Preset
from nunasim.hardware.socket import Die, Port, Router, Socket, Stack

__all__ = [
    "Die",
    "Direction",
    "Mesh",
    "Pod",
    "Port",
    "Preset",
    "Router",
    "Socket",
    "Stack",
    "StoreTrip",
]

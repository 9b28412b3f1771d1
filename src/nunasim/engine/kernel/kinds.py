"""Message kinds and resource kinds, as the compiled loops and the result tables read them.

A message's kind is one of the mapping layer's access kinds (a local read, a remote load,
a local write, a remote store) or a flag. Resources are numbered kind by kind in ``KINDS``
order (``nunasim.engine.lowering.resources``), and ``RESOURCE_NAMES`` names each kind in
the result tables.
"""

from __future__ import annotations

from nunasim.mapping.access_kinds import LOAD, READ, STORE, WRITE

FLAG = 4  # a one-line store to the flag page of the threadblock it releases
MESSAGE_KINDS = (READ, LOAD, WRITE, STORE, FLAG)

LINK, EGRESS, PLANE_OUT, STACK, INJECT, EJECT = 0, 1, 2, 3, 4, 5
KINDS = (LINK, EGRESS, PLANE_OUT, STACK, INJECT, EJECT)
RESOURCE_NAMES = ("link", "port", "plane", "stack", "inject", "eject")

__all__ = [
    "EGRESS",
    "EJECT",
    "FLAG",
    "INJECT",
    "KINDS",
    "LINK",
    "LOAD",
    "MESSAGE_KINDS",
    "PLANE_OUT",
    "READ",
    "RESOURCE_NAMES",
    "STACK",
    "STORE",
    "WRITE",
]

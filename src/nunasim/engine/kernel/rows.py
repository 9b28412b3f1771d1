"""The packed rows a compiled loop reads: a resource's columns and a route entry's."""

from __future__ import annotations

import numpy as np

# Columns of a resource row: what one event touches sits together, not in six arrays.
FREE_AT = 0  # when the resource next becomes free (filled in by the run)
OCC = 1  # ps a flit holds it
LAT = 2  # ps from the start of service to the next route entry
KIND = 3  # LINK, EGRESS, ... : which timestamp of the message it stamps
FLITS = 4  # flits it served (filled in)
WAIT_MAX = 5  # longest wait of a flit for it (filled in)
# Credit flow control (0 VCS: none, the resource is an infinite FIFO): a message may start
# on the resource only while one of the VCS virtual channels of the input buffer it feeds
# is free; it holds that channel until it has left the buffer (it has started on its next
# resource and that one's occupancy has passed) and the credit has come back (CREDIT_PS).
VCS = 6
CREDIT_PS = 7
# Wormhole (0 BUF_FLITS: the buffer holds any packet whole): the buffer a flow-controlled
# resource feeds holds BUF_FLITS flits per VC, and the resource carries one in FLIT_PS. A
# packet longer than that cannot get its tail across the resource until its head has moved
# on from the buffer, so it keeps the VC it holds upstream until then (it spans two buffers).
BUF_FLITS = 8
FLIT_PS = 9
RES_FIELDS = 10

# Columns of a route row (one per route entry). Route entries are most of a run's memory
# and the loop reads one per event from far away: 32-bit entries make it 15-20 % faster on
# a 64-GPU run than 64-bit ones (the loop computes in 64 bits all the same).
ROUTE_RES = 0  # the resource
ROUTE_POST = 1  # pure delay after it (the plane's latency)
ROUTE_FIELDS = 2
ROUTE_DTYPE = np.int32
ROUTE_MAX = int(np.iinfo(ROUTE_DTYPE).max)


def check_route_values(largest_resource: int, largest_delay_ps: int) -> None:
    """Refuse resource ids or delays that a route entry (``ROUTE_DTYPE``) cannot hold."""
    if largest_resource > ROUTE_MAX or largest_delay_ps > ROUTE_MAX:
        raise ValueError(
            f"route entries hold resource ids and delays up to {ROUTE_MAX:,}; got resource "
            f"{largest_resource:,} and delay {largest_delay_ps:,} ps"
        )

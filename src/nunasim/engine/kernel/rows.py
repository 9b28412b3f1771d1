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
# Credit flow control (0 VCS: none, the resource is an infinite FIFO): the resource feeds an
# input buffer of VCS virtual channels of BUF_FLITS flits each, and carries one flit in
# FLIT_PS. A message starts on it only with a VC of that buffer that has credits for its
# flits (all BUF_FLITS of them with TAIL_CREDIT: the VC is empty); each flit's credit comes
# back CREDIT_PS after the flit has left the buffer.
VCS = 6
CREDIT_PS = 7
BUF_FLITS = 8
FLIT_PS = 9
TAIL_CREDIT = 10
# The router the buffer belongs to passes a packet's head through HEAD_PS of stages its
# other flits skip (route computation, VC allocation): a packet that waits in a VC behind
# another begins them only once the tail ahead has left, so it starts on its next resource
# HEAD_PS after that at the earliest.
HEAD_PS = 11
RES_FIELDS = 12

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

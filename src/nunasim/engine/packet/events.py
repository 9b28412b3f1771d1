"""The packet core's own event kinds, and what a message's route event means under credit
flow control.

The constants the core shares with the other loops live in ``nunasim.engine.kernel``. The
compiled loop (``nunasim.engine.packet.core``) freezes these, and the helpers of
``credits`` and ``steps`` it inlines, when it compiles, and numba's on-disk cache notices
a change to the loop's own file only: after changing one of these modules clear the caches
(``find src -name '*.nbi' -delete``).
"""

from __future__ import annotations

# What a message's next EV_ROUTE event means under credit flow control
PH_ARRIVE = 0  # it reaches its next buffer (or the end of its route)
PH_REQUEST = 1  # it is at the head of its buffer and asks for its next resource
PH_GRANTED = 2  # a returned credit gave it a VC of its next resource: it starts on it now

# event kinds, packed with their argument as arg << EV_BITS | kind
EV_ROUTE = 0
EV_ACK = 1
EV_COMPUTE = 2
EV_STEP = 3  # a step that only computes has finished
EV_CREDIT = 4  # credits of a virtual channel of a resource's downstream buffer are back
EV_OUTPUT = 5  # a resource that buffered messages wait for is free: serve the first
EV_RUN = 6  # the first event of a run of events due in order (see ``runs``)
EV_BITS = 3
EV_MASK = (1 << EV_BITS) - 1

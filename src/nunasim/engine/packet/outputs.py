"""What a packet-core run fills in: the timestamps of its steps and messages."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.engine.kernel.kinds import EGRESS, PLANE_OUT, STACK


class CoreOutputs(NamedTuple):
    """Timestamps a run fills in (ps; -1 where a stage does not apply or was not reached)."""

    step_begin: np.ndarray
    step_end: np.ndarray
    msg_issue: np.ndarray
    msg_port_in: np.ndarray  # arrival at an EGRESS resource
    msg_port_out: np.ndarray  # departure from it
    msg_dst_in: np.ndarray  # departure from a PLANE_OUT resource
    msg_stack_in: np.ndarray  # arrival at a STACK resource
    msg_done: np.ndarray  # end of the route

    @classmethod
    def unfilled(cls, steps: int, messages: int, stages: bool = True) -> CoreOutputs:
        """Every timestamp -1. Without ``stages`` the four stamps of a message's passage
        through a port, a plane and a stack are empty arrays, for a run that has no such
        resource (``run`` checks): a NoC run's 1.5 M packets leave 49 MB unwritten."""

        def filled(count: int) -> np.ndarray:
            return np.full(count, -1, dtype=np.int64)

        staged = messages if stages else 0
        return cls(
            filled(steps),
            filled(steps),
            filled(messages),
            *(filled(staged) for _ in range(4)),
            filled(messages),
        )


# The resource kinds whose passage a message's stage stamps record: a run without one of
# these arrays must not have the kinds it records.
_STAGE_KINDS = {
    "msg_port_in": EGRESS,
    "msg_port_out": EGRESS,
    "msg_dst_in": PLANE_OUT,
    "msg_stack_in": STACK,
}


def check_stages(outputs: CoreOutputs, kinds: np.ndarray, messages: int) -> None:
    """Refuse outputs that leave a stage's stamps out (an empty array) where a resource of
    ``kinds`` would stamp them: the compiled loop would write past the array's end."""
    for name, kind in _STAGE_KINDS.items():
        if len(getattr(outputs, name)) != messages and (kinds == kind).any():
            raise ValueError(f"{name} has no entry per message, and resources stamp it")

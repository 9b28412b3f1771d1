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
    def unfilled(cls, steps: int, messages: int, kept: frozenset[str] | None = None) -> CoreOutputs:
        """Every timestamp -1; with ``kept``, the stamps not named there are empty arrays,
        which the loop leaves alone. ``step_end`` and ``msg_done`` are always kept (the loop
        reads them); ``run`` refuses a run whose resources would stamp a stage left out. A
        NoC run keeps only those two: its 1.5 M packets leave 74 MB unwritten."""
        kept = frozenset(cls._fields) if kept is None else kept | ALWAYS_KEPT
        unknown = kept - set(cls._fields)
        if unknown:
            raise ValueError(f"no such output: {', '.join(sorted(unknown))}")
        sizes = {name: messages for name in cls._fields}
        sizes.update(step_begin=steps, step_end=steps)
        return cls(
            *(
                np.full(sizes[name] if name in kept else 0, -1, dtype=np.int64)
                for name in cls._fields
            )
        )


# The stamps every run writes: the loop reads both (a step's end, a message's arrival).
ALWAYS_KEPT = frozenset({"step_end", "msg_done"})
# The resource kinds whose passage a message's stage stamps record: a run without one of
# these arrays must not have the kinds it records.
_STAGE_KINDS = {
    "msg_port_in": EGRESS,
    "msg_port_out": EGRESS,
    "msg_dst_in": PLANE_OUT,
    "msg_stack_in": STACK,
}


def check_stages(outputs: CoreOutputs, kinds: np.ndarray, steps: int, messages: int) -> None:
    """Refuse outputs whose arrays are neither full nor left out (empty), and outputs that
    leave a stage's stamps out where a resource of ``kinds`` would stamp them: the compiled
    loop would write past an array's end."""
    for name in CoreOutputs._fields:
        size = len(getattr(outputs, name))
        full = steps if name.startswith("step_") else messages
        if size != full and (size != 0 or name in ALWAYS_KEPT):
            raise ValueError(f"{name} has {size} entries, not {full}")
    for name, kind in _STAGE_KINDS.items():
        if len(getattr(outputs, name)) != messages and (kinds == kind).any():
            raise ValueError(f"{name} has no entry per message, and resources stamp it")

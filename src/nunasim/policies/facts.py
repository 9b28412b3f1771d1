"""What the placement policies need to know about a plan, worked out once per plan object.

A placement's inputs that depend on the plan alone (every threadblock's access set, the
logical groups, each threadblock's largest step, the chunks each threadblock touches in
processing order) are the same for every NAR granularity ``auto`` tries, every size a
sweep runs and every configuration, so they are kept for as long as the plan object lives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from nunasim.collectives.access import AccessSet, access_sets
from nunasim.collectives.per_plan import PerPlan
from nunasim.collectives.plan import Plan, Protocol
from nunasim.mapping.placement import BUFFERS
from nunasim.policies.budget import step_protocol
from nunasim.policies.logical import logical_allocation

BUFFER_INDEX = {str(b): i for i, b in enumerate(BUFFERS)}


class Processing(NamedTuple):
    """Algorithm 1's processing order: threadblocks group by group (largest group first),
    and the chunks each touches, sorted (chunk id, buffer, owner), as flat columns."""

    gpu: np.ndarray  # per threadblock in order
    tb: np.ndarray
    group: np.ndarray  # its group's rank (0 = the largest)
    chunk_start: np.ndarray  # CSR over threadblocks in order
    chunk: np.ndarray
    buffer: np.ndarray  # index in BUFFERS
    owner: np.ndarray  # GPU whose memory holds the chunk


@dataclass(eq=False)
class PlanFacts:
    sets: dict[tuple[int, int], AccessSet]
    # per GPU, per threadblock, per protocol (``PROTOCOL_ORDER``): chunks its largest step
    # in that wire format moves
    largest: list[np.ndarray]
    _orders: dict[str, Processing] = field(default_factory=dict)
    _local: dict[str, np.ndarray] = field(default_factory=dict)

    def processing(self, grouping: str) -> Processing:
        """The processing order under ``grouping`` (``logical.py``)."""
        if grouping not in self._orders:
            members = [
                (m, rank)
                for rank, group in enumerate(logical_allocation(self.sets, grouping))
                for m in group.members
            ]
            per_tb = [sorted(self.sets[m].chunks) for m, _ in members]
            flat = [c for chunks in per_tb for c in chunks]
            self._orders[grouping] = Processing(
                gpu=np.array([m[0] for m, _ in members], dtype=np.int64),
                tb=np.array([m[1] for m, _ in members], dtype=np.int64),
                group=np.array([rank for _, rank in members], dtype=np.int64),
                chunk_start=np.cumsum([0, *(len(c) for c in per_tb)], dtype=np.int64),
                chunk=np.array([c[0] for c in flat], dtype=np.int64),
                buffer=np.array([BUFFER_INDEX[c[1]] for c in flat], dtype=np.int64),
                owner=np.array([c[2] for c in flat], dtype=np.int64),
            )
        return self._orders[grouping]

    def local_touches(self, grouping: str) -> np.ndarray:
        """Every chunk each threadblock reads or writes in its own GPU's memory, as rows
        (its place in ``processing(grouping)``'s order, owner, buffer index, chunk id): what
        the NUMA proxy weighs, the same for every granularity ``auto`` tries."""
        if grouping not in self._local:
            order = self.processing(grouping)
            members = zip(order.gpu.tolist(), order.tb.tolist(), strict=True)
            self._local[grouping] = np.array(
                [
                    (i, owner, BUFFER_INDEX[buffer], chunk_id)
                    for i, key in enumerate(members)
                    for chunk_id, buffer, owner in self.sets[key].local_reads
                    | self.sets[key].local_writes
                ],
                dtype=np.int64,
            ).reshape(-1, 4)
            self._local[grouping].flags.writeable = False  # shared by every placement
        return self._local[grouping]

    def demands(self, chunk_bytes: int, line_bytes: int, window: int) -> list[np.ndarray]:
        """Per GPU, each threadblock's CU demand (``budget.tb_demand``): the lines of its
        largest step in its wire format, capped at the window, at least one."""
        per_chunk = np.array([p.lines(chunk_bytes, line_bytes) for p in PROTOCOL_ORDER])
        return [
            np.maximum(1, np.minimum(window, (x * per_chunk).max(axis=1, initial=0)))
            for x in self.largest
        ]


# The wire formats, in the order ``PlanFacts.largest`` counts them.
PROTOCOL_ORDER = tuple(Protocol)

_FACTS: PerPlan[PlanFacts] = PerPlan()


def plan_facts(plan: Plan) -> PlanFacts:
    """The facts of ``plan``, worked out on first use."""
    return _FACTS.get(plan, _facts)


def _facts(plan: Plan) -> PlanFacts:
    index = {protocol: i for i, protocol in enumerate(PROTOCOL_ORDER)}
    largest = []
    for program in plan.gpus:
        counts = np.zeros((len(program.threadblocks), len(PROTOCOL_ORDER)), dtype=np.int64)
        for t, tb in enumerate(program.threadblocks):
            for step in tb.steps:
                q = index[step_protocol(plan, step)]
                counts[t, q] = max(counts[t, q], step.count)
        largest.append(counts)
    return PlanFacts(access_sets(plan), largest)

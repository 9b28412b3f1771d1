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
from nunasim.collectives.plan import Plan
from nunasim.mapping.placement import BUFFERS
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
    largest: list[np.ndarray]  # per GPU, per threadblock: chunks its largest step moves
    _orders: dict[str, Processing] = field(default_factory=dict)

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

    def demands(self, lines_per_chunk: int, window: int) -> list[np.ndarray]:
        """Per GPU, each threadblock's CU demand (``budget.tb_demand``): the lines of its
        largest step, capped at the window, at least one."""
        return [np.maximum(1, np.minimum(window, x * lines_per_chunk)) for x in self.largest]


_FACTS: PerPlan[PlanFacts] = PerPlan()


def plan_facts(plan: Plan) -> PlanFacts:
    """The facts of ``plan``, worked out on first use."""
    return _FACTS.get(plan, _facts)


def _facts(plan: Plan) -> PlanFacts:
    largest = [
        np.array(
            [max((s.count for s in tb.steps), default=0) for tb in p.threadblocks], dtype=np.int64
        )
        for p in plan.gpus
    ]
    return PlanFacts(access_sets(plan), largest)

"""Algorithm 1's resource budgets (R in the paper), in requests (lines).

- A CU's budget is its outstanding-request window. A threadblock's demand is the lines of
  its largest step (steps run one after another, so that is the most it can have in flight),
  capped at the window: a threadblock that moves more than a window's worth fills a CU.
- A stack's budget is its bandwidth-delay product in lines (bandwidth x access latency /
  line), the data it can have in flight before it saturates; a chunk's demand is its lines.

Choosing walks candidates in preference order and takes the first whose remaining budget
covers the demand. When none does, it takes the candidate with the most budget left (the
earliest among equals) and counts a *fallback*: budgets are exceeded only then.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from nunasim.collectives.plan import Plan
from nunasim.hardware import Socket


class Budget:
    def __init__(self, capacity: np.ndarray) -> None:
        self.capacity = capacity.astype(np.int64)
        self.used = np.zeros_like(self.capacity)
        self.fallbacks = 0

    def choose(self, candidates: Iterable[int], demand: int) -> int:
        order = np.fromiter(candidates, dtype=np.int64)
        left = self.capacity[order] - self.used[order]
        fits = np.nonzero(left >= demand)[0]
        if len(fits):
            pick = int(order[fits[0]])
        else:
            pick = int(order[int(np.argmax(left))])
            self.fallbacks += 1
        self.used[pick] += demand
        return pick


def cu_budget(socket: Socket) -> Budget:
    return Budget(np.full(socket.cus, socket.outstanding_requests))


def stack_budget(socket: Socket) -> Budget:
    per_stack = [
        max(1, math.floor(s.bandwidth * s.latency_ps / 1e12 / socket.line_bytes))
        for s in socket.stacks
    ]
    return Budget(np.array(per_stack))


def tb_demand(plan: Plan, gpu: int, tb: int, lines_per_chunk: int, window: int) -> int:
    steps = plan.gpus[gpu].threadblocks[tb].steps
    largest = max((step.count for step in steps), default=0)
    return max(1, min(window, largest * lines_per_chunk))

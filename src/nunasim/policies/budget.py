"""Algorithm 1's resource budgets (R in the paper), in requests (lines).

- A CU's budget is its outstanding-request window. A threadblock's demand is the lines of
  its largest step (steps run one after another, so that is the most it can have in flight),
  capped at the window: a threadblock that moves more than a window's worth fills a CU. A
  CU also holds at most the socket's ``threadblocks_per_cu`` threadblocks at once.
- A stack's budget is the bandwidth-delay product of its access path in lines: the data it
  can have in flight before it saturates. Everything a stack serves crosses one of its
  router's mesh links as well as the stack itself, and a link (833 GB/s on the paper's
  system) is slower than a stack (2.5 TB/s), so the path's bandwidth is the lesser of the
  two, times the stack's access latency. A chunk's demand is its lines.

Choosing walks candidates in preference order. For a CU it takes the first whose remaining
budget covers the demand and that has room for one more threadblock; when none does, the
candidate with room and the most budget left (the earliest among equals), counting a
*fallback*. For a stack, budgets are filled in *waves*: a placement's chunks do not all
move at once, so once every candidate stack has had its bandwidth-delay product, the next
wave starts, nearest first again. The result spreads a domain's data over the stacks
that back it in proportion to what each can serve, and keeps a small collective on the
nearest stacks. Chunks placed beyond the first wave are counted as stack fallbacks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from nunasim.collectives.plan import Plan
from nunasim.hardware import Socket
from nunasim.units import ps_to_s


class Budget:
    def __init__(self, capacity: np.ndarray, residents: int | None = None) -> None:
        self.capacity = capacity.astype(np.int64)
        self.used = np.zeros_like(self.capacity)
        self.count = np.zeros_like(self.capacity)
        self.residents = residents
        self.fallbacks = 0

    def choose(self, candidates: Iterable[int], demand: int) -> int:
        """The first candidate with room (CU budgets)."""
        order = np.fromiter(candidates, dtype=np.int64)
        if self.residents is not None:
            room = self.count[order] < self.residents
            if room.any():
                order = order[room]
        left = self.capacity[order] - self.used[order]
        fits = np.nonzero(left >= demand)[0]
        if len(fits):
            pick = int(order[fits[0]])
        else:
            pick = int(order[int(np.argmax(left))])
            self.fallbacks += 1
        self.used[pick] += demand
        self.count[pick] += 1
        return pick

    def fill(self, candidates: Iterable[int], demand: int) -> int:
        """The first candidate with room in the earliest wave any candidate has room in
        (stack budgets)."""
        order = np.fromiter(candidates, dtype=np.int64)
        waves = -(-(self.used[order] + demand) // self.capacity[order])  # ceil
        wave = int(waves.min())
        pick = int(order[np.nonzero(waves == wave)[0][0]])
        if wave > 1:
            self.fallbacks += 1
        self.used[pick] += demand
        self.count[pick] += 1
        return pick


def cu_budget(socket: Socket) -> Budget:
    return Budget(np.full(socket.cus, socket.outstanding_requests), socket.threadblocks_per_cu)


def stack_budget(socket: Socket) -> Budget:
    per_stack = [
        max(
            1,
            math.floor(
                ps_to_s(min(s.bandwidth, socket.link_bandwidth) * s.latency_ps) / socket.line_bytes
            ),
        )
        for s in socket.stacks
    ]
    return Budget(np.array(per_stack))


def tb_demand(plan: Plan, gpu: int, tb: int, lines_per_chunk: int, window: int) -> int:
    steps = plan.gpus[gpu].threadblocks[tb].steps
    largest = max((step.count for step in steps), default=0)
    return max(1, min(window, largest * lines_per_chunk))

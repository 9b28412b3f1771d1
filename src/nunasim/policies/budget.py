"""Algorithm 1's resource budgets (R in the paper), in requests (lines).

- A CU's budget is its outstanding-request window. A threadblock's demand is the lines of
  its largest step (steps run one after another, so that is the most it can have in flight),
  capped at the window: a threadblock that moves more than a window's worth fills a CU. A
  CU also holds at most the socket's ``threadblocks_per_cu`` threadblocks at once.
- The CUs of one router share its mesh links (all their data enters and leaves the NoC
  through them), so a router has a budget too: the bandwidth-delay product of one link
  over a memory access, the data its links carry while one access completes. Router
  budgets fill in waves like stack budgets (below): threadblocks go to the nearest routers
  until each has its link's worth in flight, and only then does a router take a second
  wave. A large collective's threadblocks therefore spread over more routers than a small
  one's, instead of sharing one router's links.
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


def bdp_lines(bandwidth: float, latency_ps: int, line_bytes: int) -> int:
    """Lines in flight at ``bandwidth`` over ``latency_ps`` (at least one)."""
    return max(1, math.floor(bandwidth * latency_ps / 1e12 / line_bytes))


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


class CuBudget(Budget):
    """CU budgets (window and residency) with the routers' link budgets on top."""

    def __init__(self, socket: Socket) -> None:
        super().__init__(
            np.full(socket.cus, socket.outstanding_requests), socket.threadblocks_per_cu
        )
        self.router_of = np.arange(len(socket.cu_routers)).repeat(socket.cus_per_router)
        access = min(s.latency_ps for s in socket.stacks)
        self.router_capacity = bdp_lines(socket.link_bandwidth, access, socket.line_bytes)
        self.router_used = np.zeros(len(socket.cu_routers), dtype=np.int64)

    def choose(self, candidates: Iterable[int], demand: int) -> int:
        """The first candidate whose window covers the demand, that has room, and whose
        router has budget in the earliest wave any such candidate's router has."""
        order = np.fromiter(candidates, dtype=np.int64)
        if self.residents is not None:
            room = self.count[order] < self.residents
            if room.any():
                order = order[room]
        fits = order[self.capacity[order] - self.used[order] >= demand]
        if len(fits):
            used = self.router_used[self.router_of[fits]]
            waves = -(-(used + demand) // self.router_capacity)
            pick = int(fits[np.nonzero(waves == waves.min())[0][0]])
        else:
            pick = int(order[int(np.argmax(self.capacity[order] - self.used[order]))])
            self.fallbacks += 1
        self.used[pick] += demand
        self.count[pick] += 1
        self.router_used[self.router_of[pick]] += demand
        return pick


def cu_budget(socket: Socket) -> CuBudget:
    return CuBudget(socket)


def stack_budget(socket: Socket) -> Budget:
    return Budget(
        np.array(
            [
                bdp_lines(min(s.bandwidth, socket.link_bandwidth), s.latency_ps, socket.line_bytes)
                for s in socket.stacks
            ]
        )
    )


def tb_demand(plan: Plan, gpu: int, tb: int, lines_per_chunk: int, window: int) -> int:
    steps = plan.gpus[gpu].threadblocks[tb].steps
    largest = max((step.count for step in steps), default=0)
    return max(1, min(window, largest * lines_per_chunk))

"""Algorithm 1's resource budgets (R in the paper), in requests (lines).

- A CU's budget is its outstanding-request window. A threadblock's demand is the lines of
  its largest step (steps run one after another, so that is the most it can have in flight),
  capped at the window: a threadblock that moves more than a window's worth fills a CU. A
  step's lines are its chunks' lines in the wire format it sends them in (``step_lines``):
  under LL a line carries half the data, so a step moves twice the lines it would under
  Simple. A CU also holds at most the socket's ``threadblocks_per_cu`` threadblocks at once.
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

from nunasim.collectives.plan import Plan, Protocol, Step
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


# A line every wire format fills with whole words, to compare their data per line by.
WORD_LINE = 128


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


def tb_demand(plan: Plan, gpu: int, tb: int, chunk_bytes: int, line_bytes: int, window: int) -> int:
    steps = plan.gpus[gpu].threadblocks[tb].steps
    largest = max((step_lines(plan, s, chunk_bytes, line_bytes) for s in steps), default=0)
    return max(1, min(window, largest))


def step_protocol(plan: Plan, step: Step) -> Protocol:
    """The wire format a step's data travels in: that of its data transfers (the one with
    the least data a line, if they differ), Simple when it sends none."""
    protocols = [plan.transfers[t].protocol for t in step.sends if plan.transfers[t].dst]
    return min(protocols, key=lambda p: p.data_bytes_per_line(WORD_LINE), default=Protocol.SIMPLE)


def step_lines(plan: Plan, step: Step, chunk_bytes: int, line_bytes: int) -> int:
    """The lines a step moves: its chunks in its wire format (``step_protocol``)."""
    return step.count * step_protocol(plan, step).lines(chunk_bytes, line_bytes)

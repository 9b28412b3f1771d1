"""Every line a placed plan moves, resolved to flat columns: the CU that moves it, the
memory that holds it (GPU, stack, line address) and the port it crosses sockets by.

Lines are the data's own lines: a chunk of an access moves as ``lines_per_chunk`` lines,
the i-th holding byte ``offset(chunk) + i * line``, whatever its wire format (a wire line
lands on the line holding its first data byte, so its memory is one of these). A fetch
moves a line from the memory to the CU, a delivery from the CU to the memory; a remote
load or store crosses sockets by the port its address hashes to, the same port ordinal on
both sockets.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.collectives.plan import Plan
from nunasim.mapping.accesses import LOAD, STORE, AccessTable, plan_accesses
from nunasim.mapping.placement import Placement


class ResolvedLines(NamedTuple):
    """One row per line of every access, accesses in ``AccessTable`` order, each access's
    lines chunk by chunk."""

    access: np.ndarray  # its row in the AccessTable
    kind: np.ndarray  # READ, LOAD, WRITE or STORE
    gpu: np.ndarray  # GPU of the CU that moves it
    cu: np.ndarray  # that CU, numbered on its GPU
    router: np.ndarray  # that CU's router
    memory_gpu: np.ndarray  # GPU whose memory holds the line
    address: np.ndarray  # its physical line address there
    stack: np.ndarray  # the stack that holds it
    port: np.ndarray  # the port a load or store crosses sockets by; -1 for local accesses

    @property
    def size(self) -> int:
        """How many lines."""
        return len(self.address)

    def select(self, rows: np.ndarray) -> ResolvedLines:
        """The lines ``rows`` picks (a mask or row numbers)."""
        return ResolvedLines(*(column[rows] for column in self))

    def remote(self) -> ResolvedLines:
        """The loads and stores that cross to another GPU."""
        crossing = (self.kind == LOAD) | (self.kind == STORE)
        return self.select(crossing & (self.memory_gpu != self.gpu))


def ragged_arange(counts: np.ndarray) -> np.ndarray:
    """``0 .. n - 1`` for every ``n`` of ``counts``, end to end."""
    counts = np.asarray(counts, dtype=np.int64)
    ends = np.cumsum(counts)
    return np.arange(ends[-1] if len(ends) else 0) - np.repeat(ends - counts, counts)


def resolve(plan: Plan, placement: Placement, accesses: AccessTable | None = None) -> ResolvedLines:
    """The lines of every access of ``plan`` (``plan_accesses`` unless given) under
    ``placement``."""
    accesses = plan_accesses(plan) if accesses is None else accesses
    of_chunk = np.repeat(np.arange(len(accesses.kind)), accesses.count)
    chunk = accesses.chunk[of_chunk] + ragged_arange(accesses.count)
    address = placement.chunk_lines(
        accesses.memory_gpu[of_chunk], accesses.buffer[of_chunk], chunk
    ).ravel()
    access = np.repeat(of_chunk, placement.lines_per_chunk)
    kind, gpu = accesses.kind[access], accesses.gpu[access]
    cu = placement.cus_of(accesses.gpu, accesses.tb)[access]
    crossing = (kind == LOAD) | (kind == STORE)
    port = np.full(len(address), -1, dtype=np.int64)
    amap = placement.address_map
    port[crossing] = amap.ports_of(address[crossing])
    return ResolvedLines(
        access=access,
        kind=kind,
        gpu=gpu,
        cu=cu,
        router=placement.socket.router_of_cu[cu],
        memory_gpu=accesses.memory_gpu[access],
        address=address,
        stack=amap.stacks_of(address),
        port=port,
    )

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
        return self.select(crossing(self.kind, self.gpu, self.memory_gpu))


def crossing(kind: np.ndarray, gpu: np.ndarray, memory_gpu: np.ndarray) -> np.ndarray:
    """True for the loads and stores that cross to another GPU."""
    return ((kind == LOAD) | (kind == STORE)) & (memory_gpu != gpu)


def remote_lines(
    plan: Plan, placement: Placement, lines_per_chunk: int | None = None
) -> ResolvedLines:
    """``resolve(plan, placement).remote()``, resolving the remote accesses only (of each
    chunk its first ``lines_per_chunk`` lines, when given)."""
    accesses = plan_accesses(plan)
    rows = np.nonzero(crossing(accesses.kind, accesses.gpu, accesses.memory_gpu))[0]
    return resolve(plan, placement, accesses, rows, lines_per_chunk)


def remote_chunks(plan: Plan) -> int:
    """How many chunks the remote accesses of ``plan`` move, counted without resolving."""
    accesses = plan_accesses(plan)
    rows = crossing(accesses.kind, accesses.gpu, accesses.memory_gpu)
    return int(accesses.count[rows].sum())


def ragged_arange(counts: np.ndarray) -> np.ndarray:
    """``0 .. n - 1`` for every ``n`` of ``counts``, end to end."""
    counts = np.asarray(counts, dtype=np.int64)
    ends = np.cumsum(counts)
    return np.arange(ends[-1] if len(ends) else 0) - np.repeat(ends - counts, counts)


def resolve(
    plan: Plan,
    placement: Placement,
    accesses: AccessTable | None = None,
    rows: np.ndarray | None = None,
    lines_per_chunk: int | None = None,
) -> ResolvedLines:
    """The lines of every access of ``plan`` (``plan_accesses`` unless given) under
    ``placement``, or of the accesses ``rows`` (row numbers, increasing) only; with
    ``lines_per_chunk``, of each chunk its first lines only."""
    accesses = plan_accesses(plan) if accesses is None else accesses
    rows = np.arange(len(accesses.kind)) if rows is None else rows
    of_chunk = np.repeat(rows, accesses.count[rows])
    chunk = accesses.chunk[of_chunk] + ragged_arange(accesses.count[rows])
    lines = placement.chunk_lines(
        accesses.memory_gpu[of_chunk], accesses.buffer[of_chunk], chunk, lines_per_chunk
    )
    address = lines.ravel()
    access = np.repeat(of_chunk, lines.shape[1])
    kind, gpu = accesses.kind[access], accesses.gpu[access]
    cu = placement.cus_of(accesses.gpu, accesses.tb)[access]
    leaves = (kind == LOAD) | (kind == STORE)
    port = np.full(len(address), -1, dtype=np.int64)
    amap = placement.address_map
    port[leaves] = amap.ports_of(address[leaves])
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

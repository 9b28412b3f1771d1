"""Algorithm 1's physical placement as one compiled pass over flat arrays.

The decisions are sequential (each threadblock's CU and each chunk's stack depend on the
budgets every earlier decision charged), so they cannot be vectorised; they are the loops
of ``Budget.choose`` and ``Budget.fill`` (``budget.py``, whose rules they follow exactly),
compiled, over threadblocks in processing order. Everything that does not depend on the
budgets (candidate orders, demands, which pages a chunk covers) is computed beforehand with
numpy, so the pass costs a few operations per candidate examined.

Its inputs come in four bundles, built once in Python (a compiled kernel takes a dozen
arguments at most):

- ``Threadblocks``, in processing order: their GPU, their row of ``CuChoices.orders``,
  their demand; ``cu`` receives each one's choice;
- ``CuChoices``: rows of candidate CUs in preference order (each row every CU), and the
  CUs' budgets, which the pass charges;
- ``ChunkPages``, the chunks of each threadblock (CSR ``start`` over threadblocks): the
  owning GPU, the first and last page (indices into the flat ``page_region``), and whether
  its stack is chosen near the domain's ports rather than near the threadblock's CU;
- ``StackChoices``: candidate stacks in preference order, ``lengths`` of them in each
  row: row ``d * routers + r`` by distance from router ``r`` among the stacks of domain row
  ``d``, row ``domains * routers + d`` by distance from that domain's ports; ``region_of``
  [domain row, stack]: the region a page of that stack takes; and the stacks' budgets.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.jit import jit


@jit(inline=True)
def choose_cu(
    order: np.ndarray,
    capacity: np.ndarray,
    used: np.ndarray,
    count: np.ndarray,
    residents: int,
    demand: int,
) -> tuple[int, bool]:
    """``Budget.choose``: the first candidate with room for the demand among those with
    room for one more threadblock (all, if none has); else the one with most budget left.
    Returns the CU and whether it was a fallback."""
    any_room = False
    for c in order:
        if count[c] < residents:
            any_room = True
            break
    best, best_left = -1, 0
    for c in order:
        if any_room and count[c] >= residents:
            continue
        left = capacity[c] - used[c]
        if left >= demand:
            return c, False
        if best < 0 or left > best_left:
            best, best_left = c, left
    return best, True


@jit(inline=True)
def fill_stack(
    order: np.ndarray, capacity: np.ndarray, used: np.ndarray, demand: int
) -> tuple[int, bool]:
    """``Budget.fill``: the first candidate in the earliest wave any candidate has room in.
    Returns the stack and whether it is beyond the first wave (a fallback)."""
    pick, wave = -1, 0
    for s in order:
        w = -(-(used[s] + demand) // capacity[s])
        if pick < 0 or w < wave:
            pick, wave = s, w
    return pick, wave > 1


class Threadblocks(NamedTuple):
    """The threadblocks to place, in processing order."""

    gpu: np.ndarray
    row: np.ndarray  # their row of ``CuChoices.orders`` (their domain row, for stacks)
    demand: np.ndarray
    cu: np.ndarray  # receives each one's CU


class CuChoices(NamedTuple):
    """Where a threadblock may go, and the CUs' budgets (``Budget.choose``)."""

    orders: np.ndarray  # rows of candidate CUs in preference order
    capacity: np.ndarray  # per CU
    used: np.ndarray  # [GPU, CU]: charged
    count: np.ndarray  # [GPU, CU]: threadblocks, charged
    residents: int  # threadblocks a CU holds at most
    router: np.ndarray  # per CU: its router


class ChunkPages(NamedTuple):
    """The chunks each threadblock places (CSR ``start`` over threadblocks)."""

    start: np.ndarray
    owner: np.ndarray  # the GPU whose memory holds it
    first_page: np.ndarray  # indices into the flat ``page_region``
    last_page: np.ndarray
    near_ports: np.ndarray  # its stack near the domain's ports, not near the CU
    demand: int  # what a chunk charges its stack's budget


class StackChoices(NamedTuple):
    """Where a chunk's pages may go, and the stacks' budgets (``Budget.fill``)."""

    routers: int  # routers of a socket
    orders: np.ndarray  # rows of candidate stacks in preference order (see the module)
    lengths: np.ndarray  # candidates in each row
    capacity: np.ndarray  # per stack
    used: np.ndarray  # [GPU, stack]: charged
    region_of: np.ndarray  # [domain row, stack]: the region its pages take


@jit
def assign_threadblocks(
    threadblocks: Threadblocks,
    cus: CuChoices,
    chunks: ChunkPages,
    stacks: StackChoices,
    page_region: np.ndarray,
) -> tuple[int, int]:
    """Every threadblock's CU, then its chunks' stacks (when ``chunks`` lists any), in
    order; fills ``threadblocks.cu``, the budgets and ``page_region``. Returns the CU and
    stack fallbacks."""
    tbs, routers = threadblocks, stacks.routers
    cu_fallbacks, stack_fallbacks = 0, 0
    for i in range(len(tbs.gpu)):
        g, row = tbs.gpu[i], tbs.row[i]
        cu, fell = choose_cu(
            cus.orders[row], cus.capacity, cus.used[g], cus.count[g], cus.residents, tbs.demand[i]
        )
        cu_fallbacks += fell
        cus.used[g, cu] += tbs.demand[i]
        cus.count[g, cu] += 1
        tbs.cu[i] = cu
        for j in range(chunks.start[i], chunks.start[i + 1]):
            first, last = chunks.first_page[j], chunks.last_page[j]
            open_pages = False
            for p in range(first, last + 1):
                if page_region[p] < 0:
                    open_pages = True
                    break
            if not open_pages:
                continue
            owner = chunks.owner[j]
            if chunks.near_ports[j]:
                candidates = len(stacks.region_of) * routers + row
            else:
                candidates = row * routers + cus.router[cu]
            order = stacks.orders[candidates, : stacks.lengths[candidates]]
            stack, beyond = fill_stack(order, stacks.capacity, stacks.used[owner], chunks.demand)
            stack_fallbacks += beyond
            stacks.used[owner, stack] += chunks.demand
            region = stacks.region_of[row, stack]
            for p in range(first, last + 1):
                if page_region[p] < 0:
                    page_region[p] = region
    return cu_fallbacks, stack_fallbacks


@jit
def place_flags(
    tb_cu: np.ndarray,
    tb_row: np.ndarray,
    cu_router: np.ndarray,
    routers: int,
    stack_orders: np.ndarray,
    stack_len: np.ndarray,
    stack_capacity: np.ndarray,
    stack_used: np.ndarray,
    region_of: np.ndarray,
    flag_region: np.ndarray,
) -> int:
    """One GPU's flag pages, threadblock by threadblock, each on the stack nearest its CU
    with budget (one line each); returns the stack fallbacks."""
    fallbacks = 0
    for tb in range(len(tb_cu)):
        row = tb_row[tb]
        stacks = row * routers + cu_router[tb_cu[tb]]
        order = stack_orders[stacks, : stack_len[stacks]]
        stack, beyond = fill_stack(order, stack_capacity, stack_used, 1)
        fallbacks += beyond
        stack_used[stack] += 1
        flag_region[tb] = region_of[row, stack]
    return fallbacks

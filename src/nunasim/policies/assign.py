"""Algorithm 1's physical placement as one compiled pass over flat arrays.

The decisions are sequential (each threadblock's CU and each chunk's stack depend on the
budgets every earlier decision charged), so they cannot be vectorised; they are the loops
of ``Budget.choose`` and ``Budget.fill`` (``budget.py``, whose rules they follow exactly),
compiled, over threadblocks in processing order. Everything that does not depend on the
budgets (candidate orders, demands, which pages a chunk covers) is computed beforehand with
numpy, so the pass costs a few operations per candidate examined.

Arrays:

- threadblocks in processing order: ``tb_gpu``, ``tb_row`` (their row of ``cu_orders``),
  ``tb_demand``; ``tb_cu`` receives the choice;
- ``cu_orders``: rows of candidate CUs in preference order (each row every CU);
- the chunks of each threadblock (CSR ``chunk_start`` over threadblocks): the owning GPU,
  the first and last page (indices into the flat ``page_region``), and whether its stack
  is chosen near the domain's ports rather than near the threadblock's CU;
- ``stack_orders``: candidate stacks in preference order, ``stack_len`` of them in each
  row: row ``d * routers + r`` by distance from router ``r`` among the stacks of domain row
  ``d``, row ``domains * routers + d`` by distance from that domain's ports;
- ``region_of`` [domain row, stack]: the region a page of that stack takes.
"""

from __future__ import annotations

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


@jit
def place_threadblocks(
    tb_gpu: np.ndarray,
    tb_row: np.ndarray,
    tb_demand: np.ndarray,
    cu_orders: np.ndarray,
    cu_capacity: np.ndarray,
    cu_used: np.ndarray,
    cu_count: np.ndarray,
    residents: int,
    tb_cu: np.ndarray,
    cu_router: np.ndarray,
    chunk_start: np.ndarray,
    chunk_owner: np.ndarray,
    chunk_first_page: np.ndarray,
    chunk_last_page: np.ndarray,
    chunk_near_ports: np.ndarray,
    routers: int,
    stack_orders: np.ndarray,
    stack_len: np.ndarray,
    stack_capacity: np.ndarray,
    stack_used: np.ndarray,
    chunk_demand: int,
    region_of: np.ndarray,
    page_region: np.ndarray,
) -> tuple[int, int]:
    """Every threadblock's CU, then its chunks' stacks (when ``chunk_start`` lists any), in
    order; fills ``tb_cu``, the budgets and ``page_region``. Returns the CU and stack
    fallbacks."""
    cu_fallbacks, stack_fallbacks = 0, 0
    for i in range(len(tb_gpu)):
        g, row = tb_gpu[i], tb_row[i]
        cu, fell = choose_cu(
            cu_orders[row], cu_capacity, cu_used[g], cu_count[g], residents, tb_demand[i]
        )
        cu_fallbacks += fell
        cu_used[g, cu] += tb_demand[i]
        cu_count[g, cu] += 1
        tb_cu[i] = cu
        for j in range(chunk_start[i], chunk_start[i + 1]):
            first, last = chunk_first_page[j], chunk_last_page[j]
            open_pages = False
            for p in range(first, last + 1):
                if page_region[p] < 0:
                    open_pages = True
                    break
            if not open_pages:
                continue
            owner = chunk_owner[j]
            if chunk_near_ports[j]:
                stacks = len(region_of) * routers + row
            else:
                stacks = row * routers + cu_router[cu]
            order = stack_orders[stacks, : stack_len[stacks]]
            stack, beyond = fill_stack(order, stack_capacity, stack_used[owner], chunk_demand)
            stack_fallbacks += beyond
            stack_used[owner, stack] += chunk_demand
            region = region_of[row, stack]
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

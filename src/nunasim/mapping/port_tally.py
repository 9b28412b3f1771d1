"""Wire lines per port, added a span of ports at a time.

The port hash sends a run of consecutive lines to runs of consecutive ports of its
region (``port_runs.run_spans``), so the counting adds a weight to a span of ports rather
than to one port per line: per port through a difference array (``diff``, one slot more
than there are ports, summed into the per-port table once per range by ``flush``), and per
(port router, stack) at once, by the spans of consecutive ports that share a port router
(``router_runs``): a span of ports meets only a few of those.
"""

from __future__ import annotations

import numpy as np

from nunasim.jit import jit


def router_runs(port_router: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The maximal spans of consecutive ports with the same port router: where each span
    starts (and, last, the number of ports), its port router, and each port's span."""
    change = np.flatnonzero(np.diff(port_router)) + 1
    start = np.concatenate([[0], change, [len(port_router)]]).astype(np.int64)
    of_port = np.repeat(np.arange(len(start) - 1), np.diff(start)).astype(np.int64)
    return start, port_router[start[:-1]].astype(np.int64), of_port


@jit
def tally_cyclic(
    first,
    ports,
    start,
    length,
    weight,
    stack,
    stacks,
    diff,
    n_prs,
    run_start,
    run_router,
    run_of_port,
):
    """Add ``weight`` wire lines (of ``stack``, of ``stacks``) to each of ``length`` (at
    most ``ports``) consecutive ports of the region with ports ``first .. first + ports -
    1``, from its ``start``-th, wrapping to its first."""
    # one loop, not a helper per span: a call with arrays in a loop costs more than the span
    lo = first + start
    top = first + ports
    while length > 0:  # twice when the span wraps
        hi = min(lo + length, top)
        diff[lo] += weight
        diff[hi] -= weight
        j = run_of_port[lo]
        while run_start[j] < hi:  # run_start ends with the port count: the loop ends there
            span = min(hi, run_start[j + 1]) - max(lo, run_start[j])
            n_prs[run_router[j] * stacks + stack] += weight * span
            j += 1
        length -= hi - lo
        lo = first


@jit
def flush(diff, n_port):
    """Add the spans gathered in ``diff`` to ``n_port``, and clear ``diff``."""
    running = 0
    for p in range(n_port.shape[0]):
        running += diff[p]
        diff[p] = 0
        n_port[p] += running
    diff[n_port.shape[0]] = 0

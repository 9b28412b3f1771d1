"""The request window in whole round trips: a floor on when a delivery flow is done.

The demands (``demand``) make a CU's request window a resource by Little's law: ``window``
slots, each held for a request's zero-load round trip, let ``window`` requests through
per round trip, so a flow of ``n`` requests the window alone holds back drains in
``n / window`` round trips. But a CU issues its first ``window`` requests at once and each
later one only when an earlier one is back, so the last of ``n`` requests leaves
``ceil(n / window) - 1`` round trips after the first and is done a tail later: for ``n``
a little above ``window``, twice what the rate gives (a 4 MB All-to-All on 16 GPUs moves
977 lines a threadblock through 700 slots). The rate stays right on average; the floor
adds the round the last, partly filled window costs.

A fetch flow needs no such floor: its deliveries start when its last fetch is issued,
``ceil(n / window) - 1`` round trips in, which the rate never makes sooner.
"""

from __future__ import annotations

import numpy as np

from nunasim.engine.flow.demand import Demands
from nunasim.jit import scatter_at


def window_entries(demands: Demands, windows: range) -> tuple[np.ndarray, np.ndarray]:
    """Per entry of ``demands``: its flow, and whether its resource is a CU's request window
    (one of ``windows``)."""
    owner = np.repeat(np.arange(len(demands.flow_ops)), np.diff(demands.entry_start))
    return owner, (demands.entry_res >= windows.start) & (demands.entry_res < windows.stop)


def window_floor_ps(
    demands: Demands, fetches: np.ndarray, group: np.ndarray, windows: range, window: int
) -> np.ndarray:
    """Per flow: the earliest it can be done after it begins, as its CU's request window
    lets its requests through (0 for fetch flows). ``fetches`` and ``group`` are the
    accesses' (``AccessTable``); ``windows`` are the resources that are the CUs' windows,
    each of ``window`` slots. The floor gives the flow every slot of its CU: sharing them
    with other flows only makes it later."""
    flows = len(demands.flow_ops)
    requests = np.zeros(flows, dtype=np.int64)
    scatter_at(np.add, requests, 2 * group + 1, np.where(fetches, 0, demands.access_lines))
    owner, slotted = window_entries(demands, windows)
    slot_ps = np.zeros(flows)  # the flow's requests' round trips, summed
    scatter_at(
        np.add,
        slot_ps,
        owner[slotted],
        demands.entry_coef[slotted] * demands.flow_ops[owner[slotted]] * window,
    )
    trip = np.divide(slot_ps, requests, out=np.zeros(flows), where=requests > 0)
    rounds = np.maximum(-(-requests // window) - 1, 0)
    floor = np.where(requests > 0, demands.flow_tail_ps, 0) + np.ceil(rounds * trip)
    return floor.astype(np.int64)

"""Where a step's fetches and deliveries overlap, and how late a delivery flow's last line
lands: the flows ``loop`` runs, from the demands ``demand`` counted.

A CU issues in FIFO order: a step enqueues every fetch of its groups when it starts, and
a delivery only once its line is back. Its request window lets ``window`` requests out at
once (shared by the threadblocks resident on the CU). So:

- A step whose fetches all fit in its share of the window issues them at once, and its
  deliveries follow its fetches back, line by line: fetching and delivering overlap. Its
  delivery flows start once the first lines could be back (the mean zero-load fetch of its
  lines: the step's *delay*) and run beside its fetch flows; a fetch flow is done only once
  its last line is delivered too (its delivery flow's tail after it), and a delivery flow
  no sooner than its zero-load path (slowest fetch, then slowest delivery) after the step
  began.
- A longer step's deliveries wait behind its fetches in the CU's queue until the last has
  been issued: its fetches run as a phase of their own, then its deliveries.

A delivery flow is done at its drain plus the *mean* zero-load trip of its lines (delivery
and acknowledgement): the line issued last takes an ordinary route, not the slowest one.
Its floor (``rounds``) keeps it no sooner than its slowest line after it begins.

Measured against the packet engine at the threadblock counts the search picks for Fig. 9's
10 MB All-Gather (docs/engine.md, "At the counts the search picks"), the two rules took the
flow engine from 1.01-1.30 times the packet engine's completion to 0.89-1.08. The lower
bound (``FlowRun``) keeps the two-phase, slowest-line path.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nunasim.engine.flow.demand import Demands
from nunasim.engine.flow.rounds import window_entries
from nunasim.jit import scatter_at


class Overlap(NamedTuple):
    """The flows ``loop`` runs."""

    demands: Demands  # with each delivery flow's tail its lines' mean trip
    step_delay_ps: np.ndarray  # per step: from its fetches' start to its deliveries' (0: none,
    # the deliveries wait for the fetches)
    floor_ps: np.ndarray  # per flow: the earliest it is done after it begins


def mean_fetches(demands: Demands, fetches: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Per group: the mean zero-load trip of its fetched lines (0 for a group with none).
    ``fetches`` and ``group`` are the accesses' (``AccessTable``)."""
    groups = len(demands.flow_ops) // 2
    lines = np.bincount(group[fetches], weights=demands.access_lines[fetches], minlength=groups)
    route = np.bincount(group[fetches], weights=demands.access_route_ps[fetches], minlength=groups)
    return np.divide(route, lines, out=np.zeros(groups), where=lines > 0)


def mean_deliveries(demands: Demands, windows: range, window: int) -> np.ndarray:
    """Per delivery flow (``2 g + 1``): the mean zero-load trip of its lines, a delivery and
    its acknowledgement (0 for a flow with none). Its window entry is its lines' slot time
    per line over the ``window`` slots (``demand``)."""
    owner, slotted = window_entries(demands, windows)
    slotted &= owner % 2 == 1
    trips = np.zeros(len(demands.flow_ops))
    trips[owner[slotted]] = demands.entry_coef[slotted] * window
    return trips[1::2]


def overlap(
    demands: Demands,
    fetches: np.ndarray,
    group: np.ndarray,
    floor_ps: np.ndarray,
    step_tb: np.ndarray,
    tb_cu: np.ndarray,
    windows: range,
    window: int,
) -> Overlap:
    """The flows of ``demands`` as the CUs issue them. ``fetches`` and ``group`` are the
    accesses' (``AccessTable``), ``floor_ps`` each flow's window floor (``rounds``);
    ``step_tb`` each step's threadblock, ``tb_cu`` each threadblock's CU (over the pod);
    ``windows`` the CUs' window resources, of ``window`` slots each."""
    flows = len(demands.flow_ops)
    fetch = np.arange(0, flows, 2)
    deliver = fetch + 1
    ops = demands.flow_ops
    step = demands.flow_step[fetch]
    nsteps = len(step_tb)
    slots = window / np.bincount(tb_cu)[tb_cu[step_tb]]  # per step: its share of the window
    both = (ops[fetch] > 0) & (ops[deliver] > 0)
    overlapping = np.zeros(nsteps, dtype=bool)
    overlapping[step[both]] = True
    overlapping &= np.bincount(step, weights=ops[fetch], minlength=nsteps) <= slots
    side_by_side = both & overlapping[step]  # groups whose two flows run together

    delay = np.zeros(nsteps, dtype=np.int64)
    first = np.ceil(mean_fetches(demands, fetches, group)).astype(np.int64)
    scatter_at(np.maximum, delay, step[side_by_side], np.maximum(first[side_by_side], 1))

    tail = demands.flow_tail_ps.copy()
    trips = mean_deliveries(demands, windows, window)
    tail[deliver] = np.where(trips > 0, np.ceil(trips), tail[deliver]).astype(np.int64)
    floor = floor_ps.copy()
    slowest = demands.flow_tail_ps[fetch] + demands.flow_tail_ps[deliver] - delay[step]
    floor[deliver[side_by_side]] = np.maximum(floor[deliver[side_by_side]], slowest[side_by_side])
    return Overlap(demands._replace(flow_tail_ps=tail), delay, floor)

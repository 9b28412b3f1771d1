"""Running the packet core on a lowered scenario."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from nunasim.engine.kernel.rows import (
    BUF_FLITS,
    CREDIT_PS,
    FLIT_PS,
    FLITS,
    HEAD_PS,
    KIND,
    LAT,
    OCC,
    RES_FIELDS,
    ROUTE_DTYPE,
    ROUTE_FIELDS,
    ROUTE_POST,
    ROUTE_RES,
    TAIL_CREDIT,
    VCS,
    WAIT_MAX,
    check_route_values,
)
from nunasim.engine.packet.core import CoreInputs, CoreOutputs, run
from nunasim.engine.packet.shared_routes import SharedRoutes, share_routes

if TYPE_CHECKING:  # only named here: the NoC mode runs the core without lowering
    from nunasim.engine.lowering.lower import Lowered


@dataclass(frozen=True, eq=False)
class Trace:
    """Raw timestamps of one run (ps; -1 where a stage does not apply)."""

    lowered: Lowered
    step_begin: np.ndarray
    step_end: np.ndarray
    msg_issue: np.ndarray
    msg_port_in: np.ndarray
    msg_port_out: np.ndarray
    msg_dst_in: np.ndarray
    msg_stack_in: np.ndarray
    msg_done: np.ndarray
    res_busy: np.ndarray
    res_wait_max: np.ndarray
    res_flits: np.ndarray
    events: int
    wall_s: float


@dataclass(frozen=True, eq=False)
class CoreRun:
    """What one call of the core produced."""

    inputs: CoreInputs  # with the run's columns of ``res`` filled in
    outputs: CoreOutputs
    events: int
    wall_s: float
    cut: bool = False  # stopped once its clock passed ``inputs.stop_ps``, unfinished

    @property
    def res_flits(self) -> np.ndarray:
        return self.inputs.res[:, FLITS].copy()

    @property
    def res_busy(self) -> np.ndarray:
        """Time each resource was held: every flit holds it for its occupancy."""
        res = self.inputs.res
        return res[:, FLITS] * res[:, OCC]

    @property
    def res_wait_max(self) -> np.ndarray:
        return self.inputs.res[:, WAIT_MAX].copy()


def resource_rows(
    occ: np.ndarray,
    lat: np.ndarray,
    kind: np.ndarray,
    vcs: np.ndarray | int = 0,
    credit_ps: np.ndarray | int = 0,
    buf_flits: np.ndarray | int = 0,
    flit_ps: np.ndarray | int | None = None,
    tail_credit: bool = False,
    head_ps: int = 0,
) -> np.ndarray:
    """The core's resource table, its run columns zero; ``vcs`` 0: no flow control, else
    ``buf_flits`` (at least one) per VC; ``flit_ps`` None: a message is one flit."""
    rows = np.zeros((len(occ), RES_FIELDS), dtype=np.int64)
    rows[:, OCC] = occ
    rows[:, LAT] = lat
    rows[:, KIND] = kind
    rows[:, VCS] = vcs
    rows[:, CREDIT_PS] = credit_ps
    rows[:, BUF_FLITS] = buf_flits
    rows[:, FLIT_PS] = occ if flit_ps is None else flit_ps
    rows[:, TAIL_CREDIT] = tail_credit
    rows[:, HEAD_PS] = np.where(rows[:, VCS] > 0, head_ps, 0)
    if ((rows[:, VCS] > 0) & (rows[:, BUF_FLITS] < 1)).any():
        raise ValueError("a flow-controlled resource's buffer holds at least one flit per VC")
    return rows


def route_rows(resource: np.ndarray, post: np.ndarray) -> np.ndarray:
    """The core's route table: each entry's resource and the pure delay after it."""
    check_route_values(int(resource.max(initial=0)), int(post.max(initial=0)))
    rows = np.empty((len(resource), ROUTE_FIELDS), dtype=ROUTE_DTYPE)
    rows[:, ROUTE_RES] = resource
    rows[:, ROUTE_POST] = post
    return rows


def run_core(inputs: CoreInputs, kept: frozenset[str] | None = None) -> CoreRun:
    """Run ``inputs``; with ``kept``, only those timestamps of ``CoreOutputs`` (and a
    step's end and a message's arrival) are recorded, the others left empty."""
    outputs = CoreOutputs.unfilled(len(inputs.step_tb), len(inputs.msg_kind), kept)
    started = time.perf_counter()
    events, cut = run(inputs, outputs)
    return CoreRun(inputs, outputs, int(events), time.perf_counter() - started, bool(cut))


# The arrays of a lowered scenario the core reads as they are, under the same names.
_AS_LOWERED = (
    "tb_cu",
    "step_tb",
    "step_wait",
    "step_compute_ps",
    "succ_start",
    "succ",
    "lineop_start",
    "lineop_step",
    "lineop_compute_ps",
    "lineop_msgs",
    "flag_start",
    "flag_msg",
    "msg_lineop",
    "msg_cu",
    "msg_target",
    "arrival_lines",
    "release_start",
    "release",
    "msg_ack_ps",
    "msg_pre_ps",
    "window",
)


def core_inputs(lowered: Lowered, stop_ps: int = -1) -> CoreInputs:
    lo = lowered
    none = np.zeros(0, dtype=np.int64)
    routes = share_routes(lo.route_start, lo.route_table)
    if routes is None:  # a route of its own each, as lowering wrote them
        own = np.arange(lo.messages, dtype=np.int64)
        routes = SharedRoutes(own, lo.route_start, lo.route_table)
    return CoreInputs(
        **{name: getattr(lo, name) for name in _AS_LOWERED},
        res=resource_rows(
            lo.resources.occ,
            lo.resources.lat,
            lo.resources.kind,
            lo.resources.vcs,
            lo.resources.credit_ps,
            lo.resources.buf_flits,
            tail_credit=lo.resources.tail_credit,
            head_ps=lo.resources.head_ps,
        ),
        timed_step=none,  # a collective's steps start when they are ready
        timed_at=none,
        msg_kind=lo.msg_kind.astype(np.int64),
        msg_route=routes.msg_route,
        route_start=routes.start,
        route=routes.table,
        ncus=lo.ngpus * lo.cus_per_gpu,
        stop_step=-1,
        stop_ps=stop_ps,
    )


def simulate(lowered: Lowered, deadline_ps: int | None = None) -> Trace | None:
    """Run ``lowered`` to its end; with ``deadline_ps``, None once its clock has passed
    that time with a step unfinished: it would complete later. (A background GEMM's
    steps may outlast the collective, so a run with one ignores the deadline.)"""
    stop_ps = -1 if deadline_ps is None or lowered.step_background.any() else deadline_ps
    done = run_core(core_inputs(lowered, stop_ps))
    out = done.outputs
    unfinished = np.nonzero(out.step_end < 0)[0]
    if done.cut:
        return None
    if len(unfinished):
        raise RuntimeError(
            f"the simulation stopped with {len(unfinished)} steps unfinished (first: step "
            f"{unfinished[0]}); the plan deadlocks in this model"
        )
    return Trace(
        lowered=lowered,
        events=done.events,
        wall_s=done.wall_s,
        res_busy=done.res_busy,
        res_flits=done.res_flits,
        res_wait_max=done.res_wait_max,
        **out._asdict(),
    )

"""Running the packet core on a lowered scenario."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from nunasim.engine.lower import Lowered
from nunasim.engine.packet.core import (
    FLITS,
    KIND,
    LAT,
    OCC,
    RES_FIELDS,
    ROUTE_FIELDS,
    ROUTE_POST,
    ROUTE_RES,
    WAIT_MAX,
    CoreInputs,
    CoreOutputs,
    run,
)


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


def resource_rows(occ: np.ndarray, lat: np.ndarray, kind: np.ndarray) -> np.ndarray:
    """The core's resource table, its run columns zero."""
    rows = np.zeros((len(occ), RES_FIELDS), dtype=np.int64)
    rows[:, OCC] = occ
    rows[:, LAT] = lat
    rows[:, KIND] = kind
    return rows


def route_rows(resource: np.ndarray, post: np.ndarray) -> np.ndarray:
    """The core's route table: each entry's resource and the pure delay after it."""
    rows = np.empty((len(resource), ROUTE_FIELDS), dtype=np.int64)
    rows[:, ROUTE_RES] = resource
    rows[:, ROUTE_POST] = post
    return rows


def run_core(inputs: CoreInputs) -> CoreRun:
    outputs = CoreOutputs.unfilled(len(inputs.step_tb), len(inputs.msg_kind))
    started = time.perf_counter()
    events = run(inputs, outputs)
    return CoreRun(inputs, outputs, int(events), time.perf_counter() - started)


def core_inputs(lowered: Lowered) -> CoreInputs:
    lo = lowered
    return CoreInputs(
        res=resource_rows(lo.resources.occ, lo.resources.lat, lo.resources.kind),
        tb_cu=lo.tb_cu,
        step_tb=lo.step_tb,
        step_wait=lo.step_wait,
        step_compute=lo.step_compute_ps,
        timed_step=np.zeros(0, dtype=np.int64),  # a collective's steps start when ready
        timed_at=np.zeros(0, dtype=np.int64),
        succ_start=lo.succ_start,
        succ=lo.succ,
        lineop_start=lo.lineop_start,
        lineop_step=lo.lineop_step,
        lineop_compute=lo.lineop_compute_ps,
        lineop_msgs=lo.lineop_msgs,
        flag_start=lo.flag_start,
        flag_msg=lo.flag_msg,
        msg_kind=lo.msg_kind.astype(np.int64),
        msg_lineop=lo.msg_lineop,
        msg_cu=lo.msg_cu,
        msg_target=lo.msg_target,
        arrival_lines=lo.arrival_lines,
        release_start=lo.release_start,
        release=lo.release,
        msg_ack=lo.msg_ack_ps,
        msg_pre=lo.msg_pre_ps,
        msg_route=np.arange(lo.messages, dtype=np.int64),  # a route of its own each
        route_start=lo.route_start,
        route=route_rows(lo.route, lo.route_post_ps),
        ncus=lo.ngpus * lo.cus_per_gpu,
        window=lo.window,
        stop_step=-1,
    )


def simulate(lowered: Lowered) -> Trace:
    done = run_core(core_inputs(lowered))
    out = done.outputs
    unfinished = np.nonzero(out.step_end < 0)[0]
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

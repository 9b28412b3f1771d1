"""Running the packet engine on a lowered scenario."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from nunasim.engine.lower import Lowered
from nunasim.engine.packet.core import run


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


def simulate(lowered: Lowered) -> Trace:
    lo = lowered
    steps, msgs, res = lo.steps, lo.messages, len(lo.resources.occ)

    def filled(count: int) -> np.ndarray:
        return np.full(count, -1, dtype=np.int64)

    out = {
        "step_begin": filled(steps),
        "step_end": filled(steps),
        "msg_issue": filled(msgs),
        "msg_port_in": filled(msgs),
        "msg_port_out": filled(msgs),
        "msg_dst_in": filled(msgs),
        "msg_stack_in": filled(msgs),
        "msg_done": filled(msgs),
    }
    rows = np.zeros((res, 7), dtype=np.int64)
    rows[:, 1] = lo.resources.occ
    rows[:, 2] = lo.resources.lat
    rows[:, 3] = lo.resources.kind
    started = time.perf_counter()
    events = run(
        rows,
        lo.tb_cu,
        lo.step_tb,
        lo.step_wait,
        lo.step_compute_ps,
        lo.succ_start,
        lo.succ,
        lo.lineop_start,
        lo.lineop_step,
        lo.lineop_compute_ps,
        lo.lineop_msgs,
        lo.flag_start,
        lo.flag_msg,
        lo.msg_kind.astype(np.int64),
        lo.msg_lineop,
        lo.msg_cu,
        lo.msg_target,
        lo.arrival_lines,
        lo.release_start,
        lo.release,
        lo.msg_ack_ps,
        lo.msg_pre_ps,
        lo.route_start,
        np.stack([lo.route, lo.route_post_ps], axis=1),
        lo.ngpus * lo.cus_per_gpu,
        lo.window,
        out["step_begin"],
        out["step_end"],
        out["msg_issue"],
        out["msg_port_in"],
        out["msg_port_out"],
        out["msg_dst_in"],
        out["msg_stack_in"],
        out["msg_done"],
    )
    wall = time.perf_counter() - started
    unfinished = np.nonzero(out["step_end"] < 0)[0]
    if len(unfinished):
        raise RuntimeError(
            f"the simulation stopped with {len(unfinished)} steps unfinished (first: step "
            f"{unfinished[0]}); the plan deadlocks in this model"
        )
    return Trace(
        lowered=lowered,
        events=int(events),
        wall_s=wall,
        res_busy=rows[:, 5] * rows[:, 1],  # every flit holds a resource for its occupancy
        res_flits=rows[:, 5].copy(),
        res_wait_max=rows[:, 6].copy(),
        **out,
    )

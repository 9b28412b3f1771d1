"""The packet engine's result tables: a run's trace as a ``SimResult``."""

from __future__ import annotations

import numpy as np

from nunasim.engine.kernel.kinds import STORE
from nunasim.engine.lazy_table import Columns
from nunasim.engine.packet.engine import Trace
from nunasim.engine.result import (
    RunInfo,
    SimResult,
    deliveries,
    gpu_completions,
    resource_identity,
    store_table,
)


def build_result(
    trace: Trace, lower_bound_ps: int, l1_ps: int, info: RunInfo | None = None
) -> SimResult:
    lo = trace.lowered
    stores = np.nonzero(lo.msg_kind == STORE)[0]
    res = lo.resources
    issue, done = trace.msg_issue[stores], trace.msg_done[stores]
    inject = issue + l1_ps
    table = store_table(
        lo,
        stores,
        {
            "issue_ps": issue,
            "done_ps": done,
            "latency_ps": done - inject,
            "l1": np.full(len(stores), l1_ps),
            "src_noc": trace.msg_port_in[stores] - inject,
            "port": trace.msg_port_out[stores] - trace.msg_port_in[stores],
            "plane": trace.msg_dst_in[stores] - trace.msg_port_out[stores],
            "dst_noc": trace.msg_stack_in[stores] - trace.msg_dst_in[stores],
            "memory": done - trace.msg_stack_in[stores],
        },
    )
    collective = ~lo.step_background
    completion = int(trace.step_end[collective].max()) if collective.any() else 0
    used = np.nonzero(trace.res_flits)[0]
    span = max(completion, 1)
    resources: Columns = {
        **resource_identity(lo, used),
        "flits": trace.res_flits[used],
        "busy_ps": trace.res_busy[used],
        "utilisation": trace.res_busy[used] / span,
        "max_wait_ps": trace.res_wait_max[used],
        "peak_queue": trace.res_wait_max[used] // np.maximum(res.occ[used], 1) + 1,
    }
    delivered, data_delivered, stack_bytes = deliveries(lo, trace.msg_done >= 0)
    return SimResult(
        completion_ps=completion,
        gpu_completion_ps=gpu_completions(lo, trace.step_end),
        stores=table,
        resources=resources,
        messages=lo.messages,
        events=trace.events,
        wall_s=trace.wall_s,
        bytes_delivered=delivered,
        data_bytes_delivered=data_delivered,
        lower_bound_ps=lower_bound_ps,
        info=info,
        stack_bytes=stack_bytes,
    )

"""The analytic engine: a run's lower bound as its answer, in the time lowering takes.

Nothing is simulated: the completion time is the bound no run beats (the larger of the
zero-load critical path and the busiest resource's serialised flits), each GPU's completion
its own zero-load critical path, each store its zero-load one-way latency, and each
resource the flits the run sends through it. No queue is modelled, so the percentiles of
store latency are those of the zero-load latencies, and waits and queues are NaN. It is
never picked by ``auto`` (its answer is a bound, not a run); ask for it by name to rank
many configurations before simulating the best.
"""

from __future__ import annotations

import time

import numpy as np

from nunasim.collectives.plan import Plan
from nunasim.engine.analytic.bound import lower_bound_ps, route_latency_ps, step_ends_ps
from nunasim.engine.base import Job, PreparedRun
from nunasim.engine.kernel.kinds import STORE
from nunasim.engine.lazy_table import Columns
from nunasim.engine.lowering.admission import admit, packet_lines
from nunasim.engine.lowering.lower import Lowered, lower
from nunasim.engine.result import (
    SimResult,
    deliveries,
    gpu_completions,
    resource_identity,
    store_table,
)
from nunasim.hardware import Socket


class AnalyticEngine:
    """The bound of ``nunasim.engine.analytic.bound`` with the packet engine's tables."""

    name = "analytic"
    revision = 0
    background = True
    auto_messages: int | None = None  # a bound, not a run: only by name

    def admit(self, plan: Plan, chunk_bytes: int, socket: Socket) -> None:
        """Refuse what lowering cannot hold (it lowers as the packet engine does)."""
        admit(plan, chunk_bytes, socket.line_bytes, None, socket.page_bytes)

    def messages(self, plan: Plan, chunk_bytes: int, line_bytes: int) -> int:
        """The lines lowering makes (it never takes part in ``auto``)."""
        return packet_lines(plan, chunk_bytes, line_bytes)

    def prepare(self, job: Job) -> PreparedRun:
        """Lower the job and work out its bound, which is also its result."""
        started = time.perf_counter()
        lowered = lower(job.pod, job.plan, job.placement, job.dtype, job.background)
        bound = lower_bound_ps(lowered)
        result = zero_load_result(lowered, bound, job.pod.socket.l1_latency_ps)
        result = result.replaced(
            info=job.info,
            engine=self.name,
            engine_revision=self.revision,
            wall_s=time.perf_counter() - started,
        )

        def run(deadline_ps: int | None) -> SimResult | None:
            return None if deadline_ps is not None and bound > deadline_ps else result

        return PreparedRun(bound, run)


def zero_load_result(lowered: Lowered, completion_ps: int, l1_ps: int) -> SimResult:
    """A ``SimResult`` of ``lowered`` completing at ``completion_ps`` with nothing queued:
    zero-load store latencies, every GPU's zero-load critical path, every resource's flits."""
    lo = lowered
    stores = np.nonzero(lo.msg_kind == STORE)[0]
    missing = np.full(len(stores), np.nan)
    table = store_table(
        lo,
        stores,
        {
            "issue_ps": missing,
            "done_ps": missing,
            "latency_ps": route_latency_ps(lo)[stores] - l1_ps,
            "l1": np.full(len(stores), l1_ps),
            **{part: missing for part in ("src_noc", "port", "plane", "dst_noc", "memory")},
        },
    )
    res = lo.resources
    flits = np.bincount(lo.route, minlength=len(res.occ))
    used = np.nonzero(flits)[0]
    busy = flits[used] * res.occ[used]
    resources: Columns = {
        **resource_identity(lo, used),
        "flits": flits[used],
        "busy_ps": busy,
        "utilisation": busy / max(completion_ps, 1),
        "max_wait_ps": np.full(len(used), np.nan),
        "peak_queue": np.full(len(used), np.nan),
    }
    delivered, data_delivered, stack_bytes = deliveries(lo, np.ones(lo.messages, dtype=bool))
    return SimResult(
        completion_ps=completion_ps,
        gpu_completion_ps=gpu_completions(lo, step_ends_ps(lo)),
        stores=table,
        resources=resources,
        messages=lo.messages,
        events=0,
        wall_s=0.0,
        bytes_delivered=delivered,
        lower_bound_ps=completion_ps,
        data_bytes_delivered=data_delivered,
        stack_bytes=stack_bytes,
    )


ANALYTIC = AnalyticEngine()

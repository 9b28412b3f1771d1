"""A toy engine written the way a user would add one: a class with the ``Engine``
interface, built on the public lowering and analytic modules, registered at run time.

Its model: data moves as the analytic bound says (the larger of the zero-load critical path
and the busiest resource), and the pod's compute (every reduction of a line, every step
that only computes) runs on one unit after it, overlapping nothing. A pessimistic model,
but a model: it conserves bytes, never beats the bound, is exact at zero load (a store
computes nothing) and slows down with a slower plane.
"""

from __future__ import annotations

from nunasim.engine.analytic.backend import zero_load_result
from nunasim.engine.analytic.bound import lower_bound_ps
from nunasim.engine.base import Job, PreparedRun
from nunasim.engine.lowering.admission import admit, packet_lines
from nunasim.engine.lowering.lower import lower


class SerialEngine:
    name = "toy-serial"
    revision = 1
    background = False
    auto_messages = 1_000  # auto may take it for tiny runs when it is registered first

    def admit(self, plan, chunk_bytes, socket):
        admit(plan, chunk_bytes, socket.line_bytes, None, socket.page_bytes)

    def messages(self, plan, chunk_bytes, line_bytes):
        return packet_lines(plan, chunk_bytes, line_bytes)

    def prepare(self, job: Job) -> PreparedRun:
        lowered = lower(job.pod, job.plan, job.placement, job.dtype)
        bound = lower_bound_ps(lowered)
        compute = int(lowered.lineop_compute_ps.sum() + lowered.step_compute_ps.sum())
        completion = bound + compute
        result = zero_load_result(lowered, completion, job.pod.socket.l1_latency_ps)
        result = result.replaced(
            lower_bound_ps=bound,
            info=job.info,
            engine=self.name,
            engine_revision=self.revision,
        )

        def run(deadline_ps):
            return None if deadline_ps is not None and completion > deadline_ps else result

        return PreparedRun(bound, run)

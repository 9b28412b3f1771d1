"""The flow engine as an ``Engine``: transfers as fluid flows, memory flat in the size.

``auto`` takes it for every run the packet engine's message limit leaves to it. Its
compiled modules are imported when a run is admitted or prepared, not when it is looked
up: they cost a packet run address space that a ``ulimit -v`` budget counts.
"""

from __future__ import annotations

from nunasim.collectives.plan import Plan
from nunasim.engine.base import Job, PreparedRun
from nunasim.engine.lowering.admission import admit_pages, packet_lines
from nunasim.engine.result import SimResult
from nunasim.errors import ConfigError
from nunasim.hardware import Socket
from nunasim.units import format_time

# Its model changes apart from the shared one. 1: a step's fetches and deliveries overlap
# when its window holds them all; a delivery's last line takes its lines' mean trip.
REVISION = 1
ANY_SIZE = 1 << 62  # auto's limit for it: every run


class FlowEngine:
    """Max-min fair flows over the same resources the packet engine serves flits on."""

    name = "flow"
    revision = REVISION
    background = False
    screens = True  # its prepared runs have a screen (``PreparedRun.screen``)
    auto_messages: int | None = ANY_SIZE

    def admit(self, plan: Plan, chunk_bytes: int, socket: Socket) -> None:
        """Refuse a run of more lines than it counts, or pages beyond the page tables."""
        from nunasim.engine.flow.engine import admit_flow

        admit_flow(plan, chunk_bytes, socket.line_bytes)
        admit_pages(plan, chunk_bytes, socket.page_bytes)

    def messages(self, plan: Plan, chunk_bytes: int, line_bytes: int) -> int:
        """The lines the run moves, as the packet engine would make them (its flags aside:
        a flow run is never chosen or refused by them)."""
        return packet_lines(plan, chunk_bytes, line_bytes)

    def prepare(self, job: Job) -> PreparedRun:
        """Work out the job's demands and step graph, and its lower bound."""
        from nunasim.engine.flow.engine import FlowRun
        from nunasim.engine.kernel.heap import TIME_LIMIT_PS

        flow = FlowRun(job.pod, job.plan, job.placement, job.dtype)
        # Its events share the packet engine's heap, and so its time range.
        if flow.lower_bound_ps >= TIME_LIMIT_PS:
            raise ConfigError(
                f"this run takes at least {format_time(flow.lower_bound_ps)} of simulated "
                f"time, more than the flow engine's {format_time(TIME_LIMIT_PS)}: a smaller "
                "collective or faster hardware (the slowest resource sets the bound)"
            )

        def run(deadline_ps: int | None) -> SimResult | None:
            result = flow.run(deadline_ps)
            if result is None:
                return None
            return result.replaced(
                info=job.info,
                engine=self.name,
                engine_revision=self.revision,
                stack_bytes=flow.demands.landed.astype("int64"),
            )

        return PreparedRun(flow.lower_bound_ps, run, screen=flow.screen)


FLOW = FlowEngine()

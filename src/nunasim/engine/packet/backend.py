"""The packet engine as an ``Engine``: one event per flit per resource, the reference model.

``auto`` takes it for a run of at most ``AUTO_MESSAGES`` messages (about 50 M events: a
minute and a couple of GB on one core), and for any run with a background GEMM, which only
it models.
"""

from __future__ import annotations

from nunasim.collectives.plan import Plan
from nunasim.engine.analytic.bound import bounds_ps
from nunasim.engine.base import Job, PreparedRun
from nunasim.engine.kernel.heap import TIME_LIMIT_PS
from nunasim.engine.lowering.admission import admit, flag_messages, packet_lines
from nunasim.engine.lowering.lower import lower
from nunasim.engine.packet.engine import simulate
from nunasim.engine.packet.tables import build_result
from nunasim.engine.result import SimResult
from nunasim.errors import ConfigError
from nunasim.hardware import Socket
from nunasim.units import format_time

AUTO_MESSAGES = 4_000_000


class PacketEngine:
    """Discrete events on every link, port, plane output, stack and NoC channel."""

    name = "packet"
    revision = 0  # its results change only with the shared model's revision
    background = True
    auto_messages: int | None = AUTO_MESSAGES

    def admit(self, plan: Plan, chunk_bytes: int, socket: Socket) -> None:
        """Refuse a run whose arrays would not fit the memory budget."""
        admit(plan, chunk_bytes, socket.line_bytes, None, socket.page_bytes)

    def messages(self, plan: Plan, chunk_bytes: int, line_bytes: int) -> int:
        """The lines lowering makes, and its flags when the lines alone are within the auto
        limit (counting flags loops over every send: about 1 s on a 64-GPU plan)."""
        lines = packet_lines(plan, chunk_bytes, line_bytes)
        return lines if lines > AUTO_MESSAGES else lines + flag_messages(plan)

    def prepare(self, job: Job) -> PreparedRun:
        """Lower the job and work out its analytic bound (and the core's window bound, which
        a search may skip by); refuse a run the event keys cannot time (beyond
        ``TIME_LIMIT_PS`` of simulated time)."""
        pod = job.pod
        lowered = lower(pod, job.plan, job.placement, job.dtype, job.background)
        bound, window_bound = bounds_ps(lowered)
        if bound >= TIME_LIMIT_PS:
            raise ConfigError(
                f"this run takes at least {format_time(bound)} of simulated time, more than "
                f"the packet engine's {format_time(TIME_LIMIT_PS)}: a smaller collective or "
                "faster hardware (the slowest resource sets the bound)"
            )
        l1_ps = pod.socket.l1_latency_ps

        def run(deadline_ps: int | None) -> SimResult | None:
            trace = simulate(lowered, deadline_ps)
            if trace is None:
                return None
            result = build_result(trace, bound, l1_ps, job.info)
            return result.replaced(engine=self.name, engine_revision=self.revision)

        return PreparedRun(bound, run, skip_bound_ps=window_bound)


PACKET = PacketEngine()

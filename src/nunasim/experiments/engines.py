"""Which engine a sweep point may run on, decided from counts, for its cache key: a point
that can only run on the packet engine keeps its cached result when only the flow
engine's model changes (``nunasim.engine.FLOW_REVISION``).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from nunasim.collectives.builtins import builtin_plan, is_builtin_name
from nunasim.collectives.plan import Plan
from nunasim.engine.admission import packet_lines
from nunasim.experiments.tbsearch import MAX_THREADBLOCKS
from nunasim.io.plans import load_plan
from nunasim.mapping.accesses import plan_accesses
from nunasim.scenario import AUTO_PACKET_MESSAGES, Scenario

if TYPE_CHECKING:
    from nunasim.hardware import Preset


def may_run_flow(point: Any, preset: Preset) -> bool:
    """Whether any run of ``point`` (a sweep ``Point``: its own, or each of its threadblock
    search's) may take the flow engine."""
    if point.engine != "auto":
        return point.engine == "flow"
    if point.gemm_tiles:  # auto keeps a run with a background GEMM on the packet engine
        return False
    if point.threadblocks != "auto":
        plan = _plan(point.plan, point.gpus, point.threadblocks)
        return Scenario(preset, plan, point.size, "UA").chosen_engine == "flow"
    return search_messages_bound(_plan(point.plan, point.gpus, None), point.size, preset) > (
        AUTO_PACKET_MESSAGES
    )


def search_messages_bound(plan: Plan, size: int, preset: Preset) -> int:
    """No run of a threadblock search from ``plan`` (one threadblock per peer) makes more
    messages than this. Its plans split the same data over ``factor`` times as many
    threadblocks at most: each of their chunk accesses adds at most one line to the data's
    (a part-filled last line), and each transfer one flag."""
    lines = packet_lines(plan, plan.chunk_bytes(size), preset.socket.line_bytes)
    per_gpu = max(len(program.threadblocks) for program in plan.gpus)
    factor = -(-MAX_THREADBLOCKS // per_gpu)
    accesses = int(plan_accesses(plan).count.sum())
    return lines + (accesses + len(plan.transfers)) * factor


def _plan(name: str, gpus: int | None, threadblocks: int | None) -> Plan:
    return _builtin(name, gpus, threadblocks) if is_builtin_name(name) else load_plan(name)


@cache  # a sweep's points share a handful of plans
def _builtin(name: str, gpus: int | None, threadblocks: int | None) -> Plan:
    return builtin_plan(name, gpus=gpus, tbs=threadblocks)

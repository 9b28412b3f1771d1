"""Which engines a sweep point may run on, decided from counts, for its cache key: a point
that can only run on the packet engine keeps its cached result when only the flow
engine's model changes (its ``revision``).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from nunasim.collectives.builtins import builtin_plan, is_builtin_name
from nunasim.collectives.plan import Plan
from nunasim.engine.base import AUTO, ENGINES, Engine
from nunasim.engine.lowering.admission import packet_lines
from nunasim.experiments.tbsearch import SEARCH_MAX_THREADBLOCKS_PER_GPU
from nunasim.io.plans import load_plan
from nunasim.mapping.accesses import plan_accesses

if TYPE_CHECKING:
    from nunasim.hardware import Preset


def point_engines(point: Any, preset: Preset) -> tuple[Engine, ...]:
    """The engines any run of ``point`` (a sweep ``Point``: its own, or each of its
    threadblock search's) may take, in the registry's order."""
    if point.engine != AUTO:
        return (ENGINES[point.engine],)
    background = point.gemm_tiles > 0
    line_bytes = preset.socket.line_bytes
    if point.threadblocks != "auto":
        plan = _plan(point.plan, point.gpus, point.threadblocks)
        return (ENGINES.choose(AUTO, plan, plan.chunk_bytes(point.size), line_bytes, background),)
    # A search's runs make at most ``search_messages_bound`` messages: each engine ``auto``
    # tries before the one that takes that many may take one of its smaller runs.
    bound = search_messages_bound(_plan(point.plan, point.gpus, None), point.size, preset)
    taken: list[Engine] = []
    for name in ENGINES:
        engine = ENGINES[name]
        if engine.auto_messages is None or (background and not engine.background):
            continue
        taken.append(engine)
        if background or bound <= engine.auto_messages:
            break
    return tuple(taken)


def search_messages_bound(plan: Plan, size: int, preset: Preset) -> int:
    """No run of a threadblock search from ``plan`` (one threadblock per peer) makes more
    messages than this. Its plans split the same data over ``factor`` times as many
    threadblocks at most: each of their chunk accesses adds at most one line to the data's
    (a part-filled last line), and each transfer one flag."""
    lines = packet_lines(plan, plan.chunk_bytes(size), preset.socket.line_bytes)
    per_gpu = max(len(program.threadblocks) for program in plan.gpus)
    factor = -(-SEARCH_MAX_THREADBLOCKS_PER_GPU // per_gpu)
    accesses = int(plan_accesses(plan).count.sum())
    return lines + (accesses + len(plan.transfers)) * factor


def point_plan(point: Any) -> Plan:
    """The plan of a sweep point (of a search, its plan at one threadblock per peer: every
    count's has the same transfers' protocols)."""
    count = point.threadblocks if isinstance(point.threadblocks, int) else None
    return _plan(point.plan, point.gpus, count)


def _plan(name: str, gpus: int | None, threadblocks: int | None) -> Plan:
    return _builtin(name, gpus, threadblocks) if is_builtin_name(name) else load_plan(name)


@cache  # a sweep's points share a handful of plans
def _builtin(name: str, gpus: int | None, threadblocks: int | None) -> Plan:
    return builtin_plan(name, gpus=gpus, tbs=threadblocks)
